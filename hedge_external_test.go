package retry_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHedgeAllocations pins what a Hedge whose first attempt wins
// allocates, so that a change that adds to it is noticed (the cost is
// measured by BenchmarkHedge).
func TestHedgeAllocations(t *testing.T) {
	skipRace(t)
	ok := func(context.Context) (int, error) { return 1, nil }
	s := retry.Constant(time.Hour).Take(1)
	allocs := testing.AllocsPerRun(1000, func() {
		_, _ = retry.Hedge(context.Background(), s, ok)
	})
	most := 6.0
	if !retry.Fusion {
		most += 3 // purego: Take is a relay (two allocations) and Hedge ranges it (one)
	}
	assert.LessOrEqual(t, allocs, most)
	t.Logf("%v allocations", allocs)
}

// TestHedgeAdaptiveAllocations checks that the README's adaptive chain,
// a Latency's Quantile bounded by AtLeast, Cap and Take, costs a Hedge call
// no more than a fixed delay with the same options: Quantile is a plan's
// source, so the chain is fused and Hedge draws it from its plan.
func TestHedgeAdaptiveAllocations(t *testing.T) {
	skipRace(t)
	if !retry.Fusion {
		t.Skip("purego: no chain is fused")
	}
	ok := func(context.Context) (int, error) { return 1, nil }
	lat := retry.NewLatency()
	for range retry.LatWarmup {
		lat.Record(time.Hour)
	}
	opts := []retry.Option{retry.WithLatency(lat)}
	// The mean number of allocations per call, not floored as
	// testing.AllocsPerRun floors it: a call whose first attempt returns
	// before Hedge arms its timer allocates one object less, so a count that
	// meets even one such call out of 1000 floors to one less, and the two
	// counts below differed now and then for that race alone.
	count := func(s retry.Schedule) float64 {
		call := func() { _, _ = retry.Hedge(context.Background(), s, ok, opts...) }
		call()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 1000 {
			call()
		}
		runtime.ReadMemStats(&after)
		return float64(after.Mallocs-before.Mallocs) / 1000
	}
	require.True(t, retry.PlanOf(lat.Quantile(0.95).AtLeast(5*time.Millisecond).Cap(time.Hour).Take(1)))
	fixed := count(retry.Constant(time.Hour).Take(1))
	adaptive := count(lat.Quantile(0.95).AtLeast(5 * time.Millisecond).Cap(time.Hour).Take(1))
	assert.Less(t, adaptive, fixed+0.5, "not one allocation more per call")
	t.Logf("fixed %.3f, adaptive %.3f allocations per call", fixed, adaptive)
}
