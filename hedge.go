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
// # Attempts
//
// The first attempt starts at once. The i-th delay of s is how long Hedge
// waits after the most recent attempt started before it starts another one,
// while none has succeeded; Constant(50*time.Millisecond).Take(2) makes at
// most 3 attempts, at 0, 50 ms and 100 ms. A negative delay counts as 0. When
// s has no delay left, no more attempts start and Hedge waits for those
// outstanding. At most 10 attempts run at once: while 10 are outstanding, no
// delay elapses, and only a failure starts the next attempt, so that a
// schedule of zero delays with no end cannot start goroutines without bound.
//
// # Winning and giving up
//
// The first success wins: Hedge returns its value and a nil error at once,
// and cancels the context of every other attempt, whose context.Cause is then
// ErrHedgeLost. Hedge does not wait for the losers to return; what they
// return is dropped (see OnDiscard for values that hold resources). Of the
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
//   - every attempt failed after MaxElapsed's limit stopped new ones:
//     ErrMaxElapsed;
//   - a Throttle or Breaker did not let an attempt through: ErrThrottled or
//     ErrBreakerOpen (see Options below);
//   - ctx is done: context.Cause(ctx); the attempts are cancelled with it.
//     A success that reached Hedge before it saw ctx end still wins, and a
//     failure that comes after is not kept as the last failure: it is mostly
//     the attempt's answer to the end of its context.
//
// The *Error's Attempts counts the calls of fn. Hedge never calls fn once ctx
// is done or once it has decided: an attempt whose goroutine starts after
// that does not call fn, and if it was a hedge, gives its Budget token back.
// The check and the count are made under Hedge's lock, and the losers are
// cancelled after it is released, so an attempt that began at the very moment
// another won can find its context already cancelled (cause ErrHedgeLost)
// when fn starts: it is a loser like any other, and counts among Attempts. If
// ctx is done before the first attempt, Hedge returns the zero T and an
// *Error with no attempts.
//
// # Pushback
//
// A server's pushback (RetryAfter, RetryAt) is honoured as gRPC's A6
// specifies for hedging: a retryable failure that carries one starts the next
// attempt once the pushback has elapsed (at most MaxPushback), rather than at
// once, and the next delay of s counts from that attempt; meanwhile other
// failures do not start it early, and a later pushback starts the wait again.
// A negative pushback, a request not to retry, stops any more attempts from
// starting, while those outstanding go on: if none of them succeeds, Hedge
// returns that failure's value and error as they are, as Retry does.
//
// # Options
//
// Which options Hedge takes is the package documentation's table "Options
// and entry points". On Hedge, OnRetry is called on Hedge's goroutine before
// each attempt after the first: Number is the number of attempts started so
// far, Err the failure that triggered it or nil when a delay elapsed, Delay
// the delay used up or the pushback waited for, Elapsed the time since the
// first attempt started. WithBudget: each attempt after the first withdraws a
// token; a refusal only stops further attempts, and those outstanding go on.
// AttemptTimeout is per attempt; an attempt that fails after its own timeout
// counts as a retryable failure. WithLatency records every attempt, a loser as
// the time it ran, unless the caller's context ended it. OnDone's Attempts
// counts the calls of fn, as the *Error's does; OnHedgeDone reports OnDone's
// Outcome with the attempt that won and the failures handled. WithThrottle
// and WithBreaker: every attempt asks them before it starts, on Hedge's
// goroutine. If the first attempt is not let through, Hedge returns at once
// with an *Error of no attempts whose reason matches ErrThrottled or ErrBreakerOpen;
// if a later one is not, no more attempts start, those outstanding go on, and
// if none of them succeeds Hedge gives up with that reason. An attempt Hedge
// cancels because another won counts for neither, as one ended by the
// caller's context does.
//
// # Goroutines and panics
//
// Every attempt runs on a goroutine of its own, never on the caller's, so
// Hedge returns as soon as an attempt wins even while another ignores its
// context. Once every call of fn has returned, nothing of Hedge remains: no
// goroutine, timer or context. A panic in fn that reaches Hedge before it has
// decided its result is raised again, with the same value (but not its
// stack), on the goroutine that called Hedge; after that, it is not recovered
// and ends the program, with its own stack, as a panic in any goroutine does.
// A runtime.Goexit in fn is likewise repeated on the caller's goroutine, or
// after that just ends the attempt's.
//
// # Timing
//
// With the real clock (the default), each delay is waited on a timer; under
// testing/synctest every timing above is exact. With a FakeClock, whose time
// moves only when something sleeps on it, an attempt takes no time at all, so
// it always answers before a delay could elapse: Hedge then makes its
// attempts one at a time, each retryable failure starting the next at once
// (or after its pushback, slept on the clock), which makes the outcome
// independent of how the goroutines are scheduled (an attempt that blocks
// then blocks Hedge until ctx ends). To test real overlap, use
// testing/synctest. Any other Clock is slept on by Hedge's goroutine, and the
// sleep is interrupted when an attempt returns.
//
// # Cost
//
// When the first attempt succeeds before the first delay, Hedge adds to the
// call of fn a goroutine and a channel hand-off, a context with a cause, a
// timer armed and stopped (unless the attempt answered before Hedge needed
// it) and its own state: 6 allocations and 728 bytes (see BenchmarkHedge). If,
// OnRetry and OnDone add one allocation, and a Schedule that is not built
// from this package's functions one more, for the yield function Hedge hands
// it.
//
// # Schedules
//
// Hedge ranges over s once, by calling it with a yield function that is valid
// for that one run: called after it returned false, after s returned, or by
// two goroutines at once, it panics. If s returns while a call of its yield
// function runs on another goroutine, Hedge makes that call return false,
// waits for it and panics. Hedge keeps only the last error.
//
// # Panics
//
// Hedge panics if s or fn is nil, if an OnDiscard option's function does not
// take a T, or if given an IfValue, before any attempt.
func Hedge[T any](ctx context.Context, s Schedule, fn func(context.Context) (T, error), opts ...Option) (T, error) {
	mustSchedule("Hedge", s)
	if fn == nil {
		panic("retry: Hedge: nil function")
	}
	checkOptions[T](entryHedge, opts)
	release := releaseOf[T](opts)
	var cfg config
	cfg.fold(opts)
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
	g := cfg.gate()
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
