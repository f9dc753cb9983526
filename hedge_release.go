package retry

// The end of a Hedge call: it stops its attempts, and releases the losers'
// values (OnDiscard) as their goroutines finish.

import (
	"context"
	"runtime"
)

// drop releases a value nobody will read; its outcome counts for neither
// in the call's gate (Hedge cancelled the attempt, or the caller did).
func (h *hedge[T]) drop(o outcome[T]) {
	h.gate.abort(&o.p)
	if o.success() && h.release != nil {
		h.release(o.v)
	}
}

// drain waits, after the schedule ended, for the attempts outstanding.
func (h *hedge[T]) drain() {
	for {
		for {
			o, ok := h.next()
			if !ok {
				break
			}
			if h.handle(o); h.done {
				return
			}
		}
		switch {
		case h.ctx.Err() != nil: // checked after the outcomes, as in wait
			h.giveUp(context.Cause(h.ctx))
			return
		case h.outstanding == 0 && h.stopped:
			h.finishWith(h.x.stopV, h.x.stopErr, ErrHedgeLost)
			return
		case h.outstanding == 0 && h.blocked != nil:
			h.giveUp(h.blocked)
			return
		case h.outstanding == 0 && h.refused:
			h.giveUp(ErrBudgetExhausted)
			return
		case h.outstanding == 0 && h.expired:
			h.giveUp(ErrMaxElapsed)
			return
		case h.outstanding == 0:
			h.giveUp(ErrExhausted)
			return
		}
		h.block()
	}
}

// giveUp ends the call with the last failure and reason. The *Error counts
// the calls of fn that began, not the attempts started: an attempt whose
// goroutine found the call over did not call fn.
func (h *hedge[T]) giveUp(reason error) {
	cause := ErrHedgeLost
	if h.ctx.Err() != nil {
		cause = context.Cause(h.ctx)
	}
	if h.cfg.hasDone || h.reports {
		h.x.reason = reason
	}
	calls := h.end(cause)
	h.v, h.err, h.done = h.lastV, newError(calls, h.last, reason), true
}

// finishWith decides the call's result and cancels the attempts with cause.
func (h *hedge[T]) finishWith(v T, err error, cause error) {
	h.v, h.err, h.done = v, err, true
	h.end(cause)
}

// end closes the call, if next has not, cancels the attempts and returns
// the number of calls of fn that began.
func (h *hedge[T]) end(cause error) int {
	if !h.over {
		h.mu.Lock()
		h.closeLocked()
		h.mu.Unlock()
	}
	h.cancel(cause)
	return h.calls
}

// closeLocked, with mu held, closes the call: every later outcome is
// dropped by the attempt that delivers it, so pending holds for good those
// delivered and not handled, which finish drops, and calls the calls of fn
// that began.
func (h *hedge[T]) closeLocked() {
	h.over = true
}

// finish runs when Hedge returns, or panics: it ends the call if nothing
// did, stops the timer and drops what was delivered and not handled, then
// raises the first panic or runtime.Goexit among it, if any, once every
// value among it has been dropped.
func (h *hedge[T]) finish() {
	h.closeYield()
	if !h.done { // a panic or runtime.Goexit ends the call
		cause := ErrHedgeLost
		if h.ctx.Err() != nil {
			cause = context.Cause(h.ctx)
		}
		h.end(cause)
	}
	if h.timer != nil {
		h.timer.Stop()
	}
	if h.x != nil {
		h.x.opts = nil
	}
	left := h.pending // the call is over (see closeLocked)
	h.pending = nil
	raise := -1
	for i, o := range left {
		if o.ended != 0 {
			h.gate.abort(&o.p)
			if raise < 0 {
				raise = i
			}
			continue
		}
		h.drop(o)
	}
	if raise >= 0 {
		if left[raise].ended == endPanic {
			panic(left[raise].panic)
		}
		runtime.Goexit()
	}
}
