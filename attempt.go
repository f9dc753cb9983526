package retry

import (
	"context"
	"time"
)

// Attempt describes a failed attempt that is about to be retried; OnRetry
// hooks receive it before each wait.
type Attempt struct {
	// Number is the 1-based number of the attempt that just failed.
	Number int
	// Err is its error, without the Permanent, RetryAfter or RetryAt marker;
	// nil if it returned a value that IfValue rejected.
	Err error
	// Delay is the wait before the next attempt: the schedule's delay, or a
	// server's longer pushback (see RetryAfter).
	Delay time.Duration
	// Elapsed is the time since the first attempt started, on the Retry's
	// clock.
	Elapsed time.Duration
}

// Retry calls fn until it succeeds, waiting the delays of s between attempts,
// and returns fn's value and a nil error on success.
//
// The first attempt is made at once. After a failure (an error, or a value
// that IfValue rejects), Retry stops and returns the error as it is when the
// error is Permanent, when a RetryAfter or RetryAt pushback is negative, or
// when an If predicate rejects it; otherwise it takes the next delay of s,
// waits on the clock (see WithClock) and tries again. It gives up with an
// *Error that unwraps to the reason and to the last error when
//   - s has no delay left, or a MaxRetriesIf limit is reached: ErrExhausted;
//   - ctx is done: context.Cause(ctx), such as context.Canceled;
//   - the next wait would end after ctx's deadline: context.DeadlineExceeded,
//     at once, without waiting in vain;
//   - the next wait would end past MaxElapsed's limit: ErrMaxElapsed, at once;
//   - a Budget refuses the retry: ErrBudgetExhausted;
//   - a Throttle or a Breaker (see WithThrottle, WithBreaker) does not let
//     an attempt through: ErrThrottled or ErrOpen, at once, taking no
//     Budget token; before the first attempt, the *Error has no attempts
//     and no last error. A Breaker that will still be open when the next
//     wait ends gives up before the wait.
//
// On giving up, Retry returns the value of the last attempt along with the
// error. It checks ctx before every attempt and never calls fn with a done
// context; if ctx is done before the first attempt it returns the zero T and
// an *Error with no attempts. A panic in fn propagates to the caller.
//
// Retry draws the delays of s one by one, in its own loop, when s is made of
// this package's sources and combinators only. Any other Schedule (written
// by hand, or a chain with one in it) it ranges once per call that retries,
// by calling it with a yield function, and a negative delay counts as 0. s
// must keep the iterator contract (never call yield after it returned false
// or after s returned), as for any range loop: the yield function Retry
// hands s is valid for that one call only, and panics if called after
// returning false or after the call ended, without affecting any other
// call. Either way Retry keeps only the last error.
//
// Retry allocates nothing of its own when the first attempt succeeds. A call
// that retries on a schedule of this package allocates only the real clock's
// timer (one per call that waits, reset between waits), the contexts of
// AttemptTimeout and, with OnRetry, a 24-byte record of when it started. On
// any other schedule, or with OnDone, MaxElapsed, IfValue or MaxRetriesIf,
// it also allocates its state and yield function, and two objects per run
// of each combinator around a hand-written schedule. None of them is reused
// by another call. fn itself is kept while the call runs, so a closure
// passed as fn is allocated by its caller.
//
// Retry panics if s or fn is nil, before anything else, even if ctx is done,
// and if an IfValue option's function does not take a T.
func Retry[T any](ctx context.Context, s Schedule, fn func(context.Context) (T, error), opts ...Option) (T, error) {
	// Retry and Do are small enough to be inlined, so that they add no frame
	// of their own to the stack of a call that waits: retrying checks s, and
	// Retry's fn.
	return retrying(ctx, s, fn, nil, opts)
}

// Do is Retry for functions that return only an error.
//
// Do panics if s or fn is nil, before anything else, even if ctx is done,
// and if given an IfValue, which needs a value to judge.
func Do(ctx context.Context, s Schedule, fn func(context.Context) error, opts ...Option) error {
	if fn == nil {
		panic("retry: Do: nil function")
	}
	_, err := retrying[struct{}](ctx, s, nil, fn, opts)
	return err
}

// doneBefore is the error of a call whose context was done before the first
// attempt. It is never inlined, to keep its temporaries out of the flat
// loop's frame.
//
//go:noinline
func doneBefore(ctx context.Context) error {
	return newError(0, nil, context.Cause(ctx))
}

// attemptConfig is what making an attempt needs of a call's config: small,
// so that it passes in registers and takes little room in the frames below
// which fn runs.
type attemptConfig struct {
	timeout time.Duration // AttemptTimeout's; 0 for none
	latency *Latency      // Observe's
	clock   Clock         // nil: the real clock
}

// attempt returns what making an attempt needs of c.
func (c *config) attempt() attemptConfig {
	return attemptConfig{timeout: c.attemptTimeout, latency: c.latency, clock: c.clock}
}

func (a attemptConfig) now() time.Time {
	if a.clock == nil {
		return time.Now()
	}
	return a.clock.Now()
}

// observe records in a.latency the duration of an attempt that started at
// start and has just returned, unless ctx ended meanwhile.
func (a attemptConfig) observe(ctx context.Context, start time.Time) {
	if ctx.Err() == nil {
		a.latency.Record(a.now().Sub(start))
	}
}

// call makes one attempt, and records its duration for Observe. With a
// timeout, fn gets a context that ends after it, released as soon as fn
// returns; own reports that fn failed after that context, not ctx, ended.
func call[T any](ctx context.Context, fn func(context.Context) (T, error), a attemptConfig) (v T, err error, own bool) {
	var start time.Time
	if a.latency != nil {
		start = a.now()
	}
	if a.timeout == 0 {
		v, err = fn(ctx)
	} else {
		v, err, own = callTimeout(ctx, fn, a.timeout)
	}
	if a.latency != nil {
		a.observe(ctx, start)
	}
	return v, err, own
}

// callTimeout calls fn under a context that ends after timeout.
func callTimeout[T any](ctx context.Context, fn func(context.Context) (T, error), timeout time.Duration) (v T, err error, own bool) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err = fn(actx)
	return v, err, err != nil && actx.Err() != nil && ctx.Err() == nil
}

// callErr is call for Do's functions.
func callErr(ctx context.Context, fn func(context.Context) error, a attemptConfig) (err error, own bool) {
	var start time.Time
	if a.latency != nil {
		start = a.now()
	}
	if a.timeout == 0 {
		err = fn(ctx)
	} else {
		err, own = callErrTimeout(ctx, fn, a.timeout)
	}
	if a.latency != nil {
		a.observe(ctx, start)
	}
	return err, own
}

// callErrTimeout is callTimeout for Do's functions.
func callErrTimeout(ctx context.Context, fn func(context.Context) error, timeout time.Duration) (err error, own bool) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = fn(actx)
	return err, err != nil && actx.Err() != nil && ctx.Err() == nil
}
