package retry

import (
	"context"
	"slices"
	"sync/atomic"
	"time"
)

// The two loops of a Retry or Do call, and the runner that decides for both.
//
// The flat loop is what Retry and Do run when the schedule is a plan's (see
// plan.go) and the flat loop handles every option of the call
// (config.flat): retrying draws each delay from a planIter in its own frame
// and waits in its own select, so a parked call holds nothing on the heap
// but its timer, and its stack is its caller's frames, Do's or Retry's, and
// this one: it stays in the goroutine's first 2 KiB (TestParkedStack). The
// rare paths (pushback, deadlines, budgets, hooks, custom clocks, giving up)
// are out of line.
//
// The general loop is what any other call runs: generalWith, or gatedCall
// for a call guarded by a Throttle, Breaker or Limiter alone, then general,
// which ranges the schedule with a loop's yield function.
//
// Both read a call's options as one config, folded by config.fold
// (config.go), make attempts with attempt (attempt.go), and decide through
// the runner's methods (at the end of this file), so they decide alike:
// FuzzRetryWaitsTheSchedule runs every schedule both ways.

// retrying is Retry and Do. Exactly one of fn (Retry's) and fnErr (Do's,
// with T struct{}) is set.
//
// A call without options makes its first attempt at once and, if it
// succeeds, returns: that is the whole cost of a call that does not retry.
// If it fails on a plan's Schedule, the call retries in this function's
// frame, drawing its delays from a planIter; on any other Schedule it goes
// the general way.
//
// A call with options makes each attempt in stepWith, which folds the
// options into a config and decides what follows; on its first attempt it
// takes the call the general way instead, with that config, unless the flat
// loop can run it. This frame then waits for the delay it decided.
//
// This frame, and the caller's, are all a waiting call holds on its
// goroutine's stack (Retry is inlined, and Do's frame holds this one's
// arguments), so everything but the wait itself is out of line. A config
// kept here would park Do 976 bytes deep, over the 888 that TestParkedStack
// allows: stepWith folds it in its own frame, which returns before the
// wait, at each attempt (config.fold takes a few ns for a few options).
func retrying[T any](ctx context.Context, s Schedule, fn func(context.Context) (T, error), fnErr func(context.Context) error, opts []Option) (T, error) {
	if s == nil || fn == nil && fnErr == nil {
		badCall(s, fnErr != nil)
	}
	var v T
	var err error
	// The helpers below take opts by pointer: a slice is three words, and
	// every word of a call's arguments takes room in this frame.
	po := &opts
	if len(opts) == 0 {
		// The fast path: a call without options whose first attempt
		// succeeds.
		if ctx.Err() != nil {
			return v, doneBefore(ctx)
		}
		if fnErr != nil {
			err = fnErr(ctx)
		} else {
			v, err = fn(ctx)
		}
		if err == nil {
			return v, nil
		}
		if planOf(s) == nil {
			if fnErr != nil {
				return v, generalDoAfter(ctx, s, fnErr, err)
			}
			return generalRetryAfter(ctx, s, fn, v, err)
		}
	}
	// Declared here, not zeroed on the fast path.
	var d time.Duration
	var f flatState
	if len(opts) == 0 {
		f.n = 1
		f.it.init(planOf(s)) // again: a variable kept across the first attempt would take room
		d, err = f.decide(ctx, err)
	} else {
		d, v, err = stepWith(ctx, &f, s, fn, fnErr, po)
	}

	// The timer is a variable of its own, not part of f: the runtime keeps
	// a timer, and escape analysis would then see all of f as kept.
	var timer *time.Timer
	for {
		if d < 0 {
			return v, err
		}
		// The general path's sleep on the real clock, written out so that
		// the call parks in this frame (stepWith has waited on a custom
		// clock already, and returned 0). err is nil, and then the wait's
		// error until the next attempt.
		if d > 0 {
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				err = ctx.Err()
			}
		}
		if err == nil && ctx.Err() == nil {
			// The next attempt.
			if len(opts) > 0 {
				d, v, err = stepWith(ctx, &f, nil, fn, fnErr, po)
				continue
			}
			if fnErr != nil {
				err = fnErr(ctx)
			} else {
				v, err = fn(ctx)
			}
			f.n++
			if err == nil {
				return v, nil
			}
			d, err = f.decide(ctx, err)
			continue
		}
		// The wait ended without its retry.
		if len(opts) > 0 {
			return v, f.abandonWith(ctx, po, err)
		}
		return v, f.abandon(ctx, nil, err)
	}
}

// badCall panics for a call of Retry, or Do if do, on a nil Schedule or a
// nil function. Do checked its fn already, so a call without a function is
// Retry's.
//
//go:noinline
func badCall(s Schedule, do bool) {
	if do {
		mustSchedule("Do", s)
	}
	mustSchedule("Retry", s)
	panic("retry: Retry: nil function")
}

// flatState is the state of the flat loop between attempts: the runner's,
// the plan's run, and the start of a call whose OnRetry hooks need it (on
// the heap, as the rarest part of the state, so as to keep the flat loop's
// frame small).
type flatState struct {
	runner
	it    planIter
	start *time.Time
}

// The decisions between attempts are the runner's, in the helpers below,
// out of line. The flat loop's frame keeps no config: a call without
// options has none, and with options stepWith folds the call's config in
// its own frame, which returns before the wait.

// decide decides what follows a failed attempt with error err of a call
// without options: it returns the wait before the next attempt, or -1 and
// the error to report.
//
//go:noinline
func (f *flatState) decide(ctx context.Context, err error) (time.Duration, error) {
	// The runner's fail, without options: the common case written out,
	// since this runs after every failed attempt.
	permanent, pb := markers(err)
	if permanent || pb != nil {
		f.last = unmark(err)
		if permanent || pb.refused() {
			return -1, f.last
		}
	} else {
		f.last = err // no marker: markers would have seen one at the top
	}
	if ctx.Err() != nil {
		return -1, f.giveUp(context.Cause(ctx))
	}
	d, ok := f.it.next()
	if !ok {
		return -1, f.giveUp(ErrExhausted)
	}
	if pb == nil && f.x == noDeadline {
		return d, nil // nothing more to decide: no pushback, no deadline, no budget
	}
	d, out := f.pace(ctx, nil, defaultMaxPushback, pb, d)
	if out != nil {
		return -1, out
	}
	return d, nil
}

// stepWith makes attempt f.n+1 of a call with options *opts: it folds the
// options into a config and, on the first attempt, takes the call the
// general way with it unless s is a plan's Schedule and the flat loop
// handles every option (config.flat), or starts the call (see
// config.begin). If the attempt fails it decides what follows (decideWith).
// It returns the wait before the next attempt, or -1 with the call's
// result. Only the first attempt reads s: the flat loop passes nil after
// it, rather than keep s live across its waits (16 bytes of its frame).
//
// If OnRetry hooks need the start time, it keeps it in f.start, on the
// heap: the rarest part of a call's state, kept out of the flat loop's
// frame, and made only when the call retries.
//
//go:noinline
func stepWith[T any](ctx context.Context, f *flatState, s Schedule, fn func(context.Context) (T, error), fnErr func(context.Context) error, opts *[]Option) (d time.Duration, v T, err error) {
	var cfg config
	cfg.fold(*opts)
	first := f.n == 0
	var start time.Time
	if first {
		if planOf(s) == nil || !cfg.flat {
			v, err = generalWith(ctx, s, fn, fnErr, &cfg, *opts)
			return -1, v, err
		}
		if ctx.Err() != nil {
			return -1, v, doneBefore(ctx)
		}
		start = cfg.begin()
	}
	v, err, own := attempt(ctx, fn, fnErr, cfg.attempt())
	f.n++
	if err == nil {
		return -1, v, nil
	}
	if first {
		f.it.init(planOf(s))
		if cfg.hasHooks {
			f.start = new(time.Time)
			*f.start = start
		}
	}
	d, err = f.decideWith(ctx, &cfg, *opts, err, own)
	return d, v, err
}

// decideWith is decide for a call with config cfg and options opts, after
// an attempt that failed with err, after its own AttemptTimeout if own.
// With a custom clock it also waits, on that clock, and returns 0 (a wait
// already made).
func (f *flatState) decideWith(ctx context.Context, cfg *config, opts []Option, err error, own bool) (time.Duration, error) {
	pb, out, done := f.fail(ctx, opts, cfg.hasIf, err, own)
	if done {
		return -1, out
	}
	d, ok := f.it.next()
	if !ok {
		return -1, f.giveUp(ErrExhausted)
	}
	if d, out = f.allow(ctx, cfg.clock, cfg.maxPushback, cfg.budget, pb, d); out != nil {
		return -1, out
	}
	if f.start != nil {
		f.notify(&opts, cfg.clock, f.start, d)
	}
	if cfg.clock == nil {
		return d, nil
	}
	if err := cfg.clock.Sleep(ctx, d); err != nil || ctx.Err() != nil {
		return -1, f.abandon(ctx, cfg.budget, err)
	}
	return 0, nil
}

// abandonWith is the runner's abandon for a call with options *opts, whose
// wait on the real clock ended without its retry.
//
//go:noinline
func (f *flatState) abandonWith(ctx context.Context, opts *[]Option, err error) error {
	var cfg config
	cfg.fold(*opts)
	return f.abandon(ctx, cfg.budget, err)
}

// The first attempt of a call whose only options are WithThrottle,
// WithBreaker, WithLimiter and WithClock (config.gated): the common way to
// guard a dependency. Such a call needs no more for its first attempt (no
// budget to credit, no start time to take, no attempt timeout, nothing to
// observe), so it asks its gate and makes the attempt straight away, and
// goes on through the general path only if the attempt fails. It makes
// exactly the decisions generalWith would: TestGatedCall compares them.

// gatedCall is generalWith for a gated call with config cfg and options
// opts.
func gatedCall[T any](ctx context.Context, s Schedule, fn func(context.Context) (T, error), fnErr func(context.Context) error, cfg *config, opts []Option) (T, error) {
	var v T
	if ctx.Err() != nil {
		return v, doneBefore(ctx)
	}
	g := cfg.gate()
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
	return general(ctx, s, fn, fnErr, cfg, opts, time.Time{}, v, err, false, &p)
}

// general continues a Retry or Do call with config cfg and options opts,
// started at start, whose first attempt failed with err (own: after its own
// AttemptTimeout) or returned a value v that IfValue rejected (err is then
// nil), through the general path: the schedule is ranged with the yield
// function of a loop. Exactly one of fn and fnErr is set. p, if not nil,
// is the first attempt's pass (see gate): general takes it over, leaving
// *p empty.
func general[T any](ctx context.Context, s Schedule, fn func(context.Context) (T, error), fnErr func(context.Context) error, cfg *config, opts []Option, start time.Time, v T, err error, own bool, p *pass) (T, error) {
	l := &loop[T]{v: v, fn: fn, fnErr: fnErr}
	l.init(ctx, cfg, opts, start)
	if l.g = cfg.gate(); l.g.on() {
		l.p, *p = *p, pass{}
		defer l.g.abort(&l.p)
	}
	if cfg.hasValue {
		l.preds = valuePreds[T](opts)
		l.release, l.rejected = releaseOf[T](opts), err == nil
	}
	out := l.run(s, err, own)
	if cfg.hasDone {
		// The reason is the *Error's own when the call gave up, and nil when
		// it returned an attempt's error as it is.
		var reason error
		if e, ok := out.(*Error); ok && out != l.last {
			reason = e.tree[0]
		}
		cfg.done(opts, start, l.n, out, reason)
	}
	return l.v, out
}

// generalRetryAfter and generalDoAfter continue a Retry or a Do call without
// options, whose first attempt failed with err (v its value), through the
// general path.

//go:noinline
func generalRetryAfter[T any](ctx context.Context, s Schedule, fn func(context.Context) (T, error), v T, err error) (T, error) {
	return general(ctx, s, fn, nil, &defaultConfig, nil, time.Time{}, v, err, false, nil)
}

//go:noinline
func generalDoAfter(ctx context.Context, s Schedule, fn func(context.Context) error, err error) error {
	_, err = general[struct{}](ctx, s, nil, fn, &defaultConfig, nil, time.Time{}, struct{}{}, err, false, nil)
	return err
}

// generalWith is a Retry or Do call with config cfg, folded from its options
// opts (see stepWith), through the general path, from the first attempt.
// Exactly one of fn and fnErr is set.
func generalWith[T any](ctx context.Context, s Schedule, fn func(context.Context) (T, error), fnErr func(context.Context) error, cfg *config, opts []Option) (T, error) {
	if cfg.gated {
		return gatedCall(ctx, s, fn, fnErr, cfg, opts)
	}
	var v T
	if fnErr != nil {
		checkOptions[T](entryDo, opts)
	} else {
		checkOptions[T](entryRetry, opts)
	}
	if ctx.Err() != nil {
		err := doneBefore(ctx)
		if cfg.hasDone {
			cfg.done(opts, time.Time{}, 0, err, context.Cause(ctx))
		}
		return v, err
	}
	var p pass
	g := cfg.gate()
	if g.on() {
		var reason error
		if p, reason = g.enter(ctx); reason != nil {
			err := newError(0, nil, reason)
			if cfg.hasDone {
				cfg.done(opts, time.Time{}, 0, err, reason)
			}
			return v, err
		}
		defer g.abort(&p)
	}
	start := cfg.begin()
	v, err, own := attempt(ctx, fn, fnErr, cfg.attempt())
	if err == nil && !(cfg.hasValue && rejected(opts, v)) {
		if g.on() {
			g.leave(&p, accepted)
		}
		if cfg.hasDone {
			cfg.done(opts, start, 1, nil, nil)
		}
		return v, nil
	}
	return general(ctx, s, fn, fnErr, cfg, opts, start, v, err, own, &p)
}

// loop is the state of a Retry or Do call that retries through the general
// path (a schedule that is not a plan, or an option the flat loop does not
// handle), and its step is the yield function the call hands its schedule.
// A loop is made for one call and never reused: a schedule that keeps the
// yield function and calls it after returning, against the iterator
// contract, finds the loop's state ended and panics, having read nothing but
// that atomic state, so it cannot reach any other call, whichever goroutine
// it calls from. This costs the call two allocations (the loop and its bound
// step), three with If, OnRetry or MaxRetriesIf (a copy of the options and
// its counts), on top of the real clock's timer; a call that succeeds at
// once makes no loop.
type loop[T any] struct {
	v T // first: as the last field, a zero-size T (Do's) would be padded
	runner
	ctx    context.Context                  // the call's, for the yield function
	cfg    config                           // the call's config, copied
	opts   []Option                         // a copy of the call's options, if If or OnRetry need them
	start  time.Time                        // on the clock, when OnRetry needs Elapsed or MaxElapsed its limit
	limits []limit                          // MaxRetriesIf's, with this call's counts
	g      gate                             // WithThrottle's and WithBreaker's
	p      pass                             // the attempt in flight's, from g
	preds  []func(T) bool                   // IfValue's; nil without
	state  atomic.Uint32                    // yieldOpen, yieldStopped or yieldEnded
	fn     func(context.Context) (T, error) // Retry's
	fnErr  func(context.Context) error      // or Do's
	pb     *pushbackError                   // the last attempt's pushback, for its wait
	timer  *time.Timer                      // the real clock's, reused between the call's waits
	out    error                            // the result, once done
	done   bool                             // the call has its result

	// OnDiscard's, with IfValue (nil without), and whether v is a value
	// IfValue rejected, to release if another attempt follows.
	release  func(T)
	rejected bool
}

// limit is a MaxRetriesIf option and the count of the call's failures it
// matched.
type limit struct {
	match   func(error) bool
	retries int // allowed
	seen    int // matching failures so far
}

// init prepares l for a call with config cfg and options opts, started at
// start, whose first attempt failed. It copies cfg, and opts only if If or
// OnRetry need them later: keeping the caller's slice would make it escape
// on every call, successful or not.
func (l *loop[T]) init(ctx context.Context, cfg *config, opts []Option, start time.Time) {
	l.ctx, l.cfg, l.start, l.runner = ctx, *cfg, start, runner{n: 1}
	if cfg.hasIf || cfg.hasHooks {
		l.opts = slices.Clone(opts)
	}
	if cfg.hasLimits {
		l.limits = limitsOf(opts)
	}
}

// exceeded counts err against the MaxRetriesIf limits and reports whether
// one of them has no retry left for it.
func (l *loop[T]) exceeded(err error) bool {
	return countLimits(l.limits, err)
}

// fail is the runner's fail, then the MaxRetriesIf limits.
func (l *loop[T]) fail(err error, own bool) (*pushbackError, error, bool) {
	pb, out, done := l.runner.fail(l.ctx, l.opts, l.cfg.hasIf, err, own)
	if l.g.on() {
		l.g.leaveAfter(&l.p, l.ctx, err, done)
	}
	if !done && err != nil && l.limits != nil && l.exceeded(l.last) {
		return nil, l.giveUp(ErrExhausted), true
	}
	return pb, out, done
}

// run retries after the first attempt failed with err, and returns the error
// to report (nil on success).
func (l *loop[T]) run(s Schedule, err error, own bool) error {
	if l.pb, l.out, l.done = l.fail(err, own); !l.done {
		l.iterate(s)
		if !l.done {
			l.out, l.done = l.giveUp(ErrExhausted), true
		}
	}
	return l.out
}

// iterate ranges s with l's yield function, and ends that function's
// validity when s returns, or panics.
func (l *loop[T]) iterate(s Schedule) {
	defer l.state.Store(yieldEnded)
	// Calling s with a yield function is what a range loop does, minus
	// the loop-state variable and closure the compiler would allocate.
	s(l.step)
}

// step is the schedule's yield function: it waits d (a negative d as 0),
// makes the next attempt and reports whether to go on.
func (l *loop[T]) step(d time.Duration) bool {
	if s := l.state.Load(); s != yieldOpen {
		checkYield(s)
	}
	if l.out, l.done = l.wait(max(d, 0)); l.done {
		l.state.Store(yieldStopped)
		return false
	}
	if l.g.b != nil {
		// The Breaker is asked after the wait, when the retry is due; the
		// Throttle was asked before (see wait).
		var left time.Duration
		var ok bool
		if l.p.bt, left, ok = l.g.b.admit(nil); !ok {
			// The retry is not made: its Budget token goes back, and its
			// Throttle ticket is settled as counting for nothing.
			if l.cfg.budget != nil {
				l.cfg.budget.refund()
			}
			l.g.abort(&l.p)
			l.out, l.done = l.giveUp(openError(left)), true
			l.state.Store(yieldStopped)
			return false
		}
	}
	if !l.permit() {
		return false
	}
	if l.rejected && l.release != nil {
		l.release(l.v) // dropped: the attempt about to be made replaces it
	}
	var err error
	var own bool
	l.v, err, own = attempt(l.ctx, l.fn, l.fnErr, l.cfg.attempt())
	l.n++
	l.rejected = err == nil
	if err == nil && (l.preds == nil || !rejects(l.preds, l.v)) {
		if l.g.on() {
			l.g.leave(&l.p, accepted)
		}
		l.out, l.done = nil, true
	} else {
		l.pb, l.out, l.done = l.fail(err, own)
	}
	if l.done {
		l.state.Store(yieldStopped)
		return false
	}
	return true
}

// wait waits the delay d from the schedule (or the server's longer pushback)
// before the next attempt. If the retry must not happen, it returns the error
// to report and true.
func (l *loop[T]) wait(d time.Duration) (error, bool) {
	c := &l.cfg
	d, out := l.pace(l.ctx, c.clock, c.maxPushback, l.pb, d)
	if out == nil && c.maxElapsed > 0 && d > c.maxElapsed-max(now(c.clock).Sub(l.start), 0) {
		out = l.giveUp(ErrMaxElapsed)
	}
	if out == nil && c.breaker != nil {
		// A Breaker that will still be open when the wait ends would not
		// let the retry through: give up now rather than wait in vain.
		if left, open := c.breaker.blocks(d); open {
			out = l.giveUp(openError(left))
		}
	}
	if out == nil && c.throttle != nil {
		// The Throttle decides before the wait, so that a rejected retry
		// is not waited for; its request counts from now.
		var ok bool
		if l.p.tt, ok = c.throttle.admit(nil); !ok {
			out = l.giveUp(ErrThrottled)
		}
	}
	if out == nil {
		out = l.spend(c.budget)
	}
	if out != nil {
		l.g.abort(&l.p) // a request admitted for a retry refused after all
		return out, true
	}
	if c.hasHooks {
		l.notify(&l.opts, c.clock, &l.start, d)
	}
	if err := sleep(l.ctx, c.clock, &l.timer, d); err != nil || l.ctx.Err() != nil {
		return l.abandon(l.ctx, c.budget, err), true
	}
	return nil, false
}

// runner holds the state of one call between attempts, and decides what
// follows each one: the general loop keeps it in its loop, the flat loop in
// its frame. It is not generic, so its logic is compiled once for all value
// types. Its methods take the parts of the call's context, config and
// options they need as arguments rather than keep them: escape analysis sees
// a struct as a whole, so options kept in a runner would count as kept
// wherever the runner's error is, and a call with options would then
// allocate them even on success; and the flat loop's frame, which a
// runner is part of, has no room to spare for a config.
type runner struct {
	n    int     // attempts made
	last error   // the last attempt's error, unmarked
	x    *extras // a custom clock's deadline anchors; nil until needed, noDeadline once known useless
}

// extras is what only a deadline on a custom clock needs: the time left at
// anchorReal on the real clock is spent as the custom clock advances from
// anchorClock, so a FakeClock honours deadlines.
type extras struct {
	anchored    bool
	anchorReal  time.Time
	anchorClock time.Time
}

// noDeadline is a runner's x once its context has been found to have no
// deadline: a context's deadline never changes, so the runner stops asking.
var noDeadline = new(extras)

// retryable reports whether every If predicate among opts accepts err;
// hasIf reports whether there is any.
func retryable(opts []Option, hasIf bool, err error) bool {
	if !hasIf {
		return true
	}
	for i := range opts {
		if opts[i].kind == ifOption && !opts[i].ref.(func(error) bool)(err) {
			return false
		}
	}
	return true
}

// fail records the failed attempt r.n, whose error is err or, if err is
// nil, whose value IfValue rejected, and decides whether to retry it: it
// returns the attempt's pushback, for the wait, or the error to report and
// true. opts are the call's options, hasIf whether any is an If.
func (r *runner) fail(ctx context.Context, opts []Option, hasIf bool, err error, own bool) (*pushbackError, error, bool) {
	if err == nil {
		r.last = nil
		if ctx.Err() != nil {
			return nil, r.giveUp(context.Cause(ctx)), true
		}
		return nil, nil, false
	}
	permanent, pb := markers(err)
	r.last = unmark(err)
	if permanent {
		return nil, r.last, true
	}
	if pb.refused() {
		return nil, r.last, true
	}
	if !own && hasIf && !retryable(opts, hasIf, r.last) {
		return nil, r.last, true
	}
	if ctx.Err() != nil {
		return nil, r.giveUp(context.Cause(ctx)), true
	}
	return pb, nil, false
}

// allow prepares the wait for the schedule's delay d before the next
// attempt, on clock (nil: the real one): it returns the wait (pb's, if
// longer, up to maxPushback), having withdrawn a token from budget (if
// any), or the error to report if the retry must not happen.
func (r *runner) allow(ctx context.Context, clock Clock, maxPushback time.Duration, budget *Budget, pb *pushbackError, d time.Duration) (time.Duration, error) {
	d, out := r.pace(ctx, clock, maxPushback, pb, d)
	if out == nil {
		out = r.spend(budget)
	}
	return d, out
}

// pace is allow's first part: the wait, or the error to report if it would
// end after ctx's deadline.
func (r *runner) pace(ctx context.Context, clock Clock, maxPushback time.Duration, pb *pushbackError, d time.Duration) (time.Duration, error) {
	var w time.Duration // the server's wait, when it counts
	if pb != nil && maxPushback > 0 {
		if w = pb.wait(func() time.Time { return now(clock) }); w > maxPushback && w > d {
			return 0, r.tooLong(w, maxPushback, false)
		}
	}
	own := d
	d = max(d, w)
	if r.x == noDeadline {
		return d, nil
	}
	if deadline, ok := ctx.Deadline(); !ok {
		r.x = noDeadline
	} else if left := r.untilDeadline(clock, deadline); d >= left {
		if w > own {
			return 0, r.tooLong(w, left, true)
		}
		return 0, r.giveUp(context.DeadlineExceeded)
	}
	return d, nil
}

// spend is allow's last part: it withdraws a token from budget, if any, or
// returns the error to report if the budget refuses.
func (r *runner) spend(budget *Budget) error {
	if budget != nil && !budget.withdraw() {
		return r.giveUp(ErrBudgetExhausted)
	}
	return nil
}

// now returns the time on clock, nil being the real one.
func now(clock Clock) time.Time {
	if clock == nil {
		return time.Now()
	}
	return clock.Now()
}

// notify runs the OnRetry hooks among opts before a wait of d, with the
// time elapsed on clock (nil: the real one) since start.
//
// Its arguments are pointers, and a logger's event is built out of line
// (logRetryAttempt): the OnRetry hooks run below this frame, in the room
// left of the goroutine's stack.
func (r *runner) notify(opts *[]Option, clock Clock, start *time.Time, d time.Duration) {
	returned := false
	defer refundUnless(&returned, *opts) // a hook that panics stops the retry: see hook_panic.go
	a := Attempt{Number: r.n, Err: r.last, Delay: d, Elapsed: now(clock).Sub(*start)}
	for i := range *opts {
		o := &(*opts)[i]
		if o.kind == onRetryOption {
			o.ref.(func(Attempt))(a)
		} else if o.kind == logOption {
			logRetryAttempt(o, &a)
		}
	}
	returned = true
}

// abandon returns the error to report when a wait admitted for a retry ended
// without it: the clock's error err or the context's cause. The retry will
// not happen, so it costs no token of budget (if any).
func (r *runner) abandon(ctx context.Context, budget *Budget, err error) error {
	if budget != nil {
		budget.refund()
	}
	if err == nil || ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	return r.giveUp(err)
}

// untilDeadline returns how long is left before deadline, on clock (nil:
// the real one).
func (r *runner) untilDeadline(clock Clock, deadline time.Time) time.Duration {
	left := time.Until(deadline)
	if clock == nil {
		return left
	}
	if r.x == nil {
		r.x = new(extras)
	}
	now, x := clock.Now(), r.x
	if !x.anchored {
		x.anchored, x.anchorReal, x.anchorClock = true, time.Now(), now
	}
	return min(left, deadline.Sub(x.anchorReal)-now.Sub(x.anchorClock))
}

// sleep waits d on clock (nil: the real one), or until ctx ends. The real
// clock's timer, *timer, is made on the call's first wait and then reset; it
// is expired or stopped whenever sleep returns.
func sleep(ctx context.Context, clock Clock, timer **time.Timer, d time.Duration) error {
	if clock != nil {
		return clock.Sleep(ctx, d)
	}
	if d <= 0 {
		return ctx.Err()
	}
	if *timer == nil {
		*timer = time.NewTimer(d)
	} else {
		(*timer).Reset(d)
	}
	select {
	case <-(*timer).C:
		return nil
	case <-ctx.Done():
		(*timer).Stop()
		return ctx.Err()
	}
}

// giveUp returns the *Error of a call that gives up for reason. It is never
// inlined, to keep the *Error's temporaries out of the flat loop's frame.
//
//go:noinline
func (r *runner) giveUp(reason error) error {
	return newError(r.n, r.last, reason)
}
