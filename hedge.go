package retry

import (
	"context"
	"time"
)

// Hedge calls fn and, while no attempt has succeeded, starts another attempt
// each time a delay of s elapses, so that a slow attempt is raced by fresh
// ones; it returns the first success. Retries fight failures; hedging fights
// slowness (see "The Tail at Scale", Dean and Barroso, 2013).
//
// The first attempt starts at once; each delay of s counts from the start of
// the most recent attempt, and at most 10 attempts run at once. The first
// success wins: Hedge returns its value at once and cancels the other
// attempts, whose context.Cause is then ErrHedgeLost, without waiting for
// them (see OnDiscard). A retryable failure starts the next attempt at once, or
// once its pushback has elapsed; any other failure ends the call as Retry
// does. Hedge gives up with an *Error that unwraps to the reason
// (ErrExhausted, ErrBudgetExhausted, ErrThrottled, ErrBreakerOpen,
// ErrMaxElapsed or context.Cause(ctx)) and to the last failure's error. How
// each option acts on it is in the package documentation ("Options and entry
// points"); pushback, Clock and cost in docs/HEDGING.md ("Hedge in detail").
//
// Every attempt runs on a goroutine of its own; once every call of fn has
// returned, nothing of Hedge remains. A panic or runtime.Goexit in fn that
// reaches Hedge before it has decided is raised again on the caller's
// goroutine. Hedge panics if s or fn is nil, if a OnDiscard option's function
// does not take a T, or if given an IfValue, before any attempt.
func Hedge[T any](ctx context.Context, s Schedule, fn func(context.Context) (T, error), opts ...Option) (T, error) {
	mustSchedule("Hedge", s)
	if fn == nil {
		panic("retry: Hedge: nil function")
	}
	checkOptions[T](entryHedge, opts)
	release := releaseOf[T](opts)
	cfg := newConfig(opts)
	reports := hedgeReports(opts)
	if ctx.Err() != nil {
		var zero T
		err := doneBefore(ctx)
		if cfg.hasDone {
			cfg.done(opts, time.Time{}, 0, err, context.Cause(ctx))
		}
		if reports {
			cfg.report(opts, time.Time{}, 0, err, context.Cause(ctx), HedgeResult{})
		}
		return zero, err
	}
	g := gate{t: cfg.throttle, b: cfg.breaker, l: cfg.limiter}
	var first pass
	if g.on() {
		var reason error
		if first, reason = g.enter(ctx); reason != nil {
			var zero T
			err := newError(0, nil, reason)
			if cfg.hasDone {
				cfg.done(opts, time.Time{}, 0, err, reason)
			}
			if reports {
				cfg.report(opts, time.Time{}, 0, err, reason, HedgeResult{})
			}
			return zero, err
		}
	}
	h := &hedge[T]{ctx: ctx, fn: fn, release: release, cfg: cfg, gate: g, wake: make(chan struct{}, 1), reports: reports}
	if g.on() {
		h.passes = append(h.passes, first)
	}
	if h.cfg.hasIf || h.cfg.hasHooks {
		h.keep(opts)
	}
	if h.cfg.hasLimits {
		h.rare().limits = limitsOf(opts)
	}
	if c, ok := h.cfg.clock.(*FakeClock); ok && c != nil {
		h.sequential = true
	}
	h.pending = h.inline[:0]
	h.ctxDone = ctx.Done()
	h.actx, h.cancel = context.WithCancelCause(ctx)
	if start := h.cfg.begin(); h.cfg.hasHooks || h.cfg.hasDone || h.cfg.maxElapsed > 0 {
		h.rare().start = start
	} else if reports {
		h.rare().start = h.cfg.now()
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
	if reports {
		h.cfg.report(opts, h.x.start, h.calls, h.err, h.x.reason, HedgeResult{Winner: int(h.winner), Failed: int(h.failed)})
	}
	return h.v, h.err
}

// keep copies the If and OnRetry options of opts into h, rather than keep
// the caller's slice, which would then escape on every call with options.
func (h *hedge[T]) keep(opts []Option) {
	n := 0
	for _, o := range opts {
		if o.kind == ifOption || o.kind == onRetryOption || o.kind == logOption {
			n++
		}
	}
	x := h.rare()
	x.opts = make([]Option, 0, n)
	for _, o := range opts {
		if o.kind == ifOption || o.kind == onRetryOption || o.kind == logOption {
			x.opts = append(x.opts, o)
		}
	}
}

// releaseOf returns the function that releases dropped values for the
// OnDiscard options in opts, checked by checkOptions, or nil.
func releaseOf[T any](opts []Option) func(T) {
	var release func(T)
	for _, o := range opts {
		if o.kind != discardOption {
			continue
		}
		f := o.ref.(func(T))
		if release == nil {
			release = f
			continue
		}
		prev := release
		release = func(v T) { prev(v); f(v) }
	}
	return release
}
