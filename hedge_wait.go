package retry

// The waits of a Hedge call: stepping its schedule, and the timer that starts
// the next attempt unless an outcome arrives first.

import (
	"context"
	"time"
)

// step is the schedule's yield function: it waits d after the most recent
// attempt started, or less if an attempt fails first (or the failure's
// pushback), then starts the next attempt and asks for the next delay. It returns false once the call is
// decided or no more attempts may start.
func (h *hedge[T]) step(d time.Duration) (more bool) {
	if !h.state.CompareAndSwap(hedgeRunning, hedgeStepping) {
		panic("retry: Hedge: the schedule called yield after it returned false, after it returned, or concurrently")
	}
	defer h.stepped(&more)
	return h.wait(max(d, 0))
}

// iterate draws the delays of a built-in Schedule from its plan, as Retry's
// flat loop does, rather than range over it: no yield function to make,
// and no schedule code runs between the waits.
func (h *hedge[T]) iterate(p *plan) {
	var it planIter
	it.init(p)
	for {
		d, ok := it.next()
		if !ok || !h.wait(max(d, 0)) {
			return
		}
	}
}

// stepped ends a call of step that returns *more, or panics (*more is then
// false): the yield function may be called again only if *more. If
// closeYield abandoned this call meanwhile, it makes it return false and
// tells closeYield, which waits for it.
func (h *hedge[T]) stepped(more *bool) {
	next := hedgeEnded
	if *more {
		next = hedgeRunning
	}
	if h.state.CompareAndSwap(hedgeStepping, next) {
		return
	}
	*more = false
	h.state.Store(hedgeEnded)
	close(h.yielded)
}

// closeYield ends the yield function's validity once the schedule has
// returned or panicked. If the yield function is still running, which only
// a schedule that called it on another goroutine and did not wait for it
// can cause, closeYield makes it return false, waits for it and reports
// true: nothing of the call may run after Hedge.
func (h *hedge[T]) closeYield() bool {
	for {
		switch st := h.state.Load(); st {
		case hedgeStarting, hedgeRunning:
			if h.state.CompareAndSwap(st, hedgeEnded) {
				return false
			}
		case hedgeStepping:
			h.yielded = make(chan struct{})
			if h.state.CompareAndSwap(hedgeStepping, hedgeAbandoned) {
				h.mu.Lock()
				if h.interrupt != nil {
					h.interrupt()
				}
				h.mu.Unlock()
				h.signal()
				<-h.yielded
				return true
			}
		default:
			return false
		}
	}
}

// wait is step's work. A failure with a pushback makes it wait for the
// pushback, from then, instead of d; while it does, later failures do not
// start the next attempt early, and a later pushback starts the wait again.
func (h *hedge[T]) wait(d time.Duration) bool {
	armed := false
	wait := d         // what the sleep waits for: d, or a pushback
	var trigger error // the failure that calls for the next attempt once the pushback has elapsed
	for {
		for {
			o, ok := h.next()
			if !ok {
				break
			}
			hold, t := h.handle(o)
			if h.done {
				return false
			}
			switch {
			case t == nil:
			case hold > 0:
				wait, trigger, armed = hold, t, false
			case trigger == nil:
				if h.beyond(0) {
					// MaxElapsed: a failure after the limit starts
					// nothing (a wait was checked when it began).
					h.expired = true
					return false
				}
				return h.hedge(d, t)
			default:
				trigger = t // a pushback is being waited for
			}
		}
		if h.stopped {
			return false
		}
		// Only now, so that a success delivered before Hedge saw ctx end
		// still wins.
		if h.ctx.Err() != nil {
			h.giveUp(context.Cause(h.ctx))
			return false
		}
		if h.state.Load() == hedgeAbandoned {
			return false
		}
		if !armed && h.beyond(wait) {
			// No attempt may start when this wait ends: wait for the
			// attempts outstanding instead, whose failure may start one
			// in time, or give up if there are none.
			if h.outstanding == 0 {
				h.expired = true
				return false
			}
			h.block()
			continue
		}
		switch r, err := h.sleep(wait, &armed, trigger != nil); r {
		case slept:
			if trigger != nil {
				return h.hedge(wait, trigger)
			}
			return h.hedge(d, nil)
		case broken:
			h.giveUp(err)
			return false
		}
		// Woken, or ctx ended: handle what was delivered first.
	}
}

// The ways sleep ends.
const (
	woken  = iota // an attempt delivered an outcome
	slept         // the delay elapsed
	ended         // the caller's context ended
	broken        // a custom clock's Sleep failed
)

// sleep waits until d has elapsed since armed was last set (by sleep,
// once per step, and again for each pushback), an outcome is delivered, or
// the caller's context ends; pushback tells that d is a pushback's wait.
// With a FakeClock, or while hedgeMaxOutstanding attempts run, no delay
// elapses: only an outcome or the context's end can end the wait.
func (h *hedge[T]) sleep(d time.Duration, armed *bool, pushback bool) (int, error) {
	switch {
	case h.sequential && pushback:
		// One attempt at a time, and none runs after a failure: the
		// pushback is slept on the clock, as in Retry.
		if err := h.cfg.clock.Sleep(h.ctx, d); err != nil {
			return ended, nil // the clock is a FakeClock: its only error is ctx's
		}
		return slept, nil
	case h.sequential || h.outstanding >= hedgeMaxOutstanding:
		return h.block(), nil
	case h.cfg.clock != nil:
		if !*armed {
			*armed = true
			h.rare().until = h.cfg.clock.Now().Add(d)
		}
		return h.sleepOn(h.x.until.Sub(h.cfg.clock.Now()))
	}
	if !*armed {
		if d <= 0 { // elapsed already: no timer, whose firing would cost a goroutine
			return slept, nil
		}
		*armed = true
		h.arm(d)
	}
	if h.fired.Load() > h.used {
		h.used++
		h.timerSet = false
		return slept, nil
	}
	return h.block(), nil
}

// block waits for a wake-up (an outcome delivered, or the timer fired) or
// for the caller's context to end.
func (h *hedge[T]) block() int {
	if h.ctxDone == nil {
		<-h.wake // a plain receive costs less than a select
		return woken
	}
	select {
	case <-h.wake:
		return woken
	case <-h.ctxDone:
		return ended
	}
}

// arm sets the real clock's timer to fire after d. The timer calls fire
// rather than send on a channel of its own: it costs one allocation instead
// of three, and Hedge waits on a single channel for outcomes and the timer
// alike. Its firings are counted, so that one that ended no wait (the wait
// ended otherwise, and the timer fired before arm set it again) is not
// taken for the end of the next: Reset reports it, and it is accounted
// for as taken.
func (h *hedge[T]) arm(d time.Duration) {
	if h.timer == nil {
		h.timer = time.AfterFunc(d, h.runFn)
	} else if !h.timer.Reset(d) && h.timerSet {
		h.used++
	}
	h.timerSet = true
}

// fire reports a firing of the timer (see run).
func (h *hedge[T]) fire() {
	h.fired.Add(1)
	h.signal()
}

// sleepOn sleeps d on a custom clock, interrupted when an outcome is
// delivered. An outcome delivered as the sleep ends counts first; a Sleep
// that fails for another reason ends the call with its error, as in Retry.
func (h *hedge[T]) sleepOn(d time.Duration) (int, error) {
	sctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	h.mu.Lock()
	if len(h.pending) > 0 || h.state.Load() == hedgeAbandoned {
		h.mu.Unlock()
		return woken, nil
	}
	h.interrupt = cancel
	h.mu.Unlock()
	err := h.cfg.clock.Sleep(sctx, d)
	h.mu.Lock()
	h.interrupt = nil
	delivered := len(h.pending) > 0
	h.mu.Unlock()
	switch {
	case delivered:
		return woken, nil
	case h.ctx.Err() != nil:
		return ended, nil
	case err != nil:
		return broken, err
	}
	return slept, nil
}
