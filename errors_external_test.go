package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestErrorAllocations checks that matching a call's *Error with errors.Is
// allocates nothing, nor a relative pushback on the retry path.
func TestErrorAllocations(t *testing.T) {
	skipRace(t)
	_, err := retry.Retry(context.Background(), retry.Delays(), func(context.Context) (int, error) { return 0, errAlloc })
	require.ErrorIs(t, err, errAlloc)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = errors.Is(err, errAlloc) }), "errors.Is does not allocate")

	ctx, once, calls := context.Background(), retry.Constant(0).Take(1), 0
	allocs := func(first error) float64 {
		fn := func(context.Context) error {
			if calls++; calls == 1 {
				return first
			}
			return nil
		}
		return testing.AllocsPerRun(100, func() {
			calls = 0
			_ = retry.Do(ctx, once, fn, retry.WithClock(allocClock{}))
		})
	}
	assert.Equal(t, allocs(errAlloc), allocs(retry.RetryAfter(errAlloc, time.Second)), "a pushback allocates nothing")
}
