package retry

import (
	"context"
	"time"
)

// The first attempt of a call whose only options are WithThrottle,
// WithBreaker, WithLimiter and WithClock: the common way to guard a
// dependency. Such a
// call needs no config for its first attempt (no budget to credit, no
// start time to take, no attempt timeout, nothing to observe), so it asks
// its gate and makes the attempt straight away, and builds the config only
// if the attempt fails and the call goes on through the general path. It
// makes exactly the decisions generalCall would: TestGatedCall compares
// them.

// gateOf returns the gate of opts, and whether opts hold nothing but
// WithThrottle, WithBreaker, WithLimiter and WithClock options (a later one
// of a kind replacing an earlier one, as in newConfig) with a gate to ask.
func gateOf(opts []Option) (gate, bool) {
	var g gate
	for i := range opts {
		switch o := &opts[i]; o.kind {
		case throttleOption:
			g.t = o.ref.(*Throttle)
		case breakerOption:
			g.b = o.ref.(*Breaker)
		case limiterOption:
			g.l = o.ref.(*Limiter)
		case clockOption, noOption:
		default:
			return gate{}, false
		}
	}
	return g, g.on()
}

// gatedCall is generalCall for a call whose options gateOf accepted, g
// being their gate.
func gatedCall[T any](ctx context.Context, s Schedule, fn func(context.Context) (T, error), fnErr func(context.Context) error, opts []Option, g gate) (T, error) {
	var v T
	if ctx.Err() != nil {
		return v, doneBefore(ctx)
	}
	p, reason := g.enter(ctx)
	if reason != nil {
		return v, newError(0, nil, reason)
	}
	defer g.abort(&p) // fn panicked: its attempt counts for nothing
	var err error
	if fnErr != nil {
		err = fnErr(ctx)
	} else {
		v, err = fn(ctx)
	}
	if err == nil {
		g.leave(&p, accepted)
		return v, nil
	}
	cfg := newConfig(opts)
	return general(ctx, s, fn, fnErr, &cfg, opts, time.Time{}, v, err, false, &p)
}
