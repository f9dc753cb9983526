package retry

import (
	"time"
)

// config is the result of applying a call's options.
//
// OnDone, MaxElapsed, IfValue, MaxRetriesIf, WithThrottle, WithBreaker and
// WithLimiter are handled by the general runner (loop.go) only: a call with
// hasDone, maxElapsed, hasValue, hasLimits, throttle, breaker or limiter set
// must take that path.
type config struct {
	clock          Clock // nil: the real clock
	budget         *Budget
	latency        *Latency // WithLatency's
	maxPushback    time.Duration
	attemptTimeout time.Duration
	maxElapsed     time.Duration // MaxElapsed's; 0: none
	hasIf          bool          // some option is an If
	hasHooks       bool          // some option is an OnRetry
	hasDone        bool          // some option is an OnDone
	hasValue       bool          // some option is an IfValue
	hasLimits      bool          // some option is a MaxRetriesIf
	throttle       *Throttle     // WithThrottle's
	breaker        *Breaker      // WithBreaker's
	limiter        *Limiter      // WithLimiter's

	// The way a Retry or Do call goes (Hedge has one way): flat if the flat
	// loop (loop.go) handles every option, on a plan's Schedule; gated
	// if the options are WithThrottle, WithBreaker, WithLimiter (one at
	// least) and WithClock alone, whose first attempt needs no more (see
	// gatedCall).
	flat, gated bool
}

// fold sets c from opts, over the zero config: the one place that reads
// what a call's options set, for the flat loop, the general loop and Hedge
// alike. It keeps no reference to opts, so neither the options nor the
// config escape: a call with options allocates nothing until it has to
// retry. It writes c in place rather than return a config: a returned
// config, built a field at a time and then copied whole, stalls the copy
// on its own stores and cost the gated hot path 12 ns (BenchmarkHotPath).
//
// It is never inlined: its temporaries would take room in the frames of
// the helpers below which fn runs.
//
//go:noinline
func (c *config) fold(opts []Option) {
	c.maxPushback = defaultMaxPushback
	var kinds uint64 // bit k: an option of kind k
	loud := false    // a WithLogger option logs something
	for i := range opts {
		o := &opts[i]
		kinds |= 1 << min(o.kind, 63) // 63: no kind of Retry's (OnHedgeDone is 128)
		switch o.kind {
		case clockOption:
			c.clock = o.clock
		case ifOption:
			c.hasIf = true
		case onRetryOption:
			c.hasHooks = true
		case budgetOption:
			c.budget = o.ref.(*Budget)
		case pushbackOption:
			c.maxPushback = o.d
		case attemptTimeoutOption:
			c.attemptTimeout = o.d
		case observeOption:
			c.latency = o.ref.(*Latency)
		case onDoneOption:
			c.hasDone = true
		case maxElapsedOption:
			c.maxElapsed = o.d
		case ifValueOption:
			c.hasValue = true
		case maxRetriesIfOption:
			c.hasLimits = true
		case throttleOption:
			c.throttle = o.ref.(*Throttle)
		case breakerOption:
			c.breaker = o.ref.(*Breaker)
		case logOption:
			loud = c.addLogger(o.ref.(logFunc)) || loud
		case limiterOption:
			c.limiter = o.ref.(*Limiter)
		}
	}
	c.flat = kinds&^(flatKinds|1<<logOption) == 0 && !loud
	c.gated = kinds&^gateKinds == 0 && (c.throttle != nil || c.breaker != nil || c.limiter != nil)
}

// flatKinds are the options the flat loop handles, with WithLogger options
// that log nothing. A call with any other option goes the general way, so an
// option added later needs only that one.
const flatKinds = 1<<noOption | 1<<clockOption | 1<<ifOption | 1<<onRetryOption | 1<<budgetOption |
	1<<pushbackOption | 1<<attemptTimeoutOption | 1<<observeOption

// gateKinds are the options of a gated call.
const gateKinds = 1<<noOption | 1<<clockOption | 1<<throttleOption | 1<<breakerOption | 1<<limiterOption

// addLogger records in c what the WithLogger option f will log: OnRetry's
// and OnDone's paths are taken only for the levels its logger has enabled.
// It reports whether f logs anything at all: a logger with none of its
// levels enabled leaves a call to the flat loop.
func (c *config) addLogger(f logFunc) bool {
	l := f(logEvent{kind: probe})
	c.hasHooks = c.hasHooks || l&logsHooks != 0
	c.hasDone = c.hasDone || l&logsDone != 0
	return l != 0
}

// defaultConfig is the config of a call without options: what fold makes
// of none (TestFoldNothing).
var defaultConfig = config{maxPushback: defaultMaxPushback, flat: true}

// begin does what starting a call with options requires: it deposits into
// the budget, and returns the start time when OnRetry or OnDone need
// Elapsed, or MaxElapsed its limit.
func (c *config) begin() time.Time {
	if c.budget != nil {
		c.budget.credit()
	}
	if c.hasHooks || c.hasDone || c.maxElapsed > 0 {
		return c.now()
	}
	return time.Time{}
}

func (c *config) now() time.Time {
	if c.clock == nil {
		return time.Now()
	}
	return c.clock.Now()
}

// The readers of a call's options: the hooks among them, called when their
// event comes. They read opts without keeping them, so they do not escape.

// done calls the OnDone hooks of opts with the outcome of a call that
// started at start (the zero Time if no attempt was made), made attempts
// attempts and returns err for reason.
func (c *config) done(opts []Option, start time.Time, attempts int, err, reason error) {
	o := Outcome{Attempts: attempts, Err: err, Reason: reason}
	if attempts > 0 {
		o.Elapsed = c.now().Sub(start)
	}
	for _, opt := range opts {
		if opt.kind == onDoneOption {
			opt.ref.(func(Outcome))(o)
		} else if f := logOf(opt); f != nil {
			f(logEvent{kind: logDoneEvent, outcome: o})
		}
	}
}

// rejected reports whether an IfValue option of opts, checked by
// checkOptions, returns true for v.
func rejected[T any](opts []Option, v T) bool {
	for _, o := range opts {
		if o.kind == ifValueOption && o.ref.(func(T) bool)(v) {
			return true
		}
	}
	return false
}

// valuePreds returns the functions of the IfValue options of opts, checked
// by checkOptions, for a loop to keep.
func valuePreds[T any](opts []Option) []func(T) bool {
	var preds []func(T) bool
	for _, o := range opts {
		if o.kind == ifValueOption {
			preds = append(preds, o.ref.(func(T) bool))
		}
	}
	return preds
}

// logRetryAttempt logs the retry that a describes, for o, a WithLogger
// option. It is never inlined: the event it builds would take room in
// notify's frame, below which the OnRetry hooks run.
//
//go:noinline
func logRetryAttempt(o *Option, a *Attempt) {
	o.ref.(logFunc)(logEvent{kind: logRetryEvent, attempt: *a})
}

// logOf returns the logFunc of o, a WithLogger option, or nil.
func logOf(o Option) logFunc {
	if o.kind != logOption {
		return nil
	}
	return o.ref.(logFunc)
}
