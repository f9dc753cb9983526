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
}

// newConfig applies opts. It keeps no reference to opts, so neither the
// options nor the config escape: a call with options allocates nothing until
// it has to retry.
//
// It is never inlined: its temporaries would take room in the frames of the
// flat retry loop (plan_loop.go), below which fn runs.
//
//go:noinline
func newConfig(opts []Option) config {
	cfg := defaultConfig
	for _, o := range opts {
		switch o.kind {
		case clockOption:
			cfg.clock = o.clock
		case ifOption:
			cfg.hasIf = true
		case onRetryOption:
			cfg.hasHooks = true
		case budgetOption:
			cfg.budget = o.ref.(*Budget)
		case pushbackOption:
			cfg.maxPushback = o.d
		case attemptTimeoutOption:
			cfg.attemptTimeout = o.d
		case observeOption:
			cfg.latency = o.ref.(*Latency)
		case onDoneOption:
			cfg.hasDone = true
		case maxElapsedOption:
			cfg.maxElapsed = o.d
		case ifValueOption:
			cfg.hasValue = true
		case maxRetriesIfOption:
			cfg.hasLimits = true
		case throttleOption:
			cfg.throttle = o.ref.(*Throttle)
		case breakerOption:
			cfg.breaker = o.ref.(*Breaker)
		case logOption:
			cfg.addLogger(o.ref.(logFunc))
		case limiterOption:
			cfg.limiter = o.ref.(*Limiter)
		}
	}
	return cfg
}

// defaultConfig is the config of a call without options.
var defaultConfig = config{maxPushback: defaultMaxPushback}

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
