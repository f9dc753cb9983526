// Package retry retries flaky calls the right way: backoff schedules you
// compose like iterators, a generic Retry that never outlives its caller's
// deadline, retry budgets, server pushback, and a fake clock that tests all of
// it in zero real time.
//
// # Schedules
//
// A Schedule is the sequence of delays between attempts, an
// iter.Seq[time.Duration]. Start from a source and refine it with methods:
//
//	var policy = retry.Exponential(100 * time.Millisecond). // 100ms, 200ms, 400ms, …
//		Cap(2 * time.Second).                                // never more than 2 s
//		FullJitter(nil).                                     // uniform in [0, d]: clients spread out
//		Take(5)                                              // 5 retries, so at most 6 attempts
//
// A Schedule is a value: every range over it is a fresh run, so one policy in a
// package variable serves every call and goroutine. The methods apply in the
// order written (Cap then FullJitter draws below the cap). Arithmetic
// saturates at the largest Duration instead of wrapping. Parse builds the same
// schedules from text for flags and configuration files.
//
// Why jitter: clients that fail together and retry on the same schedule
// retry together, in waves that knock a recovering service over again (the
// thundering herd). Exponential backoff spreads the waves out in time;
// jitter breaks the lockstep inside each wave.
//
// # Retrying
//
// Retry calls a function until it succeeds, waiting the schedule's delays in
// between; Do is the same for functions that return only an error:
//
//	user, err := retry.Retry(ctx, policy, func(ctx context.Context) (User, error) {
//		return client.GetUser(ctx, id)
//	}, retry.If(retry.IsTransient))
//
// Transient failures (timeouts, resets, 503s) heal; permanent ones (bad
// input, 404s) never do, and retrying them only burns capacity. Mark them
// with Permanent, or pass a classifier with If; IsTransient recognises the
// usual network failures. Only retry operations that are safe to repeat
// (idempotent), or make them so with an idempotency key.
//
// Retry checks the context before every attempt, and does not start a wait
// that would end after the context's deadline: it returns at once. When it
// gives up, it returns an *Error that matches both the reason
// (ErrExhausted, ErrMaxElapsed, ErrBudgetExhausted, or the context's error)
// and the last attempt's error with errors.Is.
//
// Options shape a call: IfValue retries on a value, not only an error (a
// job still pending); MaxRetriesIf bounds the retries after one kind of
// error within the schedule; MaxElapsed bounds the time a call spends
// retrying without cutting an attempt short; OnRetry sees every retry and
// OnDone how every call ended, for logs and metrics.
//
// # Protecting the dependency
//
// Retries multiply: three layers that each try three times send 27 calls to
// the bottom for one request. A Budget shared by all calls to a dependency
// caps retries to a fraction of requests (WithBudget). When the dependency
// itself is failing, a Throttle (WithThrottle) rejects attempts locally in
// proportion to how far they exceed what it answers, and a Breaker
// (WithBreaker) stops sending to it for a while once most attempts fail;
// with their defaults, both stop within seconds of its recovery. A server that says how
// long to wait (HTTP Retry-After, gRPC pushback) is heard through RetryAfter
// and RetryAt, bounded by MaxPushback: a longer wait ends the call with
// ErrPushbackTooLong. AttemptTimeout bounds each attempt.
// A Latency, fed by WithLatency, tracks a dependency's recent latencies, and its
// Quantile is a Schedule that follows them.
// The retryhttp package applies all of this to HTTP clients.
//
// # Hedging
//
// Retries fight failures; hedging fights slowness. Hedge starts an attempt
// and, while none has succeeded, another one each time a delay of its
// Schedule elapses, and returns the first success, cancelling the others:
//
//	lat := retry.NewLatency()
//	hedgeAfter := lat.Quantile(0.95).AtLeast(5 * time.Millisecond).Cap(time.Second).Take(1)
//	v, err := retry.Hedge(ctx, hedgeAfter, fn, retry.WithLatency(lat))
//
// hedges a call once it has been outstanding for longer than 95% of recent
// calls took: about 5% more calls to cut the tail. A Budget (WithBudget)
// caps the extra load; OnDiscard releases the values of attempts that lost.
//
// # Testing
//
// Code that retries is tested without waiting in either of two ways.
//
// Pass WithClock(NewFakeClock(t0)): Sleep advances the fake clock at once and
// records the wait, so FakeClock.Sleeps lists every wait Retry made, and a
// context deadline is tracked on the fake clock (a wait that would end after
// it is not made).
//
// Or run the code under testing/synctest, where the real clock is fake: time
// advances only when every goroutine in the bubble is blocked. Retry with the
// default clock then runs in fake time, and
// Retry(ctx, Exponential(time.Second).Take(3), fn) with fn always failing
// takes exactly 7 s of bubble time (1 s + 2 s + 4 s) and no real time. This
// also covers AttemptTimeout, whose contexts always use the real clock.
//
// # Options and entry points
//
// An option means something on every entry point that takes it; an entry
// point given one it refuses panics, with a message naming both, when the
// call is made (Retry, Do, Hedge) or when the adapter is built (retryhttp's
// NewTransport, NewClient and NewHedgingTransport). None is ignored:
//
//	option          Retry   Do      Hedge   NewTransport  NewHedging-
//	                                        NewClient     Transport
//	WithClock       yes     yes     yes     yes           yes
//	If              yes     yes     yes     yes           yes
//	OnRetry         yes     yes     yes (1) yes           yes (1)
//	OnDone          yes     yes     yes     yes           yes
//	OnHedgeDone     refused refused yes     refused       yes (2)
//	IfValue         yes     refused refused refused       refused
//	OnDiscard       yes (3) refused yes     refused       yes
//	MaxRetriesIf    yes     yes     yes (4) yes           yes (4)
//	MaxElapsed      yes     yes     yes (5) yes           yes (5)
//	MaxPushback     yes     yes     yes     yes           refused
//	AttemptTimeout  yes     yes     yes     yes           yes
//	WithLatency     yes     yes     yes     yes           yes
//	WithBudget      yes     yes     yes     yes           yes
//	WithThrottle    yes     yes     yes     yes           yes
//	WithBreaker     yes     yes     yes     yes           yes
//	WithLimiter     yes     yes     yes     yes           yes
//	WithLogger      yes     yes     yes     yes           yes
//
// On Hedge: (1) before each attempt after the first; (2) for the requests
// that race, not those sent once; (4) the (n+1)-th matching failure ends
// the call, as an If that rejects it would; (5) no attempt starts more than
// d after the first, those in flight finish, and the call gives up with
// ErrMaxElapsed if none succeeds. (3) With IfValue: each rejected value that
// the next attempt replaces. The refusals: Do has no value to judge or
// release; OnHedgeDone reports on a Hedge only (use OnDone); Hedge cannot
// judge values; a retryhttp Transport judges responses with ShouldRetry and
// closes those it does not return, and a race ignores Retry-After. The
// modules retrygrpc, retryconnect, retryotel and retrysql hand their options
// to Retry, Do or Hedge, whose refusals then apply at the call. The test that
// walks every option and entry point is TestOptionsByEntryPoint.
//
// # Concurrency and cost
//
// Schedules, Options, Budgets, Latencies and FakeClocks are safe for
// concurrent use.
// Success on the first attempt allocates nothing. A chain of this package's
// sources and combinators is folded into one flat description when it is
// built, and a call that retries on one draws its delays in its own loop: it
// allocates only the real clock's time.Timer (one per call that waits, reset
// between waits), the contexts of AttemptTimeout and, with OnRetry, a small
// record of when it started. A Schedule written by hand is ranged instead,
// with a yield function made for that call and relays made for each run of
// the combinators around it (two small allocations each), as are the calls
// with OnDone, MaxElapsed, IfValue or MaxRetriesIf. Nothing a call or a run
// of a schedule hands to user code is ever reused by another call: a yield
// function called after its run ended panics without touching any other
// call.
package retry
