// Package retrygrpc retries and hedges gRPC client calls with package
// retry's schedules, budgets, pushback rules and fake-clock testing, as
// client interceptors that follow gRFC A6 (gRPC's retry design).
//
//	policy := retry.Exponential(100 * time.Millisecond).Cap(2 * time.Second).FullJitter(nil).Take(4)
//	budget := retry.NewBudget(0.1, 10) // retries at most 10% of this target's calls, plus 10
//	conn, err := grpc.NewClient(target,
//		grpc.WithDisableRetry(), // one retry layer, not two
//		grpc.WithUnaryInterceptor(retrygrpc.UnaryClientInterceptor(policy, retrygrpc.With(retry.WithBudget(budget)))),
//		grpc.WithStreamInterceptor(retrygrpc.StreamClientInterceptor(policy, retrygrpc.With(retry.WithBudget(budget)))),
//		grpc.WithTransportCredentials(creds))
//
// # What is retried
//
// A status with codes.Unavailable, by default (Codes changes the set), on
// any method (Methods restricts them: exclude every method that is not safe
// to send twice). Never a Canceled or DeadlineExceeded status caused by the
// caller's own context, and nothing once that context is done. A server
// can push back (gRFC A6) with the trailer PushbackKey: a non-negative
// number of milliseconds is the wait before the next attempt, through
// retry.RetryAfter, so one longer than retry.MaxPushback, or that would end
// after the deadline, ends the call at once (retry.ErrPushbackTooLong); a
// negative or malformed value stops the retries. Every attempt after the first carries the header
// PreviousAttemptsKey with the number of attempts before it.
//
// Streams are retried only until they are committed: until the response
// headers or first response message arrive (see StreamClientInterceptor).
// The client messages sent before a failure are kept, up to ReplayLimit
// bytes, and sent again on the next attempt. A unary request larger than
// ReplayLimit is sent once and not retried, as grpc-go commits it; the
// hedging interceptor ignores ReplayLimit.
//
// An attempt cut short by retry.AttemptTimeout is retried whatever its
// code. It is judged timed out when its deadline has passed by the clock,
// as grpc-go judges it, since the server's reset at the deadline it was
// sent (grpc-timeout) often reaches the client before the attempt's
// context ends.
//
// # Hedging
//
// HedgeUnaryClientInterceptor sends a unary call again when it has not
// answered after a delay, takes the first success and cancels the rest
// (retry.Hedge, gRFC A6's hedging policy). A server's pushback delays the
// next hedge, or, negative, stops further hedges while those outstanding
// go on. Hedge only methods that are safe to receive several times, and
// give each method either retries or hedging.
//
// # Service config
//
// ParseServiceConfig reads the retryPolicy, hedgingPolicy and
// retryThrottling of a gRPC service config, with grpc-go's name matching
// and validation, and its ServiceConfig's interceptors apply them per
// method, with A6's backoff and token bucket (see ServiceConfig).
//
// # Budgets
//
// Pass retry.WithBudget through With. A Budget is shared by everything that
// holds it: give each interceptor its own for a budget per connection, or
// share one among the interceptors of the connections to one target for a
// budget per target (gRFC A6 throttles per target). See docs/GRPC.md
// ("Budgets and A6's retryThrottling") for how a Budget compares with it.
//
// # gRPC's own retries
//
// grpc-go retries by itself when the service config of a connection holds a
// retryPolicy (or a hedgingPolicy) for the method, and its retries happen
// inside each attempt of these interceptors, so the two would multiply:
// three attempts around three attempts make nine. Use one. With these
// interceptors, dial with grpc.WithDisableRetry(), which turns the service
// config's policies off and keeps only grpc-go's transparent retries, those
// of calls the server's application never saw.
//
// # The server's half
//
// UnaryServerInterceptor and StreamServerInterceptor admit a server's calls
// through a retryserver.Shedder, which sheds retries (PreviousAttemptsKey)
// first and refuses with codes.Unavailable and the pushback these client
// interceptors honour (docs/SERVER.md).
//
// # Testing
//
// Pass retry.WithClock(retry.NewFakeClock(t0)) through With: the waits
// between attempts, pushback included, take no real time, and
// FakeClock.Sleeps lists them. Or run the client under testing/synctest.
package retrygrpc
