// Package retryconnect retries and hedges Connect RPCs (connectrpc.com/connect)
// with package retry's schedules, budgets, pushback rules and fake-clock
// testing.
//
//	policy := retry.Exponential(100 * time.Millisecond).Cap(2 * time.Second).FullJitter(nil).Take(4)
//	budget := retry.NewBudget(0.1, 10) // retries at most 10% of calls, plus 10
//	client := connect.NewClient[Req, Res](httpClient, url,
//		connect.WithIdempotency(connect.IdempotencyNoSideEffects),
//		connect.WithInterceptors(retryconnect.NewInterceptor(policy, retryconnect.With(retry.WithBudget(budget)))))
//
// # What is retried
//
// Unary calls that failed with connect.CodeUnavailable (Codes changes the
// set), on procedures whose idempotency level says they are safe to send
// twice: IdempotencyNoSideEffects or IdempotencyIdempotent, as set by
// connect.WithIdempotency or by the idempotency_level option of the method
// in the schema, which generated clients pass on (Procedures changes the
// rule). Never a Canceled or DeadlineExceeded error caused by the caller's
// own context, and nothing once it is done. A server can push back with
// PushbackKey, over the Connect, gRPC and gRPC-Web protocols alike. Streams
// are not retried (see NewInterceptor).
//
// # Hedging
//
// Hedge sends a unary request again when it has not been answered after a
// delay, takes the first success and cancels the rest (retry.Hedge). Each
// attempt has a request of its own, so Hedge wraps a call, not a client;
// with NewInterceptor on the client, hedged attempts of procedures that
// are not idempotent are refused before they are sent.
//
// # Testing
//
// Pass retry.WithClock(retry.NewFakeClock(t0)) through With: the waits
// between attempts, pushback included, take no real time, and
// FakeClock.Sleeps lists them.
package retryconnect
