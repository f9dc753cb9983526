package retry

import (
	"context"
	"errors"
	"log/slog"
)

// The levels of the records WithLogger and BreakerLogger write.
const (
	levelHedge   = slog.LevelDebug // a hedge: routine, by design
	levelRetry   = slog.LevelInfo  // a retry: the dependency failed, the call goes on
	levelGiveUp  = slog.LevelWarn  // the call gave up, or was refused: the caller gets an error
	levelOpen    = slog.LevelWarn  // a Breaker opened
	levelBreaker = slog.LevelInfo  // a Breaker half-opened or closed
)

// The attributes' keys, those of package retryotel where it has one:
// retry.attempt, retry.delay, retry.reason, retry.hedge.trigger and
// retry.breaker.state are its attributes, retry.attempts and
// retry.call.duration its metrics' names.
const (
	logAttempt      = "retry.attempt"
	logDelay        = "retry.delay"
	logReason       = "retry.reason"
	logTrigger      = "retry.hedge.trigger"
	logAttempts     = "retry.attempts"
	logElapsed      = "retry.call.duration"
	logBreakerState = "retry.breaker.state"
	logBreakerFrom  = "retry.breaker.from"
	logError        = "error"
)

// WithLogger returns an Option that logs the call's events through logger:
// each retry at slog.LevelInfo ("retry": retry.attempt, the attempt that
// failed; retry.delay; error, absent when IfValue rejected a value); with
// Hedge, each attempt after the first at slog.LevelDebug ("hedge":
// retry.attempt, the new one; retry.hedge.trigger, "delay" or "failure";
// retry.delay; error after a failure); each give-up at slog.LevelWarn
// ("retry gave up", or "retry refused" for a Throttle's, Breaker's or
// Limiter's refusal: retry.reason, retry.attempts, retry.call.duration,
// error). A success, or an error not retried, logs nothing. The keys, and
// retry.reason's values ("exhausted", "max_elapsed", "budget_exhausted",
// "pushback_too_long", "throttled", "open", "limited", "deadline",
// "cancelled"), are retryotel's; BreakerLogger logs a Breaker's state changes.
//
// Records are logged on the goroutine that runs OnRetry and OnDone hooks,
// without the call's context. The levels are read when the call starts: a
// call for which none is enabled takes the path of the same call without
// WithLogger and allocates nothing more (BenchmarkWithLoggerOff). Unlike
// other options, WithLogger allocates: build it once. Several WithLogger
// options all log, in the order given.
//
// WithLogger panics if logger is nil.
func WithLogger(logger *slog.Logger) Option {
	if logger == nil {
		panic("retry: WithLogger: nil *slog.Logger")
	}
	return Option{kind: logOption, ref: logFunc(func(e logEvent) logLevels { return e.log(logger) })}
}

// A logFunc is a WithLogger option's logger: the flat loop and the hooks
// call it as a function value, never the logger's methods, so that the
// options given to a call do not escape through the handler's interface
// (a call with WithLogger and a silent logger then allocates nothing).
// For a probe, it reports which of its records the logger's levels let
// through.
type logFunc func(logEvent) logLevels

// logLevels are the records a logger's levels let through.
type logLevels uint8

const (
	logsHooks logLevels = 1 << iota // retries or hedges
	logsDone                        // give-ups
)

// A logEvent is what a logFunc is asked to log, or a probe.
type logEvent struct {
	kind    logKind
	attempt Attempt
	outcome Outcome
}

type logKind uint8

const (
	probe logKind = iota // which records are logged?
	logRetryEvent
	logHedgeEvent
	logDoneEvent
)

// log logs e through logger, or answers the probe e.
func (e logEvent) log(logger *slog.Logger) logLevels {
	ctx := context.Background()
	switch e.kind {
	case probe:
		var l logLevels
		if logger.Enabled(ctx, levelRetry) || logger.Enabled(ctx, levelHedge) {
			l |= logsHooks
		}
		if logger.Enabled(ctx, levelGiveUp) {
			l |= logsDone
		}
		return l
	case logRetryEvent:
		logRetry(logger, e.attempt)
	case logHedgeEvent:
		logHedge(logger, e.attempt)
	case logDoneEvent:
		logDone(logger, e.outcome)
	}
	return 0
}

// BreakerLogger returns a BreakerOption that logs each change of the
// Breaker's state through logger, as OnStateChange would call a hook: as
// "circuit breaker open" at slog.LevelWarn, or "circuit breaker half-open"
// and "circuit breaker closed" at slog.LevelInfo, with retry.breaker.state
// (the new state: "closed", "open" or "half_open", retryotel's values) and
// retry.breaker.from (the state it left). name, if not empty, is added as
// retry.dependency, to tell Breakers apart.
//
// BreakerLogger panics if logger is nil.
func BreakerLogger(logger *slog.Logger, name string) BreakerOption {
	if logger == nil {
		panic("retry: BreakerLogger: nil *slog.Logger")
	}
	return OnStateChange(func(from, to BreakerState) {
		level := levelBreaker
		if to == BreakerOpen {
			level = levelOpen
		}
		ctx := context.Background()
		if !logger.Enabled(ctx, level) {
			return
		}
		msg := "circuit breaker " + to.String()
		state, was := slog.String(logBreakerState, stateName(to)), slog.String(logBreakerFrom, stateName(from))
		if name == "" {
			logger.LogAttrs(ctx, level, msg, state, was)
		} else {
			logger.LogAttrs(ctx, level, msg, slog.String("retry.dependency", name), state, was)
		}
	})
}

// stateName is retryotel's name of s.
func stateName(s BreakerState) string {
	if s == BreakerHalfOpen {
		return "half_open"
	}
	return s.String()
}

// logRetry logs the retry of Retry or Do that a describes.
func logRetry(logger *slog.Logger, a Attempt) {
	ctx := context.Background()
	if !logger.Enabled(ctx, levelRetry) {
		return
	}
	n, d := slog.Int(logAttempt, a.Number), slog.Duration(logDelay, a.Delay)
	if a.Err == nil {
		logger.LogAttrs(ctx, levelRetry, "retry", n, d)
		return
	}
	logger.LogAttrs(ctx, levelRetry, "retry", n, d, slog.Any(logError, a.Err))
}

// logHedge logs the hedge that a describes (as Hedge's OnRetry hooks see
// it: a.Number attempts started, a.Err the failure that triggered it).
func logHedge(logger *slog.Logger, a Attempt) {
	ctx := context.Background()
	if !logger.Enabled(ctx, levelHedge) {
		return
	}
	n, d := slog.Int(logAttempt, a.Number+1), slog.Duration(logDelay, a.Delay)
	if a.Err == nil {
		logger.LogAttrs(ctx, levelHedge, "hedge", n, slog.String(logTrigger, "delay"), d)
		return
	}
	logger.LogAttrs(ctx, levelHedge, "hedge", n, slog.String(logTrigger, "failure"), d, slog.Any(logError, a.Err))
}

// logDone logs the end of the call that o describes, if it gave up.
func logDone(logger *slog.Logger, o Outcome) {
	ctx := context.Background()
	if o.Reason == nil || !logger.Enabled(ctx, levelGiveUp) {
		return
	}
	reason := reasonName(o.Reason)
	msg := "retry gave up"
	if reason == "throttled" || reason == "open" || reason == "limited" {
		msg = "retry refused"
	}
	logger.LogAttrs(ctx, levelGiveUp, msg,
		slog.String(logReason, reason),
		slog.Int(logAttempts, o.Attempts),
		slog.Duration(logElapsed, o.Elapsed),
		slog.Any(logError, o.Err))
}

// reasonName is retryotel's name of a give-up's reason.
func reasonName(reason error) string {
	switch {
	case errors.Is(reason, ErrExhausted):
		return "exhausted"
	case errors.Is(reason, ErrMaxElapsed):
		return "max_elapsed"
	case errors.Is(reason, ErrBudgetExhausted):
		return "budget_exhausted"
	case errors.Is(reason, ErrPushbackTooLong):
		return "pushback_too_long"
	case errors.Is(reason, ErrThrottled):
		return "throttled"
	case errors.Is(reason, ErrBreakerOpen):
		return "open"
	case errors.Is(reason, ErrLimited):
		return "limited"
	case errors.Is(reason, context.DeadlineExceeded):
		return "deadline"
	}
	return "cancelled"
}
