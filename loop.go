package retry

import (
	"context"
	"sync"
	"time"
)

// loop is the state of a Retry or Do call that retries. Everything the
// schedule's yield function touches is in it, and loops are recycled through
// a sync.Pool together with that yield function (bound once, when the loop is
// made), so a call that retries allocates nothing of its own but the real
// clock's timer, however many retries it makes. The timer is not recycled:
// under testing/synctest a timer belongs to the bubble that made it.
//
// A recycled yield function could in principle be called by a schedule that
// kept it after returning, against the iterator contract; step panics when
// that happens to a loop that is not running, as a range loop would.
type loop[T any] struct {
	v T // first: as the last field, a zero-size T (Do's) would be padded
	runner
	yield func(time.Duration) bool         // l.step, bound once
	fn    func(context.Context) (T, error) // Retry's
	fnErr func(context.Context) error      // or Do's
}

// loopPools holds one *sync.Pool of *loop[T] per type T, keyed by (*T)(nil).
var loopPools sync.Map

// doLoops is the pool of Do's loops, which need no lookup.
var doLoops = sync.Pool{New: func() any { return newLoop[struct{}]() }}

func newLoop[T any]() *loop[T] {
	l := new(loop[T])
	l.yield = l.step
	return l
}

// loopPool returns the pool of loops for T.
func loopPool[T any]() *sync.Pool {
	key := any((*T)(nil))
	if p, ok := loopPools.Load(key); ok {
		return p.(*sync.Pool)
	}
	p, _ := loopPools.LoadOrStore(key, &sync.Pool{New: func() any { return newLoop[T]() }})
	return p.(*sync.Pool)
}

// run retries after the first attempt failed with err, and returns the error
// to report (nil on success).
func (l *loop[T]) run(s Schedule, err error, own bool) error {
	if l.out, l.done = l.fail(err, own); !l.done {
		// Calling s with a yield function is what a range loop does, minus
		// the loop-state variable and closure the compiler would allocate.
		l.running = true
		s(l.yield)
		l.running = false
		if !l.done {
			l.out, l.done = l.giveUp(ErrExhausted), true
		}
	}
	return l.out
}

// step is the schedule's yield function: it waits d, makes the next attempt
// and reports whether to go on.
func (l *loop[T]) step(d time.Duration) bool {
	if !l.running || l.done {
		panic("retry: the schedule called yield after it returned false or after it returned")
	}
	if l.out, l.done = l.wait(d); l.done {
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
	if err == nil {
		l.out, l.done = nil, true
		return false
	}
	l.out, l.done = l.fail(err, own)
	return !l.done
}

// release clears l of everything the call left in it and puts it back in p,
// keeping its yield function and its extras.
func (l *loop[T]) release(p *sync.Pool) {
	yield, x := l.yield, l.x
	if x != nil {
		x.reset()
	}
	*l = loop[T]{yield: yield}
	l.x = x
	p.Put(l)
}

// runner holds the state of one call between attempts. It is not generic, so
// its logic is compiled once for all value types. It copies what it needs
// from the options rather than keep the caller's slice, which would then
// escape on every call, successful or not.
type runner struct {
	config
	// ctx is the call's context, kept here only while the call runs, because
	// the yield function the schedule calls has no other way to reach it.
	ctx     context.Context
	n       int   // attempts made
	last    error // the last attempt's error, unmarked
	pb      *pushbackError
	timer   *time.Timer // the real clock's, reused between the call's waits
	out     error       // the result, once done
	done    bool        // the call has its result
	running bool        // the schedule is running with this loop's yield
	x       *extras     // what only If, OnRetry or WithClock need; nil until then
}

// extras is the part of a runner that only calls with If, OnRetry or
// WithClock use, kept apart so that the state every waiting call holds stays
// small. It is made once for a recycled runner and kept with it.
type extras struct {
	preds []func(error) bool
	hooks []func(Attempt)
	start time.Time // on the clock, when hooks need Elapsed

	// With a custom clock, the context's deadline is tracked on that clock:
	// the time left at anchorReal on the real clock is spent as the custom
	// clock advances from anchorClock, so a FakeClock honours deadlines.
	anchored    bool
	anchorReal  time.Time
	anchorClock time.Time
}

// reset clears x for the next call, keeping the arrays of its lists.
func (x *extras) reset() {
	clear(x.preds)
	clear(x.hooks)
	*x = extras{preds: x.preds[:0], hooks: x.hooks[:0]}
}

// init prepares a recycled runner for a call whose first attempt, started at
// start, has failed.
func (r *runner) init(ctx context.Context, cfg config, opts []Option, start time.Time) {
	r.ctx, r.config, r.n = ctx, cfg, 1
	if !r.hasIf && !r.hasHooks && r.clock == nil {
		return
	}
	if r.x == nil {
		r.x = new(extras)
	}
	r.x.start = start
	if !r.hasIf && !r.hasHooks {
		return
	}
	for _, o := range opts {
		switch o.kind {
		case ifOption:
			r.x.preds = append(r.x.preds, o.ref.(func(error) bool))
		case onRetryOption:
			r.x.hooks = append(r.x.hooks, o.ref.(func(Attempt)))
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

// fail records the failed attempt r.n and decides whether to retry it. If
// not, it returns the error to report and true.
func (r *runner) fail(err error, own bool) (error, bool) {
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
	if r.budget != nil && !r.budget.withdraw() {
		return r.giveUp(ErrBudgetExhausted), true
	}
	if r.hasHooks {
		a := Attempt{Number: r.n, Err: r.last, Delay: d, Elapsed: r.now().Sub(r.x.start)}
		for _, h := range r.x.hooks {
			h(a)
		}
	}
	if err := r.sleep(d); err != nil {
		if r.ctx.Err() != nil {
			err = context.Cause(r.ctx)
		}
		return r.giveUp(err), true
	}
	if r.ctx.Err() != nil {
		return r.giveUp(context.Cause(r.ctx)), true
	}
	return nil, false
}

// untilDeadline returns how long is left before deadline, on the call's
// clock.
func (r *runner) untilDeadline(deadline time.Time) time.Duration {
	left := time.Until(deadline)
	if r.clock == nil {
		return left
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

func (r *runner) giveUp(reason error) error {
	return newError(r.n, r.last, reason)
}
