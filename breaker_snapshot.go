package retry

import "time"

// A BreakerSnapshot is what a Breaker counts at one moment, for metrics,
// logs and health pages (see Breaker.Snapshot).
type BreakerSnapshot struct {
	// State is the Breaker's state.
	State BreakerState
	// Requests is the number of outcomes counted in the window, successes
	// and failures; attempts that counted for nothing are not in it, nor
	// the probes of a half-open Breaker. The window starts empty when the
	// Breaker closes.
	Requests uint64
	// Failures is the number of failures among them (slow calls included,
	// with BreakerSlowCall).
	Failures uint64
	// ConsecutiveFailures is the number of failures reported since the
	// last success, or since the Breaker last changed state.
	ConsecutiveFailures uint64
	// OpenFor is how long an open Breaker stays open from now; 0 when it
	// is closed or half-open.
	OpenFor time.Duration
}

// Snapshot returns b's counts and state now, as State does (an open
// Breaker whose open period is over becomes half-open here). It reads
// every count of the window, so it costs more than an attempt; with calls
// in flight, its fields are read one after the other and may not all
// belong to the same instant.
//
// Snapshot panics if b was not made by NewBreaker.
func (b *Breaker) Snapshot() BreakerSnapshot {
	b.mustMade("Breaker.Snapshot")
	s := BreakerSnapshot{State: b.State()}
	tick, at := b.w.now(b.clock, nil)
	s.Requests, s.Failures = b.w.sum(tick-(windowBuckets-1), tick)
	s.ConsecutiveFailures = b.consec.Load()
	if s.State == BreakerOpen {
		s.OpenFor = max(b.left(at), 0)
	}
	return s
}
