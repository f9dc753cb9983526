package retry

import (
	"context"
	"errors"
)

// How a call's attempts hold a Limiter's permits (see WithLimiter): the
// gate takes one for each attempt, after its Throttle and Breaker let it
// through, and its outcome releases it.

// errNoPermit is acquire's reason when it may not wait and no permit is
// free: the hedge that asked is not sent.
var errNoPermit = errors.New("retry: no permit free for a hedge")

// acquire takes a permit of g's Limiter into p, waiting as Acquire does,
// or, with a nil ctx, only if one is free (errNoPermit if not); a permit
// free at once is timed from rd's reading of the real clock, if any (see
// reading). If there is none, it gives back what p holds (as counting for
// neither) and returns the reason.
func (g gate) acquire(ctx context.Context, p *pass, rd *reading) error {
	if g.l == nil {
		return nil
	}
	var lp Permit
	var err error
	if ctx == nil {
		var ok bool
		if lp, ok = g.l.tryAcquire(rd); !ok {
			err = errNoPermit
		}
	} else {
		lp, err = g.l.acquire(ctx, rd)
	}
	if err != nil {
		g.leave(p, neither)
		return err
	}
	p.lp = lp
	return nil
}

// permit takes a permit for the retry about to be made, after its wait; if
// there is none, the retry is not made (its Budget token goes back) and the
// call gives up, as it does when a Breaker is open. It reports whether the
// retry may be made.
func (l *loop[T]) permit() bool {
	if l.g.l == nil {
		return true
	}
	if err := l.g.acquire(l.ctx, &l.p, nil); err != nil {
		if l.cfg.budget != nil {
			l.cfg.budget.refund()
		}
		l.out, l.done = l.giveUp(err), true
		l.state.Store(yieldStopped)
		return false
	}
	return true
}

// permitCtx is the context a hedge's attempt waits for a permit with: the
// call's when no attempt is in flight (a retry, which waits as Retry's
// do), none otherwise (a hedge, not sent if no permit is free).
func (h *hedge[T]) permitCtx() context.Context {
	if h.outstanding == 0 {
		return h.ctx
	}
	return nil
}

// settle releases p as the verdict v says: a success for an answer, a
// failure for a failure the call would retry, no sample otherwise.
func (p Permit) settle(v verdict) {
	switch v {
	case accepted:
		p.Success()
	case failed:
		p.Failure()
	default:
		p.Drop()
	}
}
