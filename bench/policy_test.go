package bench

import (
	"errors"
	"time"
)

// attempts is the most attempts any contender makes in one call: four
// retries after the first attempt.
const attempts = 5

// A policy is the retry policy every contender is given, in numbers: waits
// that grow exponentially from base, are capped at limit and then fully
// jittered (a uniform draw below the capped value). Each library is given its
// closest equivalent; policies_test.go says how.
type policy struct {
	base  time.Duration
	limit time.Duration
	// floor, if positive, raises each jittered wait to at least floor. Only
	// ours and the loop use it: both skip the timer for a zero wait, which
	// the other libraries never do, so a 1 ns policy needs it to run the
	// timer path on every retry as the others do.
	floor time.Duration
}

var (
	// standard is the policy of the issue: 100 ms doubling up to 2 s.
	standard = policy{base: 100 * time.Millisecond, limit: 2 * time.Second}
	// tiny is standard scaled down to 1 ns, so that a retry runs the timer
	// path without the sleep dominating the measurement.
	tiny = policy{base: time.Nanosecond, limit: time.Nanosecond, floor: time.Nanosecond}
	// parked is standard scaled up so that the first wait is drawn from
	// [0, 1 h]: a retry that fails its first attempt stays parked for the
	// whole measurement (it wakes within a second with probability 1/3600,
	// and then only fails again and parks once more).
	parked = policy{base: time.Hour, limit: 2 * time.Hour}
)

// errFail is what a failing attempt returns.
var errFail = errors.New("bench: attempt failed")

// half returns d/2 but at least 1 ns: the base of libraries whose jitter
// spreads a delay over [0, 2·d] rather than [0, d].
func half(d time.Duration) time.Duration {
	return max(d/2, time.Nanosecond)
}
