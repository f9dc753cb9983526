package retryotel

import (
	"context"
	"errors"
	"net"
	"strconv"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryhttp"
)

// classOther is OpenTelemetry's error.type for an error of no known class.
const classOther = "_OTHER"

// DefaultErrorClass is the error.type of err when New is given no
// WithErrorClass: the status code of a retryhttp.StatusError ("503"), as
// OpenTelemetry's HTTP conventions record it; "timeout" for
// context.DeadlineExceeded and any net.Error whose Timeout is true;
// "canceled" for context.Canceled and retry.ErrHedgeLost; "transient" for
// another error that retry.IsTransient accepts (a refused or reset
// connection); and "_OTHER" for anything else, and for nil. Its values
// form a closed set: it never returns text taken from err.
func DefaultErrorClass(err error) string {
	if err == nil {
		return classOther
	}
	var se *retryhttp.StatusError
	if errors.As(err, &se) {
		if se.StatusCode >= 100 && se.StatusCode <= 599 {
			return strconv.Itoa(se.StatusCode)
		}
		return classOther
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, retry.ErrHedgeLost) {
		return "canceled"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	if retry.IsTransient(err) {
		return "transient"
	}
	return classOther
}

// class is the error class t records for err: "" for nil (no error.type
// attribute), "_OTHER" for an empty class.
func (t *Telemetry) class(err error) string {
	if err == nil {
		return ""
	}
	if c := t.classify(err); c != "" {
		return c
	}
	return classOther
}

// The values of retry.reason.
const (
	reasonSuccess     = "success"
	reasonNotRetried  = "not_retried"
	reasonExhausted   = "exhausted"
	reasonMaxElapsed  = "max_elapsed"
	reasonBudget      = "budget_exhausted"
	reasonDeadline    = "deadline"
	reasonCancelled   = "cancelled"
	reasonThrottled   = "throttled"
	reasonCircuitOpen = "open"
	reasonLimited     = "limited"
	reasonPushback    = "pushback_too_long"
)

// A reason maps a sentinel that an Outcome's Reason matches to its name.
type reason struct {
	err  error
	name string
}

// knownReasons are the reasons of package retry, in the order they are
// matched. To classify a new sentinel, add a line here (or, from outside,
// use WithReason).
var knownReasons = []reason{
	{retry.ErrExhausted, reasonExhausted},
	{retry.ErrMaxElapsed, reasonMaxElapsed},
	{retry.ErrBudgetExhausted, reasonBudget},
	{retry.ErrPushbackTooLong, reasonPushback},
	{retry.ErrThrottled, reasonThrottled},
	{retry.ErrBreakerOpen, reasonCircuitOpen},
	{retry.ErrLimited, reasonLimited},
	{context.DeadlineExceeded, reasonDeadline},
	{context.Canceled, reasonCancelled},
}

// reasonOf is the retry.reason of the call o describes.
func (t *Telemetry) reasonOf(o retry.Outcome) string {
	switch {
	case o.Err == nil:
		return reasonSuccess
	case o.Reason == nil:
		return reasonNotRetried
	}
	for _, r := range t.reasons {
		if errors.Is(o.Reason, r.err) {
			return r.name
		}
	}
	// Another cause of the caller's context.
	return reasonCancelled
}
