package retry

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
