package retry

// What the external test package (retry_test) needs to know of the build.
const (
	// RaceEnabled reports whether the race detector is on: it allocates.
	RaceEnabled = raceEnabled
)

// Fusion reports whether chains of built-in schedules are fused into plans
// (off in the purego build).
var Fusion = fusion
