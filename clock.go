package retry

import (
	"context"
	"time"
)

// A Clock tells the time and waits; Retry uses one for all its waits and
// readings (see WithClock). The default is the real clock, which uses one
// time.Timer per Retry call, reset between waits.
//
// Implementations must be safe for concurrent use if they are shared by
// concurrent Retry calls. FakeClock is one for tests.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Sleep waits for d, or returns early with ctx's error when ctx ends
	// first. It returns nil after a full wait; a d of zero or less returns at
	// once.
	Sleep(ctx context.Context, d time.Duration) error
}
