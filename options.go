package retry

import (
	"strconv"
	"time"
)

// An Option configures one Retry, Do or Hedge call. Options are made only by
// this package (WithClock, If, OnRetry, OnDone, WithBudget, MaxPushback,
// AttemptTimeout, MaxElapsed, IfValue, MaxRetriesIf, WithLatency, OnDiscard,
// WithThrottle, WithBreaker, WithLogger, WithLimiter);
// the zero Option does nothing. Options are plain values: they can be built
// once and shared by any number of calls and goroutines, and building one at
// the call site allocates nothing. An entry point given an option that means
// nothing to it panics (the table is in the package documentation, "Options
// and entry points").
//
// Option is a struct with unexported fields rather than an interface: it is
// just as closed to other packages and just as free to grow, and it needs no
// boxing, so passing options never costs an allocation.
type Option struct {
	kind  optionKind
	d     time.Duration // MaxPushback, AttemptTimeout, MaxElapsed
	n     int           // MaxRetriesIf
	clock Clock         // WithClock
	ref   any           // If, MaxRetriesIf: func(error) bool; OnRetry: func(Attempt); OnDone: func(Outcome); WithBudget: *Budget; WithLatency: *Latency; OnDiscard: func(T); IfValue: func(T) bool; WithThrottle: *Throttle; WithBreaker: *Breaker; WithLogger: logFunc; WithLimiter: *Limiter
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
	logOption
	limiterOption
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

// WithLatency returns an Option that records the duration of every attempt of
// the call in lat, measured on the call's clock (see WithClock): successes
// and failures alike, including an attempt cut short by its own
// AttemptTimeout (recorded as about the timeout, a lower bound of its
// latency). In Hedge, an attempt that Hedge cancelled (a loser, abandoned
// for a faster one) is recorded as the time it ran until it returned,
// again a lower bound of its latency: leaving the losers out, which are
// the slow attempts, would make Quantile's estimate, and so a hedge delay
// read from it, too low, and too many calls hedge. An attempt that returns
// after the caller's context ended is not recorded: its duration says
// nothing about the dependency; nor is one that panicked. A loser that
// returns after the caller's context ended too (a deferred cancel right after
// Hedge returned) is recorded: its context's cause is ErrHedgeLost, not the
// caller's. A later WithLatency replaces an earlier one.
// Recording allocates nothing; it reads the clock twice per attempt.
//
// WithLatency panics if lat is nil.
func WithLatency(lat *Latency) Option {
	if lat == nil {
		panic("retry: WithLatency: nil Latency")
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
// one. On Hedge, no attempt starts more than d after the first did; those in
// flight finish, and if none succeeds Hedge gives up with ErrMaxElapsed.
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
// each call starts from zero, so one Option can be shared by any number of
// calls and goroutines. Several MaxRetriesIf options count
// separately, an error counting for each one whose match accepts it, and
// the first to run out ends the call. With n = 0 the first matching failure
// ends the call, as an If that rejects it would, but with an *Error rather
// than the error as it is. On Hedge too, which cancels its other attempts.
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

// OnDiscard returns an Option that makes Hedge, or Retry, pass release every
// value it drops, so that values holding resources (an *http.Response, a
// connection) are released: in Hedge, the value of each attempt that
// succeeded but lost, because another attempt had already won or Hedge had
// already returned; in Retry, each value IfValue rejected that the next
// attempt replaces. release is never passed the value the call returns, nor
// the value of a failed attempt (a failing fn should release what it does
// not return). Each value is passed once: in Hedge on the goroutine of the
// attempt that made it or on Hedge's, possibly after Hedge has returned and
// concurrently with other calls of release; in Retry on its goroutine,
// before the next attempt. Several OnDiscard options all run, in the order
// given.
//
// OnDiscard panics if release is nil. Retry and Hedge panic if T is not the
// type of their function's value, and Do panics if given a OnDiscard.
func OnDiscard[T any](release func(T)) Option {
	if release == nil {
		panic("retry: OnDiscard: nil function")
	}
	return Option{kind: discardOption, ref: release}
}

// Attempt describes a failed attempt that is about to be retried; OnRetry
// hooks receive it before each wait.
type Attempt struct {
	// Number is the 1-based number of the attempt that just failed.
	Number int
	// Err is its error, without the Permanent, RetryAfter or RetryAt marker;
	// nil if it returned a value that IfValue rejected.
	Err error
	// Delay is the wait before the next attempt: the schedule's delay, or a
	// server's longer pushback (see RetryAfter).
	Delay time.Duration
	// Elapsed is the time since the first attempt started, on the Retry's
	// clock.
	Elapsed time.Duration
}
