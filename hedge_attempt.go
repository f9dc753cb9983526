package retry

// The attempts of a Hedge call: each runs fn in a goroutine of its own and
// hands its outcome to the caller's goroutine, which decides what comes next.

import (
	"context"
	"runtime"
	"slices"
	"time"
)

// launch starts an attempt on a goroutine of its own.
func (h *hedge[T]) launch() {
	h.started++
	h.outstanding++
	h.queued.Add(1)
	go h.runFn()
}

// run, as h.runFn, is both the body of every attempt's goroutine and the
// timer's function, which the runtime also calls on a goroutine of its own:
// one function value for both saves an allocation. h.queued, the attempts
// launched and not yet taken, tells the two apart: a goroutine takes an
// attempt if one is queued, and otherwise reports the timer's firing. Two
// such goroutines may swap roles, which changes nothing: an attempt is
// taken only after Hedge launched it, a firing reported only after the
// timer fired (a goroutine that finds no attempt queued was not started by
// launch, or another took its attempt, which was the timer's goroutine).
func (h *hedge[T]) run() {
	for {
		n := h.queued.Load()
		if n == 0 {
			h.fire()
			return
		}
		if h.queued.CompareAndSwap(n, n-1) {
			h.attempt()
			return
		}
	}
}

// attempt runs one attempt: it calls fn, unless Hedge has decided or its
// context is done, and delivers what fn did.
func (h *hedge[T]) attempt() {
	number := h.taken.Add(1)
	hedged := number > 1 // every attempt after the first is a hedge
	o := outcome[T]{n: number}
	h.mu.Lock()
	if n := len(h.passes); n > 0 {
		// Any pass will do: they differ only in when they were issued.
		o.p, h.passes = h.passes[n-1], h.passes[:n-1]
	}
	skip := h.over || h.actx.Err() != nil
	if !skip {
		h.calls++
	}
	h.mu.Unlock()
	if skip {
		h.gate.abort(&o.p)
		// Never start fn once ctx is done or Hedge has decided; a hedge not made
		// costs no budget token, as a retry that is not made.
		if hedged && h.cfg.budget != nil {
			h.cfg.budget.refund()
		}
		return
	}
	ctx := h.actx
	var cancel context.CancelFunc
	if h.cfg.attemptTimeout > 0 {
		ctx, cancel = context.WithTimeout(h.actx, h.cfg.attemptTimeout)
	}
	var start time.Time
	if h.cfg.latency != nil {
		start = h.cfg.now()
	}
	returned := false
	defer func() {
		if returned {
			return
		}
		if cancel != nil {
			cancel()
		}
		// fn panicked or called runtime.Goexit. Hand a panic over to
		// Hedge's goroutine while Hedge has not decided; after that,
		// leave it unrecovered, so that it ends the program with its own
		// stack, as in any goroutine. Deciding and handing over under one
		// lock means a panic is never recovered and then found too late.
		h.mu.Lock()
		if h.over {
			h.mu.Unlock()
			h.gate.abort(&o.p)
			return
		}
		o.ended = endGoexit
		if o.panic = recover(); o.panic != nil {
			o.ended = endPanic
		}
		h.push(o)
		h.mu.Unlock()
		h.signal()
	}()
	o.v, o.err = h.fn(ctx)
	returned = true
	if cancel != nil {
		o.own = o.err != nil && ctx.Err() != nil && h.actx.Err() == nil
		cancel()
	}
	if h.cfg.latency != nil && (h.actx.Err() == nil || context.Cause(h.actx) == ErrHedgeLost) {
		// A loser too, as the time it ran: a lower bound of its latency.
		// Why that keeps a delay read from Quantile(q) unbiased, with
		// one hedge after the delay d: the first attempt is cancelled
		// only once d has elapsed, so its record exceeds d exactly when
		// its latency does, and the count of records above d, which is
		// what places the q-quantile against d, is exact for every first
		// attempt. Only a hedge's record can fall below its latency; the
		// hedges are a share 1−q of the calls, so the share of records
		// above d is off by at most (1−q)²/(2−q) ≈ 0.24 points at q = 0.95.
		// Leaving the losers out drops instead exactly the slow first
		// attempts, a share up to 1−q, and the estimate settles low.
		// Only an attempt that the caller's context ended is left out.
		h.cfg.latency.Record(h.cfg.now().Sub(start))
	}
	h.deliver(o)
}

// deliver hands what fn returned to Hedge's goroutine, or drops it if
// Hedge is over, or if it is a failure that came after the caller's
// context ended: Hedge is then giving up, and such a failure is mostly the
// attempt's answer to its context's end, which would make Last depend on
// whether Hedge or the attempt ran first. A success is always handed over:
// it wins if Hedge has not decided.
func (h *hedge[T]) deliver(o outcome[T]) {
	h.mu.Lock()
	if h.over || o.err != nil && h.ctx.Err() != nil {
		h.mu.Unlock()
		h.drop(o)
		return
	}
	h.push(o)
	h.mu.Unlock()
	h.signal()
}

// push adds o to the outcomes pending, with mu held, and interrupts a sleep
// on a custom clock.
func (h *hedge[T]) push(o outcome[T]) {
	h.pending = append(h.pending, o)
	if h.interrupt != nil {
		h.interrupt()
	}
}

// signal wakes Hedge's goroutine, if it waits.
func (h *hedge[T]) signal() {
	select {
	case h.wake <- struct{}{}:
	default: // a wake-up is already due
	}
}

// next returns the next delivered outcome to handle: a panic first, then a
// success, then the oldest failure.
// A success decides the call: next then closes it (see closeLocked) under
// the same lock.
func (h *hedge[T]) next() (o outcome[T], ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch len(h.pending) {
	case 0:
		return o, false
	case 1:
		o = h.pending[0]
		h.pending = h.pending[:0]
	default:
		k := slices.IndexFunc(h.pending, func(o outcome[T]) bool { return o.ended != 0 })
		if k < 0 {
			k = max(slices.IndexFunc(h.pending, func(o outcome[T]) bool { return o.err == nil }), 0)
		}
		o = h.pending[k]
		h.pending = slices.Delete(h.pending, k, k+1)
	}
	if o.success() {
		h.closeLocked()
	}
	return o, true
}

// handle acts on an outcome. For a retryable failure, it returns the
// pushback the next attempt must wait for (0: none) and the failure's
// error, which calls for that attempt; the error is nil when the call is
// over (h.done) or no attempt is called for.
func (h *hedge[T]) handle(o outcome[T]) (time.Duration, error) {
	h.outstanding--
	switch {
	case o.ended == endPanic:
		h.gate.abort(&o.p)
		h.end(ErrHedgeLost)
		panic(o.panic)
	case o.ended == endGoexit:
		h.gate.abort(&o.p)
		h.end(ErrHedgeLost)
		runtime.Goexit()
	case o.err == nil:
		h.winner = o.n
		h.gate.leave(&o.p, accepted)
		h.finishWith(o.v, nil, ErrHedgeLost)
		return 0, nil
	}
	h.failed++
	permanent, pb := markers(o.err)
	err := unmark(o.err)
	answered := permanent || !pb.refused() && !o.own && !h.retryable(err)
	if h.gate.on() {
		h.gate.leaveAfter(&o.p, h.ctx, err, answered)
	}
	if permanent || !o.own && !h.retryable(err) {
		h.finishWith(o.v, err, ErrHedgeLost)
		return 0, nil
	}
	h.last, h.lastV = err, o.v
	if h.ctx.Err() != nil {
		h.giveUp(context.Cause(h.ctx))
		return 0, nil
	}
	if pb.refused() {
		// The server asks not to be retried: as in gRPC's A6, no attempt
		// starts any more, and those outstanding go on.
		if !h.stopped {
			x := h.rare()
			h.stopped, x.stopV, x.stopErr = true, o.v, err
		}
		return 0, nil
	}
	var hold time.Duration
	if pb != nil {
		hold = min(pb.wait(h.cfg.now), h.cfg.maxPushback)
	}
	return hold, err
}

// retryable reports whether every If option accepts err.
func (h *hedge[T]) retryable(err error) bool {
	if !h.cfg.hasIf {
		return true
	}
	for _, o := range h.x.opts {
		if o.kind == ifOption && !o.ref.(func(error) bool)(err) {
			return false
		}
	}
	return true
}

// hedge starts the next attempt, after the delay d elapsed or a retryable
// failure, trigger, used it up; it reports false if it may not start.
func (h *hedge[T]) hedge(d time.Duration, trigger error) bool {
	if h.ctx.Err() != nil {
		h.giveUp(context.Cause(h.ctx))
		return false
	}
	var p pass
	if h.gate.on() {
		var reason error
		if p, reason = h.gate.enter(h.permitCtx()); reason != nil {
			if reason == errNoPermit {
				return true // the hedge is not sent; the call goes on
			}
			h.blocked = reason
			return false
		}
	}
	if h.cfg.budget != nil && !h.cfg.budget.withdraw() {
		h.gate.abort(&p)
		h.refused = true
		return false
	}
	if h.cfg.hasHooks {
		h.notify(trigger, d, &p)
	}
	if h.gate.on() {
		h.mu.Lock()
		h.passes = append(h.passes, p)
		h.mu.Unlock()
	}
	h.launch()
	return true
}
