package retry

import (
	"context"
	"time"
)

// The flat retry loop: what Retry and Do run when the schedule is a plan's
// (see plan.go) and the flat loop handles every option of the call. It makes
// the same decisions as the general path, through the same runner methods,
// but draws each delay from a planIter in its own frame and waits in its own
// select: a parked call holds nothing on the heap but its timer, and its
// stack is its caller's frames, Do's or Retry's, and this one, so it stays in
// the goroutine's first 2 KiB (TestParkedStack). The rare paths (pushback,
// deadlines, budgets, hooks, custom clocks, giving up) are the runner's
// methods, out of line.

// flatKinds are the options the flat loop handles. A call with any other option
// goes the general way, so an option added later needs only that one.
const flatKinds = 1<<noOption | 1<<clockOption | 1<<ifOption | 1<<onRetryOption | 1<<budgetOption |
	1<<pushbackOption | 1<<attemptTimeoutOption | 1<<observeOption

// flat reports whether the flat loop handles every option in opts.
func flat(opts []Option) bool {
	for i := range opts {
		if k := opts[i].kind; k >= 64 || flatKinds&(1<<k) == 0 {
			// Only a log option can be silent: asking the others would
			// copy each one into silent's frame, on every call.
			if k != logOption || !silent(opts[i]) {
				return false
			}
		}
	}
	return true
}

// retrying is Retry and Do. Exactly one of fn (Retry's) and fnErr (Do's,
// with T struct{}) is set.
//
// A call without options makes its first attempt at once and, if it
// succeeds, returns: that is the whole cost of a call that does not retry.
// A call on a plan's Schedule whose options the flat loop all handles then
// retries in this function's frame, drawing its delays from a planIter;
// any other goes the general way (loop.go).
//
// This frame, and the caller's, are all a waiting call holds on its
// goroutine's stack (Retry and Do are inlined), so everything but the wait
// itself is out of line: flatState's methods decide, and with options they
// rebuild the call's config from opts in their own frames rather than keep
// it in this one.
func retrying[T any](ctx context.Context, s Schedule, fn func(context.Context) (T, error), fnErr func(context.Context) error, opts []Option) (T, error) {
	if s == nil || fn == nil && fnErr == nil {
		badCall(s, fnErr != nil)
	}
	var v T
	var err error
	var start *time.Time
	own := false
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
	} else {
		if planOf(s) == nil || !flat(opts) {
			if fnErr != nil {
				return v, generalDo(ctx, s, fnErr, po)
			}
			return generalRetry(ctx, s, fn, po)
		}
		if ctx.Err() != nil {
			return v, doneBefore(ctx)
		}
		if v, start, err, own = firstAttempt(ctx, fn, fnErr, po); err == nil {
			return v, nil
		}
	}
	var f flatState
	f.start, f.n = start, 1
	f.it.init(planOf(s)) // again: a variable kept across the first attempt would take room

	// The timer is a variable of its own, not part of f: the runtime keeps
	// a timer, and escape analysis would then see all of f as kept.
	var timer *time.Timer
	for {
		var d time.Duration
		if len(opts) == 0 {
			d, err = f.decide(ctx, err)
		} else {
			d, err = f.decideWith(ctx, po, err, own)
		}
		if d < 0 {
			return v, err
		}
		// The general path's sleep on the real clock, written out so that
		// the call parks in this frame (decideWith has waited on a custom
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
		if err != nil || ctx.Err() != nil {
			if len(opts) == 0 {
				return v, f.abandon(ctx, nil, err)
			}
			return v, f.abandonWith(ctx, po, err)
		}
		if len(opts) == 0 {
			if fnErr != nil {
				err = fnErr(ctx)
			} else {
				v, err = fn(ctx)
			}
		} else {
			v, err, own = attemptWith(ctx, fn, fnErr, po)
		}
		f.n++
		if err == nil {
			return v, nil
		}
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
// out of line. The flat loop keeps no config, and neither do the frames
// below which it draws a delay (the draw goes deep, into the random
// generator), calls OnRetry hooks or waits on a custom clock: with options,
// the helpers read what each decision needs from opts, in frames of their
// own that return first.

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

// decideWith is decide for a call with options *opts, after an attempt that
// failed after its own AttemptTimeout if own. With a custom clock it also
// waits, on that clock, and returns 0 (a wait already made).
//
//go:noinline
func (f *flatState) decideWith(ctx context.Context, opts *[]Option, err error, own bool) (time.Duration, error) {
	pb, out, done := f.fail(ctx, *opts, has(*opts, ifOption), err, own)
	if done {
		return -1, out
	}
	d, ok := f.it.next()
	if !ok {
		return -1, f.giveUp(ErrExhausted)
	}
	if d, out = f.allowWith(ctx, opts, pb, d); out != nil {
		return -1, out
	}
	clock := clockOf(*opts)
	if f.start != nil {
		f.notify(*opts, clock, *f.start, d)
	}
	if clock == nil {
		return d, nil
	}
	if err := clock.Sleep(ctx, d); err != nil || ctx.Err() != nil {
		return -1, f.abandonWith(ctx, opts, err)
	}
	return 0, nil
}

// allowWith is the runner's allow for a call with options.
//
//go:noinline
func (f *flatState) allowWith(ctx context.Context, opts *[]Option, pb *pushbackError, d time.Duration) (time.Duration, error) {
	maxPushback, budget := defaultMaxPushback, (*Budget)(nil)
	for _, o := range *opts {
		switch o.kind {
		case pushbackOption:
			maxPushback = o.d
		case budgetOption:
			budget = o.ref.(*Budget)
		}
	}
	return f.allow(ctx, clockOf(*opts), maxPushback, budget, pb, d)
}

// abandonWith is the runner's abandon for a call with options.
//
//go:noinline
func (f *flatState) abandonWith(ctx context.Context, opts *[]Option, err error) error {
	var budget *Budget
	for _, o := range *opts {
		if o.kind == budgetOption {
			budget = o.ref.(*Budget)
		}
	}
	return f.abandon(ctx, budget, err)
}

// has reports whether an option of kind is among opts.
func has(opts []Option, kind optionKind) bool {
	for i := range opts {
		if opts[i].kind == kind {
			return true
		}
	}
	return false
}

// clockOf returns the clock that opts set, nil for the real one.
func clockOf(opts []Option) Clock {
	var c Clock
	for i := range opts {
		if opts[i].kind == clockOption {
			c = opts[i].clock
		}
	}
	return c
}

// firstAttempt makes the first attempt of a call with options, having done
// what starting it requires (see config.begin). If the attempt failed and
// OnRetry hooks need the start time, it returns it on the heap: the rarest
// part of a call's state, kept out of the flat loop's frame, and made only
// when the call retries.
//
//go:noinline
func firstAttempt[T any](ctx context.Context, fn func(context.Context) (T, error), fnErr func(context.Context) error, opts *[]Option) (v T, start *time.Time, err error, own bool) {
	a, began, hooks := begin(opts)
	if v, err, own = attempt(ctx, fn, fnErr, a); err != nil && hooks {
		start = new(time.Time)
		*start = began
	}
	return v, start, err, own
}

// begin does what starting a call with options requires (see config.begin),
// and returns what an attempt needs, the start time and whether hooks need
// it.
//
//go:noinline
func begin(opts *[]Option) (attemptConfig, time.Time, bool) {
	cfg := newConfig(*opts)
	start := cfg.begin()
	return cfg.attempt(), start, cfg.hasHooks
}

// attemptWith makes one attempt of a call with options.
//
//go:noinline
func attemptWith[T any](ctx context.Context, fn func(context.Context) (T, error), fnErr func(context.Context) error, opts *[]Option) (v T, err error, own bool) {
	return attempt(ctx, fn, fnErr, attemptOf(opts))
}

// attemptOf returns what making an attempt needs of a call with options.
//
//go:noinline
func attemptOf(opts *[]Option) attemptConfig {
	cfg := newConfig(*opts)
	return cfg.attempt()
}
