package retry

import (
	"context"
)

// Retry calls fn until it succeeds, waiting the delays of s between attempts,
// and returns fn's value and a nil error on success.
//
// # Giving up
//
// The first attempt is made at once. After a failure (an error, or a value
// that IfValue rejects), Retry stops and returns the error as it is when the
// error is Permanent, when a RetryAfter or RetryAt pushback is negative, or
// when an If predicate rejects it; otherwise it takes the next delay of s,
// waits on the clock (see WithClock) and tries again. It gives up with an
// *Error that unwraps to the reason and to the last error, and returns the
// last attempt's value, when
//   - s has no delay left, or a MaxRetriesIf limit is reached: ErrExhausted;
//   - ctx is done: context.Cause(ctx), such as context.Canceled;
//   - the next wait would end after ctx's deadline: context.DeadlineExceeded,
//     at once, without waiting in vain;
//   - the next wait would end past MaxElapsed's limit: ErrMaxElapsed, at once;
//   - a Budget refuses the retry: ErrBudgetExhausted;
//   - a Throttle or a Breaker (see WithThrottle, WithBreaker) does not let
//     an attempt through: ErrThrottled or ErrBreakerOpen, at once, taking no Budget
//     token; before the first attempt, the *Error has no attempts and no last
//     error. A Breaker that will still be open when the next wait ends gives
//     up before the wait.
//
// Retry checks ctx before every attempt and never calls fn with a done
// context; if ctx is done before the first attempt it returns the zero T and
// an *Error with no attempts. A panic in fn propagates to the caller.
//
// # Schedules
//
// Retry draws the delays of s one by one, in its own loop, when s is made of
// this package's sources and combinators only. Any other Schedule (written by
// hand, or a chain with one in it) it ranges once per call that retries, by
// calling it with a yield function, and a negative delay counts as 0. s must
// keep the iterator contract (never call yield after it returned false or
// after s returned), as for any range loop: the yield function Retry hands s
// is valid for that one call only, and panics if called after returning false
// or after the call ended, without affecting any other call. Either way Retry
// keeps only the last error.
//
// # Allocations
//
// Retry allocates nothing of its own when the first attempt succeeds. A call
// that retries on a schedule of this package allocates only the real clock's
// timer (one per call that waits, reset between waits), the contexts of
// AttemptTimeout and, with OnRetry, a 24-byte record of when it started. On
// any other schedule, or with OnDone, MaxElapsed, IfValue or MaxRetriesIf, it
// also allocates its state and yield function, and two objects per run of
// each combinator around a hand-written schedule. None of them is reused by
// another call. fn itself is kept while the call runs, so a closure passed as
// fn is allocated by its caller.
//
// # Panics
//
// Retry panics if s or fn is nil, before anything else, even if ctx is done,
// if an IfValue or OnDiscard option's function does not take a T, and if given
// an OnHedgeDone.
func Retry[T any](ctx context.Context, s Schedule, fn func(context.Context) (T, error), opts ...Option) (T, error) {
	// Retry is small enough to be inlined, so that it adds no frame of its
	// own to the stack of a call that waits: retrying checks s, and Retry's
	// fn. (Do is not inlined: see there.)
	return retrying(ctx, s, fn, nil, opts)
}

// Do is Retry for functions that return only an error.
//
// Do panics if s or fn is nil, before anything else, even if ctx is done,
// and if given an IfValue or an OnDiscard, which need a value, or an
// OnHedgeDone.
//
// Do is never inlined. Inlined in another package, its body would call
// retrying[struct{}], an instantiation this package made, whose escape
// facts that package's compiler does not have (golang.org/issue/79592): it
// would assume that opts escape, and every call with an option would
// allocate its slice (64 B), as TestAllocations found from outside. Its
// frame costs a waiting call 88 bytes of stack (TestParkedStack).
//
//go:noinline
func Do(ctx context.Context, s Schedule, fn func(context.Context) error, opts ...Option) error {
	if fn == nil {
		panic("retry: Do: nil function")
	}
	_, err := retrying[struct{}](ctx, s, nil, fn, opts)
	return err
}
