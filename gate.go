package retry

import (
	"context"
	"time"
)

// gate is what a call's attempts ask of its Throttle, Breaker and Limiter
// (any may be nil).
type gate struct {
	t *Throttle
	b *Breaker
	l *Limiter
}

// pass is what an attempt that a gate let through reports its outcome
// with; the zero pass reports nothing.
type pass struct {
	tt throttleTicket
	bt breakerTicket
	lp Permit
}

// gate returns the gate of a call with config c.
func (c *config) gate() gate { return gate{t: c.throttle, b: c.breaker, l: c.limiter} }

// on reports whether g has anything to ask.
func (g gate) on() bool { return g.t != nil || g.b != nil || g.l != nil }

// enter asks whether an attempt may be made: a pass if so, or the reason to
// give up with. The Breaker asks first, so that the requests a Throttle
// counts while a Breaker is open do not make it reject the probes; an
// attempt the Throttle then rejects gives its Breaker slot back. The Limiter
// is asked last, waiting for a permit as its Acquire does (see acquire).
// The three share one reading of the real clock.
func (g gate) enter(ctx context.Context) (pass, error) {
	var rd reading
	var p pass
	if g.b != nil {
		var left time.Duration
		var ok bool
		if p.bt, left, ok = g.b.admit(&rd); !ok {
			return pass{}, openError(left)
		}
	}
	if g.t != nil {
		var ok bool
		if p.tt, ok = g.t.admit(&rd); !ok {
			if g.b != nil {
				g.b.report(p.bt, neither)
			}
			return pass{}, ErrThrottled
		}
	}
	if g.l != nil { // acquire is not inlined: no call without a Limiter
		if err := g.acquire(ctx, &p, &rd); err != nil {
			return pass{}, err
		}
	}
	return p, nil
}

// leave reports the outcome v of the attempt that got p, and clears p.
func (g gate) leave(p *pass, v verdict) {
	if g.t != nil {
		g.t.settle(p.tt, v)
	}
	if g.b != nil {
		g.b.report(p.bt, v)
	}
	if g.l != nil {
		p.lp.settle(v)
	}
	*p = pass{}
}

// leaveAfter reports the outcome of the attempt that got p, which failed
// with err (or whose value IfValue rejected, if err is nil); done reports
// whether the call ends on err without retrying it.
func (g gate) leaveAfter(p *pass, ctx context.Context, err error, done bool) {
	g.leave(p, verdictOf(ctx, err, done))
}

// abort reports the attempt that got p, if it has not reported yet, as
// counting for neither: fn panicked, or the call ended some other way
// without reporting it. A Breaker probe thus gives its slot back.
func (g gate) abort(p *pass) {
	if p.tt.ok || p.bt.ok || p.lp.l != nil {
		g.leave(p, neither)
	}
}

// openError is the reason of a call that a Breaker open for left more did
// not let through: ErrBreakerOpen, with left as a pushback for an outer Retry.
//
//go:noinline
func openError(left time.Duration) error {
	return &pushbackError{err: ErrBreakerOpen, delay: max(left, 0)}
}
