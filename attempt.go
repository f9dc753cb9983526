package retry

import (
	"context"
	"time"
)

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
	latency *Latency      // WithLatency's
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

// call makes one attempt, and records its duration for WithLatency. With a
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

// attempt makes one attempt with fn, or fnErr if set.
func attempt[T any](ctx context.Context, fn func(context.Context) (T, error), fnErr func(context.Context) error, a attemptConfig) (v T, err error, own bool) {
	if fnErr != nil {
		err, own = callErr(ctx, fnErr, a)
		return v, err, own
	}
	return call(ctx, fn, a)
}
