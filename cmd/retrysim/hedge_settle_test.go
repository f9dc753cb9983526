package main

import (
	"testing"

	"github.com/seed-b8c8f69d/retry"
)

// TestSettleAllocatesNothing checks that a leaf's call against the Budget,
// which the budget strategy makes once per leaf (millions of times in the
// paper scenario), allocates nothing when the Budget lets it through: it
// used to allocate its function and options every time, which doubled the
// strategy's run time.
func TestSettleAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	cfg := smallHedge()
	h := newHedgeSim(&cfg, 0.3, retry.Constant(0).Take(1), retry.NewBudget(1, 1000), nil)
	hedged := 0
	allocs := testing.AllocsPerRun(1000, func() {
		h.settle(false) // deposits a token
		if h.settle(true) {
			hedged++
		}
	})
	if allocs != 0 {
		t.Errorf("settle allocates %v times per pair of calls, want 0", allocs)
	}
	if hedged != 1001 {
		t.Errorf("%d hedges let through, want 1001", hedged)
	}
}
