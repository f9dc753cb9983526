package main

import (
	"testing"
)

// TestOverloadDefaults checks the runs that chose the Throttle's and the
// Breaker's defaults (docs/OVERLOAD.md, "Choosing the defaults"): with the
// library's defaults, each sheds load in the default run (outage load at
// most 3× the capacity) and recovers within 5 s, and the Throttle does not
// lock the dependency out after a cold start into a hard-down outage.
func TestOverloadDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("two full runs")
	}
	byName := func(rs []overloadResult) map[string]overloadResult {
		m := map[string]overloadResult{}
		for _, r := range rs {
			m[r.Strategy] = r
		}
		return m
	}
	recovered := func(t *testing.T, r overloadResult) {
		t.Helper()
		if r.RecoveryS == nil || *r.RecoveryS > 5 {
			t.Errorf("%s: recovery %v, want at most 5s", r.Strategy, r.RecoveryS)
		}
	}
	t.Run("the default run", func(t *testing.T) {
		var rs []overloadResult
		mustJSON(t, &rs, "overload", "-json", "-strategies", "throttle,breaker+backoff")
		for _, r := range byName(rs) {
			if r.OutageLoadX > 3 {
				t.Errorf("%s: outage load %v×, want at most 3×", r.Strategy, r.OutageLoadX)
			}
			recovered(t, r)
		}
	})
	t.Run("cold start into a hard-down outage", func(t *testing.T) {
		var rs []overloadResult
		mustJSON(t, &rs, "overload", "-json", "-strategies", "throttle,breaker+backoff",
			"-warmup", "0s", "-outage", "5s", "-outage-capacity", "0.001", "-after", "3m")
		for _, r := range byName(rs) {
			if r.GoodputPct < 90 {
				t.Errorf("%s: goodput %v%%, want at least 90%%", r.Strategy, r.GoodputPct)
			}
			recovered(t, r)
		}
	})
}
