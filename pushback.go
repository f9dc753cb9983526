package retry

import "time"

// defaultMaxPushback is the longest wait a server can impose through
// RetryAfter or RetryAt when no MaxPushback option is given.
const defaultMaxPushback = time.Minute

// RetryAfter marks err with the wait a server asked for, such as an HTTP
// Retry-After header or a gRPC pushback: fn returns it, and Retry waits
//
//	max(min(d, limit), the schedule's next delay)
//
// before the next attempt, where limit is MaxPushback (1 minute by default).
// The limit bounds what a server can impose, never the schedule's own delay,
// and the pushback still uses up one delay of the schedule, so Take still
// bounds the number of attempts. A server that asks for more than limit
// (and the schedule's delay), or for a wait that would end after the
// context's deadline, ends the call at once: Retry gives up with reason
// ErrPushbackTooLong (see PushbackTooLongError) rather than retry early or
// wait in vain. A pushback does not count against Within, which sums the
// schedule's own delays: the context's deadline bounds a call's total time.
// Attempt.Delay reports the wait actually used.
//
// A negative d means the server asked not to be retried: Retry stops at once,
// as if err were Permanent. RetryAfter(nil, d) is nil. errors.Is and
// errors.As see through the marker, and Retry reports err without it.
//
// Precedence: Permanent anywhere in the chain stops Retry whatever the
// pushback says; an If predicate that rejects err stops it too (the pushback
// says how long to wait, not whether to retry); otherwise the pushback sets
// the wait. If err's chain holds several pushbacks, the outermost counts.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &pushbackError{err: err, delay: d}
}

// RetryAt is RetryAfter with a point in time instead of a duration, such as
// the HTTP-date form of Retry-After: the wait is t minus the Now of the
// Retry's own clock, so a FakeClock gives exact, repeatable waits. A t in the
// past (including the zero Time) counts as a wait of 0: retry on the
// schedule's own delay. RetryAt(nil, t) is nil.
func RetryAt(err error, t time.Time) error {
	if err == nil {
		return nil
	}
	return &pushbackError{err: err, at: t, absolute: true}
}

// pushbackError carries a server's request to wait (see RetryAfter).
type pushbackError struct {
	err      error
	delay    time.Duration // when !absolute
	at       time.Time     // when absolute
	absolute bool
}

func (e *pushbackError) Error() string { return e.err.Error() }
func (e *pushbackError) Unwrap() error { return e.err }

// refused reports whether e asks for no retry at all; a nil e does not.
func (e *pushbackError) refused() bool {
	return e != nil && !e.absolute && e.delay < 0
}

// wait returns the pushback as a non-negative wait from now, reading the
// clock only for a RetryAt.
func (e *pushbackError) wait(now func() time.Time) time.Duration {
	if e.absolute {
		return max(e.at.Sub(now()), 0) // Time.Sub saturates
	}
	return max(e.delay, 0)
}

// MaxPushback returns an Option that bounds the wait a server can impose
// through RetryAfter or RetryAt; the default is 1 minute. A longer pushback
// ends Retry and Do at once, with ErrPushbackTooLong as the reason, unless
// the schedule's own delay is as long (it then applies); Hedge instead holds
// its next attempt for at most limit. It
// bounds each wait, not their total: n retries may each wait limit, whatever
// a Within in the schedule says; a context deadline bounds the total. A
// limit of 0 ignores pushback waits entirely, though a negative pushback
// still stops the retries. A later MaxPushback replaces an earlier one.
//
// MaxPushback panics if limit is negative.
func MaxPushback(limit time.Duration) Option {
	mustNonNegative("MaxPushback", "limit", limit)
	return Option{kind: pushbackOption, d: limit}
}
