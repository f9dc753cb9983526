package retry

import "context"

// A BreakerPermit is a Breaker's leave for one attempt made outside Retry,
// Do and Hedge (see Breaker.Allow): the caller makes the attempt, then
// reports its outcome with exactly one of Success, Failure, Drop or Report.
// It is a small value: getting and reporting one allocates nothing.
//
// A permit that is never reported counts for nothing. A closed Breaker
// loses nothing by it; a half-open one counts the permit as a probe in
// flight, and once no probe has reported for the length of its window
// (BreakerWindow), it takes them as lost and lets new probes through, so a
// forgotten report delays recovery by one window at most, and never wedges
// the Breaker. A report that comes after the Breaker changed state (or
// after its probe was taken as lost) counts for nothing, as inside Retry.
// Reporting a permit twice is a mistake: the second report may be counted.
// The zero BreakerPermit reports nothing.
type BreakerPermit struct {
	b  *Breaker
	tk breakerTicket
}

// Allow asks b to let one attempt through, for a caller that makes it
// itself (a message consumer, a custom transport), with the same rules as
// an attempt of a call WithBreaker. If b lets it through, Allow returns a
// permit to report the attempt's outcome with, and a nil error; if not, an
// error that matches ErrBreakerOpen and carries, as a RetryAfter pushback, how
// long b stays open (0 if it is half-open with all its probes taken), so
// that a Retry around the caller waits at least that long.
//
// Allow panics if b was not made by NewBreaker.
func (b *Breaker) Allow() (BreakerPermit, error) {
	b.mustMade("Breaker.Allow")
	tk, left, ok := b.admit(nil)
	if !ok {
		return BreakerPermit{}, openError(left)
	}
	return BreakerPermit{b: b, tk: tk}, nil
}

// Success reports that the dependency answered: a success (or, with
// BreakerSlowCall, a failure if the attempt took too long).
func (p BreakerPermit) Success() { p.report(accepted) }

// Failure reports a failure of the dependency: an error worth retrying, a
// timeout, a refusal to serve.
func (p BreakerPermit) Failure() { p.report(failed) }

// Drop reports an attempt that says nothing about the dependency, such as
// one its caller gave up on: it counts for nothing, and a half-open
// Breaker's probe slot is free again.
func (p BreakerPermit) Drop() { p.report(neither) }

// Report reports the attempt that failed with err (nil: a success), made
// with the context ctx, as Retry would count it: a nil err is a success;
// any error once ctx is done counts for nothing; a Permanent error is a
// success (the dependency answered); any other error is a failure, a
// RetryAfter pushback included, even a negative one (a server's refusal
// to serve). A nil ctx is taken as one that never ends.
func (p BreakerPermit) Report(ctx context.Context, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	permanent := false
	if err != nil {
		permanent, _ = markers(err)
	}
	p.report(verdictOf(ctx, err, permanent))
}

func (p BreakerPermit) report(v verdict) {
	if p.b != nil {
		p.b.report(p.tk, v)
	}
}
