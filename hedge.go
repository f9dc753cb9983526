package retry

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ErrHedgeLost is the cause, as context.Cause reports it, of the context of
// every attempt that Hedge abandons: another attempt succeeded first, or one
// failed in a way that ended the call. Hedge cancels the winner's context
// too once it has returned, with the same cause, so a value must not need
// its attempt's context after fn returned. When the caller's context ends,
// the attempts see its cause instead.
var ErrHedgeLost = errors.New("retry: hedge lost")

// Hedge calls fn and, while no attempt has succeeded, starts another attempt
// each time a delay of s elapses, so that a slow attempt is raced by fresh
// ones; it returns the first success. Retries fight failures; hedging fights
// slowness (see "The Tail at Scale", Dean and Barroso, 2013).
//
// The first attempt starts at once. The i-th delay of s is how long Hedge
// waits after the most recent attempt started before it starts another one,
// while none has succeeded; Constant(50*time.Millisecond).Take(2) makes at
// most 3 attempts, at 0, 50 ms and 100 ms. A negative delay counts as 0.
// When s has no delay left, no more attempts start and Hedge waits for
// those outstanding. At most 10 attempts run at once: while 10 are
// outstanding, no delay elapses, and only a failure starts the next
// attempt, so that a schedule of zero delays with no end cannot start
// goroutines without bound.
//
// The first success wins: Hedge returns its value and a nil error at once,
// and cancels the context of every other attempt, whose context.Cause is
// then ErrHedgeLost. Hedge does not wait for the losers to return; what they
// return is dropped (see Discard for values that hold resources). Of the
// outcomes Hedge finds waiting at once, a success wins over failures; the
// others are taken in the order the attempts returned.
//
// A failure that is retryable (not Permanent, and accepted by every If)
// starts the next attempt at once, using up the next delay of s, if one is
// left. Any other failure ends the call: Hedge cancels the other attempts and
// returns that attempt's value and error as it is, without the Permanent
// marker, as Retry does. Hedge gives up with an *Error that unwraps to the
// reason and to the last failure's error, and returns the last failure's
// value, when
//   - every attempt failed and s has no delay left: ErrExhausted;
//   - every attempt failed after a Budget refused a hedge: ErrBudgetExhausted;
//   - ctx is done: context.Cause(ctx); the attempts are cancelled with it.
//     A success that reached Hedge before it saw ctx end still wins, and a
//     failure that comes after is not kept as the last failure: it is
//     mostly the attempt's answer to the end of its context.
//
// The *Error's Attempts counts the calls of fn. Hedge never calls fn with a
// done context, nor once it has decided: an attempt whose goroutine starts
// after that does not call fn, and if it was a hedge, gives its Budget token
// back. If ctx is done before the first attempt, Hedge returns the zero T
// and an *Error with no attempts.
//
// A server's pushback (RetryAfter, RetryAt) is honoured as gRPC's A6
// specifies for hedging: a retryable failure that carries one starts the
// next attempt once the pushback has elapsed (at most MaxPushback), rather
// than at once, and the next delay of s counts from that attempt; meanwhile
// other failures do not start it early, and a later pushback starts the
// wait again. A negative pushback, a request not to retry, stops any more
// attempts from starting, while those outstanding go on: if none of them
// succeeds, Hedge returns that failure's value and error as they are, as
// Retry does.
//
// Options: WithClock, If, OnRetry (called on Hedge's goroutine before each
// attempt after the first: Number is the number of attempts started so far,
// Err the failure that triggered it or nil when a delay elapsed, Delay the
// delay used up or the pushback waited for, Elapsed the time since the
// first attempt started), WithBudget (each attempt after the first
// withdraws a token; a refusal only stops further attempts, and those
// outstanding go on), AttemptTimeout (per attempt; an attempt that fails
// after its own timeout counts as a retryable failure), MaxPushback,
// Observe (records every attempt that returns before Hedge or the caller
// cancelled it), OnDone (Attempts counts the calls of fn, as the *Error's
// does), Discard, and WithThrottle and WithBreaker: every attempt asks
// them before it starts, on Hedge's goroutine. If the first attempt is not
// let through, Hedge returns at once with an *Error of no attempts whose
// reason matches ErrThrottled or ErrOpen; if a later one is not, no more
// attempts start, those outstanding go on, and if none of them succeeds
// Hedge gives up with that reason. An attempt Hedge cancels because another
// won counts for neither, as one ended by the caller's context does.
// Hedge ignores MaxElapsed and MaxRetriesIf: its
// schedule alone bounds its attempts (bound its time with ctx's deadline).
//
// Every attempt runs on a goroutine of its own, never on the caller's, so
// Hedge returns as soon as an attempt wins even while another ignores its
// context. Once every call of fn has returned, nothing of Hedge remains: no
// goroutine, timer or context. A panic in fn that reaches Hedge before it
// has decided its result is raised again, with the same value (but not its
// stack), on the goroutine that called Hedge; after that, it is not
// recovered and ends the program, with its own stack, as a panic in any
// goroutine does. A runtime.Goexit in fn is likewise repeated on the
// caller's goroutine, or after that just ends the attempt's.
//
// Timing. With the real clock (the default), each delay is waited on a
// timer; under testing/synctest every timing above is exact. With a
// FakeClock, whose time moves only when something sleeps on it, an attempt
// takes no time at all, so it always answers before a delay could elapse:
// Hedge then makes its attempts one at a time, each retryable failure
// starting the next at once (or after its pushback, slept on the clock),
// which makes the outcome independent of how the goroutines are scheduled
// (an attempt that blocks then blocks Hedge until ctx ends). To test real
// overlap, use testing/synctest. Any other Clock is slept on by Hedge's
// goroutine, and the sleep is interrupted when an attempt returns.
//
// Cost: when the first attempt succeeds before the first delay, Hedge adds
// to the call of fn a goroutine and a channel hand-off, a context with a
// cause, a timer armed and stopped (unless the attempt answered before
// Hedge needed it) and its own state: 6 allocations and 728 bytes, about
// 1 to 1.4 µs on a shared 2-core machine, where the goroutine hand-off
// alone takes 0.5 µs (see BenchmarkHedge). If, OnRetry and OnDone add one
// allocation, and a Schedule that is not built from this package's
// functions one more, for the yield function Hedge hands it.
//
// Hedge ranges over s once, by calling it with a yield function that is
// valid for that one run: called after it returned false, after s returned,
// or by two goroutines at once, it panics. If s returns while a call of its
// yield function runs on another goroutine, Hedge makes that call return
// false, waits for it and panics. Hedge keeps only the last error.
//
// Hedge panics if s or fn is nil, if a Discard option's function does not
// take a T, or if given an IfValue (a rejected value it dropped could not be
// released).
func Hedge[T any](ctx context.Context, s Schedule, fn func(context.Context) (T, error), opts ...Option) (T, error) {
	mustSchedule("Hedge", s)
	if fn == nil {
		panic("retry: Hedge: nil function")
	}
	release := releaseOf[T](opts)
	cfg := newConfig(opts)
	mustNoValue("Hedge", &cfg)
	if ctx.Err() != nil {
		var zero T
		err := doneBefore(ctx)
		if cfg.hasDone {
			cfg.done(opts, time.Time{}, 0, err, context.Cause(ctx))
		}
		return zero, err
	}
	g := gate{t: cfg.throttle, b: cfg.breaker}
	var first pass
	if g.on() {
		var reason error
		if first, reason = g.enter(); reason != nil {
			var zero T
			err := newError(0, nil, reason)
			if cfg.hasDone {
				cfg.done(opts, time.Time{}, 0, err, reason)
			}
			return zero, err
		}
	}
	h := &hedge[T]{ctx: ctx, fn: fn, release: release, cfg: cfg, gate: g, wake: make(chan struct{}, 1)}
	if g.on() {
		h.passes = append(h.passes, first)
	}
	if h.cfg.hasIf || h.cfg.hasHooks {
		h.keep(opts)
	}
	if c, ok := h.cfg.clock.(*FakeClock); ok && c != nil {
		h.sequential = true
	}
	h.pending = h.inline[:0]
	h.ctxDone = ctx.Done()
	h.actx, h.cancel = context.WithCancelCause(ctx)
	if start := h.cfg.begin(); h.cfg.hasHooks || h.cfg.hasDone {
		h.rare().start = start
	}
	defer h.finish()
	h.runFn = h.run
	h.launch()
	if p := planOf(s); p != nil {
		h.iterate(p)
	} else {
		h.state.Store(hedgeRunning)
		s(h.step)
		if h.closeYield() {
			panic("retry: Hedge: the schedule returned while its yield function was running")
		}
	}
	if !h.done {
		h.drain()
	}
	if h.cfg.hasDone {
		h.cfg.done(opts, h.x.start, h.calls, h.err, h.x.reason)
	}
	return h.v, h.err
}

// keep copies the If and OnRetry options of opts into h, rather than keep
// the caller's slice, which would then escape on every call with options.
func (h *hedge[T]) keep(opts []Option) {
	n := 0
	for _, o := range opts {
		if o.kind == ifOption || o.kind == onRetryOption {
			n++
		}
	}
	x := h.rare()
	x.opts = make([]Option, 0, n)
	for _, o := range opts {
		if o.kind == ifOption || o.kind == onRetryOption {
			x.opts = append(x.opts, o)
		}
	}
}

// releaseOf returns the function that releases dropped values for the
// Discard options in opts, or nil; it panics if one does not take a T.
func releaseOf[T any](opts []Option) func(T) {
	var release func(T)
	for _, o := range opts {
		if o.kind != discardOption {
			continue
		}
		f, ok := o.ref.(func(T))
		if !ok {
			panic(fmt.Sprintf("retry: Hedge: Discard's function is a %T, not a %T", o.ref, f))
		}
		if release == nil {
			release = f
			continue
		}
		prev := release
		release = func(v T) { prev(v); f(v) }
	}
	return release
}

// The states of a Hedge's run of its schedule, for its yield function.
const (
	hedgeStarting  int32 = iota // the schedule has not been called yet
	hedgeRunning                // the schedule runs and may call yield
	hedgeStepping               // yield is running
	hedgeEnded                  // yield returned false, or the schedule returned
	hedgeAbandoned              // the schedule returned while yield ran on another goroutine: it must stop
)

// hedgeMaxOutstanding bounds the attempts of one Hedge that run at once, so
// that a schedule of zero (or tiny) delays with no end cannot start
// goroutines as fast as Hedge's goroutine can loop.
const hedgeMaxOutstanding = 10

// hedge is the state of one Hedge call. It is made for the call and never
// recycled: its yield function (step) is handed to the caller's schedule,
// and the attempts' goroutines may outlive the call.
type hedge[T any] struct {
	// Set before the first attempt starts, then only read.
	ctx     context.Context // the caller's, kept for the yield function, which has no other way to reach it
	fn      func(context.Context) (T, error)
	release func(T) // Discard's, or nil
	cfg     config
	gate    gate            // WithThrottle's and WithBreaker's
	actx    context.Context // the attempts' context, derived from ctx
	cancel  context.CancelCauseFunc
	wake    chan struct{}   // an attempt delivered an outcome, or the timer fired (capacity 1)
	ctxDone <-chan struct{} // ctx.Done(), nil if ctx never ends
	runFn   func()          // h.run: the attempts' goroutines and the timer run it

	fired   atomic.Uint64 // written by fire: how many times the timer fired
	queued  atomic.Int32  // attempts launched and not yet taken by a goroutine (see run)
	taken   atomic.Int32  // attempts taken by a goroutine
	state   atomic.Int32  // hedgeStarting…hedgeAbandoned, for the yield function
	yielded chan struct{} // made by closeYield before it abandons a running yield, which closes it on return

	// Read and written by Hedge's goroutine only.
	x           *hedgeRare[T] // what only some calls need; nil until then
	timer       *time.Timer   // the real clock's, made by the first wait that needs it; it calls fire
	used        uint64        // the firings accounted for, by a wait they ended or as stale
	started     int           // attempts started
	outstanding int           // attempts started whose outcome was not handled yet
	last        error         // the last failure's error, unmarked
	lastV       T             // and its value
	v           T
	err         error
	sequential  bool  // the clock is a FakeClock: no delay ever elapses
	timerSet    bool  // timer is set for the current wait and its firing not yet taken
	refused     bool  // a Budget refused an attempt
	blocked     error // the reason a Throttle or Breaker did not let an attempt through
	stopped     bool  // a failure asked for no retry (a negative pushback): no attempt starts any more
	done        bool  // v and err are the result

	// Guarded by mu, except that Hedge's goroutine, their only writer once
	// the call is over, reads over, calls and pending from then on
	// without it: no attempt changes them any more.
	mu        sync.Mutex
	over      bool               // Hedge has decided; outcomes from now on are dropped
	calls     int                // calls of fn begun; no more begin once over
	pending   []outcome[T]       // delivered outcomes not handled yet
	inline    [1]outcome[T]      // pending's first array
	passes    []pass             // the gate's passes of the attempts launched and not yet taken
	interrupt context.CancelFunc // ends the current sleep on a custom clock
}

// hedgeRare is the state that only some Hedge calls need: If and OnRetry,
// OnDone, a custom clock, a pushback that asks not to retry. Only Hedge's
// goroutine (or, in its stead, whichever runs the schedule's yield
// function) reads or writes it; rare makes it when first needed.
type hedgeRare[T any] struct {
	opts    []Option  // the If and OnRetry options; nil once Hedge has returned
	start   time.Time // on the clock, when hooks need Elapsed
	until   time.Time // on a custom clock, when the current sleep ends
	stopErr error     // the error of the failure that asked not to be retried, unmarked
	stopV   T         // and its value
	reason  error     // why the call gave up, if it did, for OnDone
}

// rare returns h.x, made if need be.
func (h *hedge[T]) rare() *hedgeRare[T] {
	if h.x == nil {
		h.x = new(hedgeRare[T])
	}
	return h.x
}

// outcome is what one attempt returned, or how it ended otherwise.
type outcome[T any] struct {
	v     T
	err   error
	own   bool // it failed after its own AttemptTimeout expired
	ended int8 // 0: it returned; endPanic or endGoexit: fn panicked or called runtime.Goexit
	panic any
	p     pass // from the call's gate, to report the outcome with
}

const (
	endPanic int8 = 1 + iota
	endGoexit
)

// success reports whether o is a value returned with a nil error.
func (o *outcome[T]) success() bool { return o.ended == 0 && o.err == nil }

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
	hedged := h.taken.Add(1) > 1 // every attempt after the first is a hedge
	var o outcome[T]
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
		// Never call fn with a done context; a hedge that is not made
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
	if h.cfg.latency != nil {
		h.cfg.observe(h.actx, start)
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

// drop releases a value nobody will read; its outcome counts for neither
// in the call's gate (Hedge cancelled the attempt, or the caller did).
func (h *hedge[T]) drop(o outcome[T]) {
	h.gate.abort(&o.p)
	if o.success() && h.release != nil {
		h.release(o.v)
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
		h.gate.leave(&o.p, accepted)
		h.finishWith(o.v, nil, ErrHedgeLost)
		return 0, nil
	}
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
		if p, reason = h.gate.enter(); reason != nil {
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
		a := Attempt{Number: h.started, Err: trigger, Delay: d, Elapsed: h.cfg.now().Sub(h.x.start)}
		for _, o := range h.x.opts {
			if o.kind == onRetryOption {
				o.ref.(func(Attempt))(a)
			}
		}
	}
	if h.gate.on() {
		h.mu.Lock()
		h.passes = append(h.passes, p)
		h.mu.Unlock()
	}
	h.launch()
	return true
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
	if h.cfg.hasDone {
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
