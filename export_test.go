package retry

import "time"

// What the external test package (retry_test) needs to know of the build.
const (
	// RaceEnabled reports whether the race detector is on: it allocates.
	RaceEnabled = raceEnabled
)

// Fusion reports whether chains of built-in schedules are fused into plans
// (off in the purego build).
var Fusion = fusion

// ThrottleAttempt is a Throttle's own work for one attempt, as a call makes
// it: asking t, then reporting an accept if t let the attempt through. It
// reads the real clock unless t has a clock of its own.
func ThrottleAttempt(t *Throttle) {
	if tk, ok := t.admit(nil); ok {
		t.settle(tk, accepted)
	}
}

// LatWarmup is the number of samples a Latency needs before Quantile
// follows them.
const LatWarmup = latWarmup

// LatRetained is the number of samples a Latency keeps.
const LatRetained = latRetained

// Estimate is the cached quantile estimate a Latency's Quantile schedule
// draws from.
type Estimate = estimate

// NewEstimate returns l's estimate of the q-quantile.
func NewEstimate(l *Latency, q float64) *Estimate { return &estimate{l: l, q: q} }

// Get returns the estimate, computed again only when it is stale.
func (e *estimate) Get() time.Duration { return e.get() }

// QuantileNow computes l's q-quantile from its samples, bypassing the cache.
func (l *Latency) QuantileNow(q float64) (time.Duration, bool) { return l.quantile(q) }

// PlanOf reports whether s is a plan's: a fused chain of built-in schedules.
func PlanOf(s Schedule) bool { return planOf(s) != nil }
