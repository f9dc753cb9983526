package retry

import "time"

// Outcome describes how a Retry, Do or Hedge call ended; OnDone hooks
// receive it. Branch on it as on the call's error:
//
//	switch {
//	case o.Err == nil: // succeeded, after o.Attempts attempts
//	case o.Reason == nil: // not retried: Permanent, rejected by If, or a server's "don't"
//	case errors.Is(o.Reason, retry.ErrExhausted): // the schedule, or a MaxRetriesIf, ran out
//	case errors.Is(o.Reason, retry.ErrMaxElapsed): // MaxElapsed's limit
//	case errors.Is(o.Reason, retry.ErrBudgetExhausted): // a Budget refused
//	case errors.Is(o.Reason, retry.ErrPushbackTooLong): // a server asked for too long a wait
//	case errors.Is(o.Reason, retry.ErrThrottled): // a Throttle rejected an attempt
//	case errors.Is(o.Reason, retry.ErrBreakerOpen): // a Breaker did not let an attempt through
//	case errors.Is(o.Reason, context.DeadlineExceeded): // the context's deadline
//	default: // the context was cancelled: o.Reason is its cause
//	}
type Outcome struct {
	// Attempts is the number of times fn was called; 0 if the context was
	// done before the first attempt.
	Attempts int
	// Elapsed is the time from the start of the first attempt to the end of
	// the call, on the call's clock; 0 if there was no attempt.
	Elapsed time.Duration
	// Err is the error the call returns: nil on success, the error as it is
	// if it was not retried, or an *Error when the call gave up.
	Err error
	// Reason is why the call gave up, the reason Err unwraps to:
	// ErrExhausted, ErrMaxElapsed, ErrBudgetExhausted, ErrPushbackTooLong,
	// ErrThrottled, ErrBreakerOpen, context.DeadlineExceeded or the context's
	// cause. It is nil when the
	// call succeeded, and when it ended on an error that was not retried.
	// Unlike Err, it never matches an error that fn returned, so a failure
	// from a lower layer that gave up too is not mistaken for this call's.
	Reason error
}

// OnDone returns an Option that calls f once when the call ends, with how it
// ended: after a success (the first attempt's included), after an error
// that was not retried, when the call gives up, and when the context was
// done before the first attempt. f runs on the goroutine that called Retry
// or Do, after the last attempt and before the call returns; with Hedge,
// on Hedge's goroutine, before it returns, while losing attempts may still
// be running. It is not called if fn or another hook panics. Several OnDone
// hooks all run, in the order given. Use it for metrics: attempts per call,
// why calls gave up, how long they took.
//
// OnDone makes a call read its clock when it starts and when it ends; a call
// with OnDone allocates nothing more than the same call without it.
//
// OnDone panics if f is nil.
func OnDone(f func(Outcome)) Option {
	if f == nil {
		panic("retry: OnDone: nil function")
	}
	return Option{kind: onDoneOption, ref: f}
}
