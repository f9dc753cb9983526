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

// attempt makes one attempt with fn, or fnErr if set, and records its
// duration for WithLatency. With a timeout, the function gets a context
// that ends after it, released as soon as it returns; own reports that it
// failed after that context, not ctx, ended.
func attempt[T any](ctx context.Context, fn func(context.Context) (T, error), fnErr func(context.Context) error, a attemptConfig) (v T, err error, own bool) {
	var start time.Time
	if a.latency != nil {
		start = a.now()
	}
	switch {
	case a.timeout == 0 && fnErr != nil:
		err = fnErr(ctx)
	case a.timeout == 0:
		v, err = fn(ctx)
	default:
		v, err, own = callTimeout(ctx, fn, fnErr, a.timeout)
	}
	if a.latency != nil {
		a.observe(ctx, start)
	}
	return v, err, own
}

// callTimeout calls fn, or fnErr if set, under a context that ends after
// timeout.
func callTimeout[T any](ctx context.Context, fn func(context.Context) (T, error), fnErr func(context.Context) error, timeout time.Duration) (v T, err error, own bool) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if fnErr != nil {
		err = fnErr(actx)
	} else {
		v, err = fn(actx)
	}
	return v, err, err != nil && actx.Err() != nil && ctx.Err() == nil
}
