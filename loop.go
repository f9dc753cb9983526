package retry

import (
	"context"
	"slices"
	"sync/atomic"
	"time"
)

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
	if l.g = (gate{t: cfg.throttle, b: cfg.breaker, l: cfg.limiter}); l.g.on() {
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

// generalRetry and generalDo are a Retry or a Do call, with options *opts,
// through the general path, from the first attempt. The flat loop calls
// them, and they are never inlined, so that their callees' arguments take no
// room in its frame.

//go:noinline
func generalRetry[T any](ctx context.Context, s Schedule, fn func(context.Context) (T, error), opts *[]Option) (T, error) {
	return generalCall(ctx, s, fn, nil, *opts)
}

//go:noinline
func generalDo(ctx context.Context, s Schedule, fn func(context.Context) error, opts *[]Option) error {
	_, err := generalCall[struct{}](ctx, s, nil, fn, *opts)
	return err
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

// generalCall is a call through the general path, from the first attempt.
// Exactly one of fn and fnErr is set.
func generalCall[T any](ctx context.Context, s Schedule, fn func(context.Context) (T, error), fnErr func(context.Context) error, opts []Option) (T, error) {
	if g, ok := gateOf(opts); ok {
		return gatedCall(ctx, s, fn, fnErr, opts, g) // gate_call.go
	}
	var v T
	cfg := defaultConfig
	if len(opts) > 0 {
		cfg = newConfig(opts)
		if fnErr != nil {
			checkOptions[T](entryDo, opts)
		} else {
			checkOptions[T](entryRetry, opts)
		}
	}
	if ctx.Err() != nil {
		err := doneBefore(ctx)
		if cfg.hasDone {
			cfg.done(opts, time.Time{}, 0, err, context.Cause(ctx))
		}
		return v, err
	}
	var p pass
	g := gate{t: cfg.throttle, b: cfg.breaker, l: cfg.limiter}
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
	return general(ctx, s, fn, fnErr, &cfg, opts, start, v, err, own, &p)
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
	if l.fnErr != nil {
		err, own = callErr(l.ctx, l.fnErr, l.cfg.attempt())
	} else {
		l.v, err, own = call(l.ctx, l.fn, l.cfg.attempt())
	}
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
		l.notify(l.opts, c.clock, l.start, d)
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
// allocate them even on success; and the flat loop's frame, and the frames
// below which the flat loop runs user code, have no room to spare for a
// config.
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
func (r *runner) notify(opts []Option, clock Clock, start time.Time, d time.Duration) {
	returned := false
	defer refundUnless(&returned, opts) // a hook that panics stops the retry: see hook_panic.go
	a := Attempt{Number: r.n, Err: r.last, Delay: d, Elapsed: now(clock).Sub(start)}
	for i := range opts {
		if opts[i].kind == onRetryOption {
			opts[i].ref.(func(Attempt))(a)
		} else if f := logOf(opts[i]); f != nil {
			f(logEvent{kind: logRetryEvent, attempt: a})
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
