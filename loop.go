package retry

import (
	"context"
	"sync/atomic"
	"time"
)

// loop is the state of a Retry or Do call that retries, and its step is the
// yield function the call hands its schedule. A loop is made for one call
// and never reused: a schedule that keeps the yield function and calls it
// after returning, against the iterator contract, finds the loop's state
// ended and panics, having read nothing but that atomic state, so it cannot
// reach any other call, whichever goroutine it calls from. This costs the
// call two allocations (the loop and its bound step) on top of the real
// clock's timer; a call that succeeds at once makes no loop.
type loop[T any] struct {
	v T // first: as the last field, a zero-size T (Do's) would be padded
	runner
	state atomic.Uint32                    // yieldOpen, yieldStopped or yieldEnded
	fn    func(context.Context) (T, error) // Retry's
	fnErr func(context.Context) error      // or Do's
	preds []func(T) bool                   // IfValue's; nil without
}

// run retries after the first attempt failed with err, and returns the error
// to report (nil on success).
func (l *loop[T]) run(s Schedule, err error, own bool) error {
	if l.out, l.done = l.fail(err, own); !l.done {
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
	var err error
	var own bool
	if l.fnErr != nil {
		err, own = callErr(l.ctx, l.fnErr, &l.config)
	} else {
		l.v, err, own = call(l.ctx, l.fn, &l.config)
	}
	l.n++
	if err == nil && (l.preds == nil || !rejects(l.preds, l.v)) {
		l.out, l.done = nil, true
	} else {
		l.out, l.done = l.fail(err, own)
	}
	if l.done {
		l.state.Store(yieldStopped)
		return false
	}
	return true
}

// runner holds the state of one call between attempts. It is not generic, so
// its logic is compiled once for all value types. It copies what it needs
// from the options rather than keep the caller's slice, which would then
// escape on every call, successful or not.
type runner struct {
	config
	// ctx is the call's context, kept here only while the call runs, because
	// the yield function the schedule calls has no other way to reach it.
	ctx    context.Context
	n      int   // attempts made
	last   error // the last attempt's error, unmarked
	pb     *pushbackError
	timer  *time.Timer // the real clock's, reused between the call's waits
	out    error       // the result, once done
	reason error       // why the call gave up, once it has; nil otherwise
	done   bool        // the call has its result
	x      *extras     // what only If, OnRetry, MaxElapsed, MaxRetriesIf or a custom clock's deadline need; nil until then
}

// extras is the part of a runner that only calls with If, OnRetry,
// MaxElapsed or MaxRetriesIf, or a deadline on a custom clock, use, kept
// apart so that the state every waiting call holds stays small.
type extras struct {
	preds  []func(error) bool
	hooks  []func(Attempt)
	limits []limit   // MaxRetriesIf's, with this call's counts
	start  time.Time // on the clock, when hooks need Elapsed or MaxElapsed its limit

	// With a custom clock, the context's deadline is tracked on that clock:
	// the time left at anchorReal on the real clock is spent as the custom
	// clock advances from anchorClock, so a FakeClock honours deadlines.
	anchored    bool
	anchorReal  time.Time
	anchorClock time.Time
}

// limit is a MaxRetriesIf option and the count of the call's failures it
// matched.
type limit struct {
	match   func(error) bool
	retries int // allowed
	seen    int // matching failures so far
}

// init prepares r for a call whose first attempt, started at start, has
// failed.
func (r *runner) init(ctx context.Context, cfg config, opts []Option, start time.Time) {
	r.ctx, r.config, r.n = ctx, cfg, 1
	if !r.hasIf && !r.hasHooks && r.maxElapsed == 0 && !r.hasLimits {
		return
	}
	r.x = &extras{start: start}
	if !r.hasIf && !r.hasHooks && !r.hasLimits {
		return
	}
	for _, o := range opts {
		switch o.kind {
		case ifOption:
			r.x.preds = append(r.x.preds, o.ref.(func(error) bool))
		case onRetryOption:
			r.x.hooks = append(r.x.hooks, o.ref.(func(Attempt)))
		case maxRetriesIfOption:
			r.x.limits = append(r.x.limits, limit{match: o.ref.(func(error) bool), retries: o.n})
		}
	}
}

// retryable reports whether every If predicate accepts err.
func (r *runner) retryable(err error) bool {
	if !r.hasIf {
		return true
	}
	for _, p := range r.x.preds {
		if !p(err) {
			return false
		}
	}
	return true
}

// exceeded counts err against the MaxRetriesIf limits and reports whether
// one of them has no retry left for it.
func (r *runner) exceeded(err error) bool {
	for i := range r.x.limits {
		l := &r.x.limits[i]
		if l.match(err) {
			if l.seen++; l.seen > l.retries {
				return true
			}
		}
	}
	return false
}

// fail records the failed attempt r.n, whose error is err or, if err is
// nil, whose value IfValue rejected, and decides whether to retry it. If
// not, it returns the error to report and true.
func (r *runner) fail(err error, own bool) (error, bool) {
	if err == nil {
		r.last, r.pb = nil, nil
		if r.ctx.Err() != nil {
			return r.giveUp(context.Cause(r.ctx)), true
		}
		return nil, false
	}
	permanent, pb := markers(err)
	r.last, r.pb = unmark(err), pb
	if permanent {
		return r.last, true
	}
	if pb.refused() {
		return r.last, true
	}
	if !own && !r.retryable(r.last) {
		return r.last, true
	}
	if r.ctx.Err() != nil {
		return r.giveUp(context.Cause(r.ctx)), true
	}
	if r.hasLimits && r.exceeded(r.last) {
		return r.giveUp(ErrExhausted), true
	}
	return nil, false
}

// wait waits the delay d from the schedule (or the server's longer pushback)
// before the next attempt. If the retry must not happen, it returns the error
// to report and true.
func (r *runner) wait(d time.Duration) (error, bool) {
	if r.pb != nil {
		d = max(d, min(r.pb.wait(r.now), r.maxPushback))
	}
	if deadline, ok := r.ctx.Deadline(); ok && d >= r.untilDeadline(deadline) {
		return r.giveUp(context.DeadlineExceeded), true
	}
	if r.maxElapsed > 0 && d > r.maxElapsed-max(r.now().Sub(r.x.start), 0) {
		return r.giveUp(ErrMaxElapsed), true
	}
	if r.budget != nil && !r.budget.withdraw() {
		return r.giveUp(ErrBudgetExhausted), true
	}
	if r.hasHooks {
		a := Attempt{Number: r.n, Err: r.last, Delay: d, Elapsed: r.now().Sub(r.x.start)}
		for _, h := range r.x.hooks {
			h(a)
		}
	}
	err := r.sleep(d)
	if err == nil && r.ctx.Err() == nil {
		return nil, false
	}
	// The retry will not happen: a retry that does not happen costs nothing.
	if r.budget != nil {
		r.budget.refund()
	}
	if err == nil || r.ctx.Err() != nil {
		err = context.Cause(r.ctx)
	}
	return r.giveUp(err), true
}

// untilDeadline returns how long is left before deadline, on the call's
// clock.
func (r *runner) untilDeadline(deadline time.Time) time.Duration {
	left := time.Until(deadline)
	if r.clock == nil {
		return left
	}
	if r.x == nil {
		r.x = new(extras)
	}
	now, x := r.clock.Now(), r.x
	if !x.anchored {
		x.anchored, x.anchorReal, x.anchorClock = true, time.Now(), now
	}
	return min(left, deadline.Sub(x.anchorReal)-now.Sub(x.anchorClock))
}

// sleep waits d on the call's clock, or until ctx ends. The real clock's
// timer is made on the call's first wait and then reset; it is expired or
// stopped whenever sleep returns.
func (r *runner) sleep(d time.Duration) error {
	if r.clock != nil {
		return r.clock.Sleep(r.ctx, d)
	}
	if d <= 0 {
		return r.ctx.Err()
	}
	if r.timer == nil {
		r.timer = time.NewTimer(d)
	} else {
		r.timer.Reset(d)
	}
	select {
	case <-r.timer.C:
		return nil
	case <-r.ctx.Done():
		r.timer.Stop()
		return r.ctx.Err()
	}
}

// giveUp records reason and returns the *Error of a call that gives up
// for it.
func (r *runner) giveUp(reason error) error {
	r.reason = reason
	return newError(r.n, r.last, reason)
}
