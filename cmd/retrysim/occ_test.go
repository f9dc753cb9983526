package main

import (
	"testing"
	"time"
)

func smallOcc() occConfig {
	return occConfig{
		clients: []int{1}, trials: 20, base: 5 * time.Millisecond, limit: 2 * time.Second,
		netMean: 10 * time.Millisecond, netStdDev: 2 * time.Millisecond, seed: 1, strategies: occStrategies,
	}
}

// TestOccLoneClient: one client never conflicts, so it makes one write and
// finishes after four network crossings.
func TestOccLoneClient(t *testing.T) {
	for _, r := range runOcc(smallOcc(), noop) {
		if r.Calls != 1 || r.TimeMs < 30 || r.TimeMs > 50 {
			t.Errorf("%s: %v calls in %vms, want 1 call in about 40ms", r.Strategy, r.Calls, r.TimeMs)
		}
	}
}

// TestOccBlogOrdering checks the blog's findings on a small run: jitter
// needs fewer calls than exponential backoff without it, which in turn is
// far slower than the jittered strategies.
func TestOccBlogOrdering(t *testing.T) {
	cfg := smallOcc()
	cfg.clients, cfg.trials = []int{40}, 10
	byName := map[string]occResult{}
	for _, r := range runOcc(cfg, noop) {
		byName[r.Strategy] = r
		if r.Calls < 40 {
			t.Errorf("%s: %v calls for 40 clients", r.Strategy, r.Calls)
		}
	}
	for _, st := range []string{"full", "equal", "decorrelated", "smooth"} {
		if byName[st].Calls >= byName["exponential"].Calls || byName[st].TimeMs >= byName["exponential"].TimeMs {
			t.Errorf("%s (%v calls, %vms) is not better than exponential (%v calls, %vms)", st,
				byName[st].Calls, byName[st].TimeMs, byName["exponential"].Calls, byName["exponential"].TimeMs)
		}
	}
	if byName["full"].Calls >= byName["none"].Calls {
		t.Errorf("full jitter (%v calls) is not better than no backoff (%v)", byName["full"].Calls, byName["none"].Calls)
	}
}
