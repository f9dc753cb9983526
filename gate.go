package retry

import (
	"context"
	"time"
)

// gate is what a call's attempts ask of its Throttle and Breaker (either
// may be nil), and the tickets of the attempt in flight.
type gate struct {
	t  *Throttle
	b  *Breaker
	tt throttleTicket
	bt breakerTicket
}

// on reports whether g has anything to ask.
func (g *gate) on() bool { return g.t != nil || g.b != nil }

// enter asks whether the next attempt may be made: nil if so, or the reason
// to give up with. The Breaker asks first, so that the requests a Throttle
// counts while a Breaker is open do not make it reject the probes; an
// attempt the Throttle then rejects gives its Breaker slot back.
func (g *gate) enter() error {
	if g.b != nil {
		var left time.Duration
		var ok bool
		if g.bt, left, ok = g.b.admit(); !ok {
			return openError(left)
		}
	}
	if g.t != nil {
		var ok bool
		if g.tt, ok = g.t.admit(); !ok {
			if g.b != nil {
				g.b.report(g.bt, neither)
				g.bt = breakerTicket{}
			}
			return ErrThrottled
		}
	}
	return nil
}

// leave reports the outcome of the attempt in flight.
func (g *gate) leave(v verdict) {
	if g.t != nil {
		g.t.settle(g.tt, v)
		g.tt = throttleTicket{}
	}
	if g.b != nil {
		g.b.report(g.bt, v)
		g.bt = breakerTicket{}
	}
}

// leaveAfter reports the outcome of the attempt in flight, which failed
// with err (or whose value IfValue rejected, if err is nil); done reports
// whether the call ends on err without retrying it.
func (g *gate) leaveAfter(ctx context.Context, err error, done bool) {
	g.leave(verdictOf(ctx, err, done))
}

// abort reports the attempt in flight, if any, as counting for neither:
// fn panicked, or the call ended some other way without reporting it. A
// Breaker probe thus gives its slot back.
func (g *gate) abort() {
	if g.tt.ok || g.bt.ok {
		g.leave(neither)
	}
}

// openError is the reason of a call that a Breaker open for left more did
// not let through: ErrOpen, with left as a pushback for an outer Retry.
//
//go:noinline
func openError(left time.Duration) error {
	return &pushbackError{err: ErrOpen, delay: max(left, 0)}
}
