package retry

import (
	"context"
	"errors"
	"time"
)

// ErrPushbackTooLong is the reason of an *Error returned because a server
// asked, through RetryAfter or RetryAt, for a wait longer than MaxPushback
// allows or longer than the context's deadline leaves: the call gives up at
// once instead of waiting less than the server asked, or waiting in vain.
// errors.Is(err, ErrPushbackTooLong) reports it; when the deadline is what
// the wait would pass, errors.Is(err, context.DeadlineExceeded) holds too.
// errors.As with a *PushbackTooLongError gives the wait asked for and the
// bound it passed.
var ErrPushbackTooLong = errors.New("retry: server asked for a wait longer than allowed")

// PushbackTooLongError is the reason of a call that gave up because of a
// server's too long pushback (see ErrPushbackTooLong): errors.As finds it in
// the *Error the call returns.
type PushbackTooLongError struct {
	// Wait is the wait the server asked for, from the time the call gave up.
	Wait time.Duration
	// Limit is the bound it passed: MaxPushback's limit, or the time left
	// before the context's deadline when Deadline is true.
	Limit time.Duration
	// Deadline reports whether the context's deadline, rather than
	// MaxPushback, is the bound that Wait passed.
	Deadline bool
}

// Error says what the server asked for and which bound it passed, as in
// "retry: server asked to wait 2m0s, more than MaxPushback (1m0s)".
func (e *PushbackTooLongError) Error() string {
	s := "retry: server asked to wait " + e.Wait.String() + ", more than "
	if e.Deadline {
		return s + "the " + e.Limit.String() + " left before the deadline"
	}
	return s + "MaxPushback (" + e.Limit.String() + ")"
}

// Is reports whether target is ErrPushbackTooLong, or
// context.DeadlineExceeded when the deadline is the bound.
func (e *PushbackTooLongError) Is(target error) bool {
	return target == ErrPushbackTooLong || e.Deadline && target == context.DeadlineExceeded
}

// tooLong returns the reason to give up for a pushback of wait w that
// passes limit (the deadline's time left, if deadline). It is out of line:
// it runs once per call at most.
//
//go:noinline
func (r *runner) tooLong(w, limit time.Duration, deadline bool) error {
	return r.giveUp(&PushbackTooLongError{Wait: w, Limit: max(limit, 0), Deadline: deadline})
}
