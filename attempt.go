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
//   - a Budget refuses the retry: ErrBudgetExhausted.
//
// On giving up, Retry returns the value of the last attempt along with the
// error. It checks ctx before every attempt and never calls fn with a done
// context; if ctx is done before the first attempt it returns the zero T and
// an *Error with no attempts. A panic in fn propagates to the caller.
//
// Retry ranges over s once per call that retries, by calling it with a yield
// function, and keeps only the last error. A negative delay from s counts as
// 0. s must keep the iterator contract (never call yield after it returned
// false or after s returned), as for any range loop: the yield function Retry
// hands s is valid for that one call only, and panics if called after
// returning false or after the call ended, without affecting any other call.
//
// Retry allocates nothing of its own when the first attempt succeeds. A call
// that retries allocates its state and its yield function, two allocations
// per run of each combinator in s, the real clock's timer (one per call that
// waits, reset between waits) and the contexts of AttemptTimeout; none of
// them is reused by another call. fn itself is kept while s runs, so a
// closure passed as fn is allocated by its caller.
//
// Retry panics if s or fn is nil, before anything else, even if ctx is done,
// and if an IfValue option's function does not take a T.
func Retry[T any](ctx context.Context, s Schedule, fn func(context.Context) (T, error), opts ...Option) (T, error) {
	mustSchedule("Retry", s)
	if fn == nil {
		panic("retry: Retry: nil function")
	}
	if len(opts) > 0 {
		return retryOptions(ctx, s, fn, opts)
	}
	if ctx.Err() != nil {
		var zero T
		return zero, doneBefore(ctx)
	}
	v, err := fn(ctx)
	if err == nil {
		return v, nil
	}
	return retryRest(ctx, s, fn, defaultConfig, nil, time.Time{}, v, err, false)
}

// retryOptions is Retry with options. It is a separate function so that a
// call without options does not pay for building a config.
func retryOptions[T any](ctx context.Context, s Schedule, fn func(context.Context) (T, error), opts []Option) (T, error) {
	cfg := newConfig(opts)
	if cfg.hasValue {
		checkValues[T]("Retry", opts)
	}
	if ctx.Err() != nil {
		var zero T
		err := doneBefore(ctx)
		if cfg.hasDone {
			cfg.done(opts, time.Time{}, 0, err, context.Cause(ctx))
		}
		return zero, err
	}
	start := cfg.begin()
	v, err, own := call(ctx, fn, &cfg)
	if err == nil && !(cfg.hasValue && rejected(opts, v)) {
		if cfg.hasDone {
			cfg.done(opts, start, 1, nil, nil)
		}
		return v, nil
	}
	return retryRest(ctx, s, fn, cfg, opts, start, v, err, own)
}

// retryRest continues a Retry whose first attempt failed with err, or
// returned a value v that IfValue rejected (err is then nil).
func retryRest[T any](ctx context.Context, s Schedule, fn func(context.Context) (T, error), cfg config, opts []Option, start time.Time, v T, err error, own bool) (T, error) {
	l := &loop[T]{v: v, fn: fn}
	l.init(ctx, cfg, opts, start)
	if cfg.hasValue {
		l.preds = valuePreds[T](opts)
	}
	out := l.run(s, err, own)
	if cfg.hasDone {
		cfg.done(opts, start, l.n, out, l.reason)
	}
	return l.v, out
}

// Do is Retry for functions that return only an error.
//
// Do panics if s or fn is nil, before anything else, even if ctx is done,
// and if given an IfValue, which needs a value to judge.
func Do(ctx context.Context, s Schedule, fn func(context.Context) error, opts ...Option) error {
	mustSchedule("Do", s)
	if fn == nil {
		panic("retry: Do: nil function")
	}
	if len(opts) > 0 {
		return doOptions(ctx, s, fn, opts)
	}
	if ctx.Err() != nil {
		return doneBefore(ctx)
	}
	if err := fn(ctx); err != nil {
		return doRest(ctx, s, fn, defaultConfig, nil, time.Time{}, err, false)
	}
	return nil
}

// doOptions is Do with options.
func doOptions(ctx context.Context, s Schedule, fn func(context.Context) error, opts []Option) error {
	cfg := newConfig(opts)
	mustNoValue("Do", &cfg)
	if ctx.Err() != nil {
		err := doneBefore(ctx)
		if cfg.hasDone {
			cfg.done(opts, time.Time{}, 0, err, context.Cause(ctx))
		}
		return err
	}
	start := cfg.begin()
	err, own := callErr(ctx, fn, &cfg)
	if err == nil {
		if cfg.hasDone {
			cfg.done(opts, start, 1, nil, nil)
		}
		return nil
	}
	return doRest(ctx, s, fn, cfg, opts, start, err, own)
}

// doRest continues a Do whose first attempt failed with err.
func doRest(ctx context.Context, s Schedule, fn func(context.Context) error, cfg config, opts []Option, start time.Time, err error, own bool) error {
	l := &loop[struct{}]{fnErr: fn}
	l.init(ctx, cfg, opts, start)
	out := l.run(s, err, own)
	if cfg.hasDone {
		cfg.done(opts, start, l.n, out, l.reason)
	}
	return out
}

// doneBefore is the error of a call whose context was done before the first
// attempt.
func doneBefore(ctx context.Context) error {
	return newError(0, nil, context.Cause(ctx))
}

// call makes one attempt, and records its duration for Observe. With a
// timeout, fn gets a context that ends after it, released as soon as fn
// returns; own reports that fn failed after that context, not ctx, ended.
func call[T any](ctx context.Context, fn func(context.Context) (T, error), c *config) (v T, err error, own bool) {
	var start time.Time
	if c.latency != nil {
		start = c.now()
	}
	if c.attemptTimeout == 0 {
		v, err = fn(ctx)
	} else {
		v, err, own = callTimeout(ctx, fn, c.attemptTimeout)
	}
	if c.latency != nil {
		c.observe(ctx, start)
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
func callErr(ctx context.Context, fn func(context.Context) error, c *config) (err error, own bool) {
	var start time.Time
	if c.latency != nil {
		start = c.now()
	}
	if c.attemptTimeout == 0 {
		err = fn(ctx)
	} else {
		err, own = callErrTimeout(ctx, fn, c.attemptTimeout)
	}
	if c.latency != nil {
		c.observe(ctx, start)
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
