package retry

import (
	"errors"
	"strconv"
	"strings"
)

// ErrExhausted is the reason of an *Error returned because the Schedule ran
// out of delays: errors.Is(err, ErrExhausted) reports it.
var ErrExhausted = errors.New("retry: schedule exhausted")

// ErrMaxElapsed is the reason of an *Error returned because the next wait
// would have ended past the limit set by MaxElapsed:
// errors.Is(err, ErrMaxElapsed) reports it.
var ErrMaxElapsed = errors.New("retry: max elapsed time reached")

// ErrBudgetExhausted is the reason of an *Error returned because a Budget
// refused a retry: errors.Is(err, ErrBudgetExhausted) reports it.
var ErrBudgetExhausted = errors.New("retry: budget exhausted")

// Error is the error Retry and Do return when they give up on an error that
// was retryable: the schedule ran out or a MaxRetriesIf limit was reached
// (ErrExhausted), the context ended or its deadline would pass during the
// next wait (context.Canceled, context.DeadlineExceeded or the context's
// cause), the next wait would end past MaxElapsed (ErrMaxElapsed), a
// server asked for a wait past MaxPushback or the deadline
// (ErrPushbackTooLong), a Budget refused the retry (ErrBudgetExhausted), or a Throttle or Breaker
// did not let an attempt through (ErrThrottled, ErrBreakerOpen).
//
// An *Error unwraps to both the reason and the last error, so
// errors.Is(err, ErrExhausted) and errors.Is(err, yourErr) both hold. Errors
// that were not retried (Permanent, rejected by If) are returned as they are,
// not wrapped in an *Error.
type Error struct {
	// Attempts is the number of times fn was called; 0 if the context was
	// done before the first attempt.
	Attempts int
	// Last is the error of the last attempt, without the Permanent,
	// RetryAfter or RetryAt marker; nil if there was no attempt, or if the
	// last attempt returned a value that IfValue rejected. Retry keeps no
	// earlier errors.
	Last error

	// tree is the reason and the last error, made once with the Error so
	// that Unwrap, which errors.Is and errors.As call, does not allocate.
	tree [2]error
}

// newError returns an *Error for attempts attempts, the last of which failed
// with last, given up for reason.
func newError(attempts int, last, reason error) *Error {
	return &Error{Attempts: attempts, Last: last, tree: [2]error{reason, last}}
}

// Error describes the reason and the last error, as in
// "retry: gave up after 3 attempts: schedule exhausted: last error: EOF".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("retry: gave up after ")
	b.WriteString(strconv.Itoa(e.Attempts))
	if e.Attempts == 1 {
		b.WriteString(" attempt")
	} else {
		b.WriteString(" attempts")
	}
	if reason := e.tree[0]; reason != nil {
		b.WriteString(": ")
		b.WriteString(strings.TrimPrefix(reason.Error(), "retry: "))
	}
	if e.Last != nil {
		b.WriteString(": last error: ")
		b.WriteString(e.Last.Error())
	}
	return b.String()
}

// Unwrap returns the reason and the last error, for errors.Is and errors.As,
// as Retry made them: changing Last afterwards does not change what Unwrap
// returns. It does not allocate. For an Error made outside this package,
// which has no reason, it returns Last.
func (e *Error) Unwrap() []error {
	switch {
	case e.tree[0] == nil && e.tree[1] == nil:
		if e.Last != nil {
			return []error{e.Last}
		}
		return nil
	case e.tree[0] == nil:
		return e.tree[1:]
	case e.tree[1] == nil:
		return e.tree[:1]
	}
	return e.tree[:]
}

// Permanent marks err as not worth retrying: Retry and Do stop at once and
// return err without the marker (as the same error value, not an *Error).
// errors.Is and errors.As see through the marker. Permanent(nil) is nil, and
// marking an already permanent error returns it unchanged.
//
// Permanent takes precedence over everything else: over If, over
// AttemptTimeout, and over RetryAfter or RetryAt in the same chain.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*permanentError); ok {
		return err
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// markers returns whether err's tree holds a Permanent marker and the first
// pushback marker in depth-first order. It runs after every failed attempt,
// so it walks the tree itself rather than through inTree: calling a match
// function for every error in the tree cost 16% of a retry on a fake clock.
func markers(err error) (permanent bool, pb *pushbackError) {
	for err != nil {
		switch e := err.(type) {
		case *permanentError:
			return true, pb
		case *pushbackError:
			if pb == nil {
				pb = e
			}
			err = e.err
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				p, b := markers(inner)
				if pb == nil {
					pb = b
				}
				if p {
					return true, pb
				}
			}
			return false, pb
		default:
			return false, pb
		}
	}
	return false, pb
}

// unmark strips the markers this package wraps around the top of err.
func unmark(err error) error {
	for {
		switch e := err.(type) {
		case *permanentError:
			err = e.err
		case *pushbackError:
			err = e.err
		default:
			return err
		}
	}
}

// gaveUp reports whether err's tree holds an *Error, that is, a Retry that
// already gave up.
func gaveUp(err error) bool {
	return inTree(err, func(e error) bool {
		_, ok := e.(*Error)
		return ok
	})
}

// inTree reports whether match accepts any error in err's tree, visited
// depth-first as errors.Is does. It walks the tree by hand: errors.As would
// allocate, and it stops at the first error of a type even when a later one
// is the one that matters.
func inTree(err error, match func(error) bool) bool {
	for err != nil {
		if match(err) {
			return true
		}
		switch e := err.(type) {
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				if inTree(inner, match) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}
