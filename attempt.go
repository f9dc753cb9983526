package retry

import (
	"context"
	"time"
)

// Attempt describes a failed attempt that is about to be retried; OnRetry
// hooks receive it before each wait.
type Attempt struct {
	// Number is the 1-based number of the attempt that just failed.
	Number int
	// Err is its error, without the Permanent, RetryAfter or RetryAt marker.
	Err error
	// Delay is the wait before the next attempt: the schedule's delay, or a
	// server's longer pushback (see RetryAfter).
	Delay time.Duration
	// Elapsed is the time since the first attempt started, on the Retry's
	// clock.
	Elapsed time.Duration
}

// Retry calls fn until it succeeds, waiting the delays of s between attempts,
// and returns fn's value and a nil error on success.
//
// The first attempt is made at once. After a failure, Retry stops and
// returns the error as it is when the error is Permanent, when a RetryAfter
// or RetryAt pushback is negative, or when an If predicate rejects it;
// otherwise it takes the next delay of s, waits on the clock (see WithClock)
// and tries again. It gives up with an *Error that unwraps to the reason and
// to the last error when
//   - s has no delay left: ErrExhausted;
//   - ctx is done: context.Cause(ctx), such as context.Canceled;
//   - the next wait would end after ctx's deadline: context.DeadlineExceeded,
//     at once, without waiting in vain;
//   - a Budget refuses the retry: ErrBudgetExhausted.
//
// On giving up, Retry returns the value of the last attempt along with the
// error. It checks ctx before every attempt and never calls fn with a done
// context; if ctx is done before the first attempt it returns the zero T and
// an *Error with no attempts. A panic in fn propagates to the caller.
//
// Retry ranges over s once per call (Retry keeps no state between calls), and
// keeps only the last error. Success on the first attempt allocates nothing;
// each call that retries allocates a small constant amount to start ranging
// over s, however many retries follow.
//
// Retry panics if s or fn is nil.
func Retry[T any](ctx context.Context, s Schedule, fn func(context.Context) (T, error), opts ...Option) (T, error) {
	mustSchedule("Retry", s)
	cfg := newConfig(opts)
	if ctx.Err() != nil {
		var zero T
		return zero, &Error{reason: context.Cause(ctx)}
	}
	if cfg.budget != nil {
		cfg.budget.credit()
	}
	var start time.Time
	if cfg.hasHooks {
		start = cfg.now()
	}
	v, err, own := call(ctx, fn, cfg.attemptTimeout)
	if err == nil {
		return v, nil
	}
	return retryLoop(ctx, s, fn, cfg, opts, start, v, err, own)
}

// Do is Retry for functions that return only an error.
//
// Do panics if s or fn is nil.
func Do(ctx context.Context, s Schedule, fn func(context.Context) error, opts ...Option) error {
	mustSchedule("Do", s)
	cfg := newConfig(opts)
	if ctx.Err() != nil {
		return &Error{reason: context.Cause(ctx)}
	}
	if cfg.budget != nil {
		cfg.budget.credit()
	}
	var start time.Time
	if cfg.hasHooks {
		start = cfg.now()
	}
	err, own := callErr(ctx, fn, cfg.attemptTimeout)
	if err == nil {
		return nil
	}
	l := &loop[struct{}]{runner: runner{config: cfg, start: start, n: 1}, fnErr: fn}
	return l.run(ctx, s, opts, err, own)
}

// call makes one attempt. With a timeout, fn gets a context that ends after
// it, released as soon as fn returns; own reports that fn failed after that
// context, not ctx, ended.
func call[T any](ctx context.Context, fn func(context.Context) (T, error), timeout time.Duration) (v T, err error, own bool) {
	if timeout == 0 {
		v, err = fn(ctx)
		return v, err, false
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err = fn(actx)
	return v, err, err != nil && actx.Err() != nil && ctx.Err() == nil
}

// callErr is call for Do's functions.
func callErr(ctx context.Context, fn func(context.Context) error, timeout time.Duration) (err error, own bool) {
	if timeout == 0 {
		return fn(ctx), false
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = fn(actx)
	return err, err != nil && actx.Err() != nil && ctx.Err() == nil
}

// retryLoop continues a Retry whose first attempt failed with err.
func retryLoop[T any](ctx context.Context, s Schedule, fn func(context.Context) (T, error), cfg config, opts []Option, start time.Time, v T, err error, own bool) (T, error) {
	l := &loop[T]{runner: runner{config: cfg, start: start, n: 1}, fn: fn, v: v}
	err = l.run(ctx, s, opts, err, own)
	return l.v, err
}

// loop is the state of a call that retries: everything the schedule's yield
// function touches is in it, so starting to retry costs two allocations, the
// loop and that function, however many retries follow.
type loop[T any] struct {
	runner
	fn    func(context.Context) (T, error) // Retry's
	fnErr func(context.Context) error      // or Do's
	v     T
	out   error // the result, once done
	done  bool
}

// run retries after the first attempt failed with err, and returns the error
// to report (nil on success).
func (l *loop[T]) run(ctx context.Context, s Schedule, opts []Option, err error, own bool) error {
	l.collect(opts)
	defer l.stop()
	if l.out, l.done = l.fail(ctx, err, own); l.done {
		return l.out
	}
	// Calling s with a yield function is what a range loop does, minus the
	// loop-state variable the compiler would allocate for it.
	s(func(d time.Duration) bool { return l.step(ctx, d) })
	if !l.done {
		l.out, l.done = l.giveUp(ErrExhausted), true
	}
	return l.out
}

// step waits d, makes the next attempt and reports whether to go on.
func (l *loop[T]) step(ctx context.Context, d time.Duration) bool {
	if l.done {
		panic("retry: the schedule called yield again after it returned false")
	}
	if l.out, l.done = l.wait(ctx, d); l.done {
		return false
	}
	var err error
	var own bool
	if l.fnErr != nil {
		err, own = callErr(ctx, l.fnErr, l.attemptTimeout)
	} else {
		l.v, err, own = call(ctx, l.fn, l.attemptTimeout)
	}
	l.n++
	if err == nil {
		l.done = true
		return false
	}
	l.out, l.done = l.fail(ctx, err, own)
	return !l.done
}

// runner holds the state of one Retry call between attempts. It is not
// generic, so its logic is compiled once for all value types. It lives on the
// heap (the loop body that uses it escapes into the schedule), so it copies
// what it needs from the options rather than keep the caller's slice, which
// would then escape on every call, successful or not.
type runner struct {
	config
	preds []func(error) bool
	hooks []func(Attempt)

	start time.Time // on the clock, when hooks need Elapsed
	n     int       // attempts made
	last  error     // the last attempt's error, unmarked
	pb    *pushbackError
	timer *time.Timer // the real clock's, reused between waits

	// With a custom clock, the context's deadline is tracked on that clock:
	// the time left at anchorReal on the real clock is spent as the custom
	// clock advances from anchorClock, so a FakeClock honours deadlines.
	anchored    bool
	anchorReal  time.Time
	anchorClock time.Time
}

// collect copies the If predicates and OnRetry hooks of opts, in order.
func (r *runner) collect(opts []Option) {
	if !r.hasIf && !r.hasHooks {
		return
	}
	for _, o := range opts {
		switch o.kind {
		case ifOption:
			r.preds = append(r.preds, o.ref.(func(error) bool))
		case onRetryOption:
			r.hooks = append(r.hooks, o.ref.(func(Attempt)))
		}
	}
}

// retryable reports whether every If predicate accepts err.
func (r *runner) retryable(err error) bool {
	for _, p := range r.preds {
		if !p(err) {
			return false
		}
	}
	return true
}

// fail records the failed attempt r.n and decides whether to retry it. If
// not, it returns the error to report and true.
func (r *runner) fail(ctx context.Context, err error, own bool) (error, bool) {
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
	if ctx.Err() != nil {
		return r.giveUp(context.Cause(ctx)), true
	}
	return nil, false
}

// wait waits the delay d from the schedule (or the server's longer pushback)
// before the next attempt. If the retry must not happen, it returns the error
// to report and true.
func (r *runner) wait(ctx context.Context, d time.Duration) (error, bool) {
	if r.pb != nil {
		d = max(d, min(r.pb.wait(r.now()), r.maxPushback))
	}
	if deadline, ok := ctx.Deadline(); ok && d >= r.untilDeadline(deadline) {
		return r.giveUp(context.DeadlineExceeded), true
	}
	if r.budget != nil && !r.budget.withdraw() {
		return r.giveUp(ErrBudgetExhausted), true
	}
	if len(r.hooks) > 0 {
		a := Attempt{Number: r.n, Err: r.last, Delay: d, Elapsed: r.now().Sub(r.start)}
		for _, h := range r.hooks {
			h(a)
		}
	}
	if err := r.sleep(ctx, d); err != nil {
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return r.giveUp(err), true
	}
	if ctx.Err() != nil {
		return r.giveUp(context.Cause(ctx)), true
	}
	return nil, false
}

// untilDeadline returns how long is left before deadline, on the Retry's
// clock.
func (r *runner) untilDeadline(deadline time.Time) time.Duration {
	left := time.Until(deadline)
	if r.clock == nil {
		return left
	}
	now := r.clock.Now()
	if !r.anchored {
		r.anchored, r.anchorReal, r.anchorClock = true, time.Now(), now
	}
	return min(left, deadline.Sub(r.anchorReal)-now.Sub(r.anchorClock))
}

func (r *runner) sleep(ctx context.Context, d time.Duration) error {
	if r.clock != nil {
		return r.clock.Sleep(ctx, d)
	}
	if d <= 0 {
		return ctx.Err()
	}
	if r.timer == nil {
		r.timer = time.NewTimer(d)
	} else {
		r.timer.Reset(d)
	}
	select {
	case <-r.timer.C:
		return nil
	case <-ctx.Done():
		r.timer.Stop()
		return ctx.Err()
	}
}

func (r *runner) stop() {
	if r.timer != nil {
		r.timer.Stop()
	}
}

func (r *runner) giveUp(reason error) error {
	return &Error{Attempts: r.n, Last: r.last, reason: reason}
}
