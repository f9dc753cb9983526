package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// Helpers shared by the external tests. The allocation tests
// (Test…Allocations, in the *_external_test.go file beside the code each
// one checks) run from this external package, where users call from:
// inlining and escape analysis differ there. Inside the package, a call's
// variadic options could stay on the stack where a user's would not
// (golang.org/issue/79592: an instantiation made in package retry, reached
// from an inlined body, has no escape facts in another package).

var errAlloc = errors.New("alloc test error")

// allocClock is a Clock that records nothing, so that allocation tests
// measure Retry alone.
type allocClock struct{}

func (allocClock) Now() time.Time { return epoch }
func (allocClock) Sleep(ctx context.Context, _ time.Duration) error {
	return ctx.Err()
}

// opaque returns s behind a Schedule of its own, as a hand-written
// Schedule would be: Retry and Do take the general path.
func opaque(s retry.Schedule) retry.Schedule {
	return func(yield func(time.Duration) bool) { s(yield) }
}

func skipRace(t *testing.T) {
	t.Helper()
	if retry.RaceEnabled {
		t.Skip("the race detector allocates")
	}
}
