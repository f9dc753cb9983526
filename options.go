package retry

import (
	"context"
	"strconv"
	"time"
)

// An Option configures one Retry, Do or Hedge call. Options are made only by
// this package (WithClock, If, OnRetry, OnDone, WithBudget, MaxPushback,
// AttemptTimeout, MaxElapsed, IfValue, MaxRetriesIf, Observe, Discard,
// WithThrottle, WithBreaker);
// the zero Option does nothing. Options are plain values: they can be built
// once and shared by any number of calls and goroutines, and building one at
// the call site allocates nothing.
//
// Option is a struct with unexported fields rather than an interface: it is
// just as closed to other packages and just as free to grow, and it needs no
// boxing, so passing options never costs an allocation.
type Option struct {
	kind  optionKind
	d     time.Duration // MaxPushback, AttemptTimeout, MaxElapsed
	n     int           // MaxRetriesIf
	clock Clock         // WithClock
	ref   any           // If, MaxRetriesIf: func(error) bool; OnRetry: func(Attempt); OnDone: func(Outcome); WithBudget: *Budget; Observe: *Latency; Discard: func(T); IfValue: func(T) bool; WithThrottle: *Throttle; WithBreaker: *Breaker
}

type optionKind uint8

const (
	noOption optionKind = iota
	clockOption
	ifOption
	onRetryOption
	budgetOption
	pushbackOption
	attemptTimeoutOption
	observeOption
	discardOption
	onDoneOption
	maxElapsedOption
	ifValueOption
	maxRetriesIfOption
	throttleOption
	breakerOption
)

// WithClock returns an Option that makes Retry wait on c and read the time
// from it, for Attempt.Elapsed, RetryAt and the context's deadline. Use a
// FakeClock in tests; nil means the real clock, which is also the default. A
// later WithClock replaces an earlier one.
//
// With a clock other than the real one, a context deadline is tracked on that
// clock: the time left before the deadline when the first attempt fails is
// spent as c advances, so a FakeClock that sleeps past the deadline makes
// Retry give up exactly as the real clock would.
func WithClock(c Clock) Option {
	return Option{kind: clockOption, clock: c}
}

// If returns an Option that retries only the errors for which retryable
// returns true: any other error ends the retries at once and is returned as
// it is. retryable sees the error without the Permanent or RetryAfter marker.
// With several If options, an error is retried only if all of them accept it.
// Permanent errors are never retried, whatever retryable says, and an error
// from an attempt whose own AttemptTimeout expired is always retried.
// Without If, every error other than a Permanent one is retried.
//
// If panics if retryable is nil.
func If(retryable func(error) bool) Option {
	if retryable == nil {
		panic("retry: If: nil function")
	}
	return Option{kind: ifOption, ref: retryable}
}

// OnRetry returns an Option that calls f before each wait, with the attempt
// that failed and the delay about to be waited; only when a retry will really
// follow, so never after the final attempt. Several OnRetry hooks all run, in
// the order given, on the goroutine that called Retry. Use it for logging and
// metrics; f must not block for long, since the wait starts after it returns.
// Hedge calls f before each attempt after the first instead, with a nil
// Attempt.Err when a delay rather than a failure triggered it (see Hedge).
//
// OnRetry panics if f is nil.
func OnRetry(f func(Attempt)) Option {
	if f == nil {
		panic("retry: OnRetry: nil function")
	}
	return Option{kind: onRetryOption, ref: f}
}

// AttemptTimeout returns an Option that gives each call of fn a context that
// ends after d, as well as when the caller's context ends; the context is
// released as soon as fn returns. An attempt that fails after its own timeout
// expired is retried (even if an If predicate would reject its error, though
// not if it is Permanent); once the caller's context is done, nothing is
// retried. The timeout runs on the real clock (contexts cannot use another
// one); under testing/synctest that clock is fake too. A later AttemptTimeout
// replaces an earlier one.
//
// AttemptTimeout panics if d is not positive.
func AttemptTimeout(d time.Duration) Option {
	if d <= 0 {
		panic("retry: AttemptTimeout: timeout " + d.String() + " is not positive")
	}
	return Option{kind: attemptTimeoutOption, d: d}
}

// Observe returns an Option that records the duration of every attempt of
// the call in lat, measured on the call's clock (see WithClock): successes
// and failures alike, including an attempt cut short by its own
// AttemptTimeout (recorded as about the timeout, a lower bound of its
// latency). An attempt that returns after the caller's context ended, or in
// Hedge after Hedge cancelled it (a loser), is not recorded: its duration
// says nothing about the dependency. A later Observe replaces an earlier one. Recording allocates nothing; it reads the clock
// twice per attempt.
//
// Observe panics if lat is nil.
func Observe(lat *Latency) Option {
	if lat == nil {
		panic("retry: Observe: nil Latency")
	}
	return Option{kind: observeOption, ref: lat}
}

// MaxElapsed returns an Option that stops the retries once the call has
// used d, attempts and waits together, timed from the start of the first
// attempt on the call's clock (see WithClock): a wait that would end more
// than d after that start is not started, and the call gives up at once
// with an *Error that unwraps to ErrMaxElapsed and to the last error. A wait
// that ends exactly at d is made. The attempt in flight is never cut short,
// so a call may last longer than d by the time its last attempt takes: to
// cut attempts short, give ctx a deadline, or use AttemptTimeout. If ctx's
// deadline would pass during the same wait, the reason is
// context.DeadlineExceeded instead. A later MaxElapsed replaces an earlier
// one. Hedge ignores MaxElapsed.
//
// MaxElapsed panics if d is not positive.
func MaxElapsed(d time.Duration) Option {
	if d <= 0 {
		panic("retry: MaxElapsed: limit " + d.String() + " is not positive")
	}
	return Option{kind: maxElapsedOption, d: d}
}

// MaxRetriesIf returns an Option that allows at most n retries after
// attempts that failed with an error for which match returns true, within
// whatever else the schedule and the other options allow: the (n+1)-th such
// failure ends the call, which gives up with an *Error that unwraps to
// ErrExhausted and to that error. Use it to retry a rate-limit error twice
// at most while other errors get the whole schedule.
//
// match sees the error without the Permanent, RetryAfter or RetryAt marker,
// and only the errors that would otherwise be retried: Permanent errors, and
// errors an If rejects, end the call before it is asked. A value rejected by
// IfValue has no error and never counts. The counts belong to the call:
// each Retry or Do call starts from zero, so one Option can be shared by any
// number of calls and goroutines. Several MaxRetriesIf options count
// separately, an error counting for each one whose match accepts it, and
// the first to run out ends the call. With n = 0 the first matching failure
// ends the call, as an If that rejects it would, but with an *Error rather
// than the error as it is. Hedge ignores MaxRetriesIf.
//
// MaxRetriesIf panics if n is negative or match is nil.
func MaxRetriesIf(n int, match func(error) bool) Option {
	if n < 0 {
		panic("retry: MaxRetriesIf: negative count " + strconv.Itoa(n))
	}
	if match == nil {
		panic("retry: MaxRetriesIf: nil function")
	}
	return Option{kind: maxRetriesIfOption, n: n, ref: match}
}

// Discard returns an Option that makes Hedge pass release every value it
// drops, so that values holding resources (an *http.Response, a connection)
// are released: the value of each attempt that succeeded but lost, because
// another attempt had already won or Hedge had already returned. release
// is never passed the value Hedge returns, nor the value of a failed
// attempt (as with Retry, a failing fn should release what it does not
// return; Hedge returns the last failure's value when it gives up, and drops
// the earlier ones). Each value is passed once, on the goroutine of the
// attempt that made it or on Hedge's, possibly after Hedge has returned, and
// possibly concurrently with other calls of release. Retry and Do ignore
// Discard. Several Discard options all run, in the order given.
//
// Discard panics if release is nil. Hedge panics if T is not the type of its
// function's value.
func Discard[T any](release func(T)) Option {
	if release == nil {
		panic("retry: Discard: nil function")
	}
	return Option{kind: discardOption, ref: release}
}

// config is the result of applying a call's options.
//
// OnDone, MaxElapsed, IfValue, MaxRetriesIf, WithThrottle and WithBreaker
// are handled by the general runner (loop.go) only: a call with hasDone,
// maxElapsed, hasValue, hasLimits, throttle or breaker set must take that
// path.
type config struct {
	clock          Clock // nil: the real clock
	budget         *Budget
	latency        *Latency // Observe's
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

// observe records in c.latency the duration of an attempt that started at
// start and has just returned, unless ctx ended meanwhile.
func (c *config) observe(ctx context.Context, start time.Time) {
	if ctx.Err() == nil {
		c.latency.Record(c.now().Sub(start))
	}
}
