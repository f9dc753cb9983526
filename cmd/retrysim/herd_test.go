package main

import (
	"strings"
	"testing"
	"time"
)

// smallHerd is a quick configuration for the model tests.
func smallHerd() herdConfig {
	return herdConfig{
		clients: 1, outage: time.Hour, slice: 10 * time.Millisecond, capacity: 100,
		base: 100 * time.Millisecond, limit: 10 * time.Second, every: time.Second, attempts: 5,
		budgetRatio: 0.1, budgetReserve: 10, seed: 1,
	}
}

func noop() {}

// TestHerdFollowsTheSchedule checks that a lone client calls exactly when
// retry.Exponential says: at 0, 100ms, 300ms, 700ms and 1.5s.
func TestHerdFollowsTheSchedule(t *testing.T) {
	cfg := smallHerd()
	r := herdOne(&cfg, exponential, noop)
	want := map[int]bool{0: true, 10: true, 30: true, 70: true, 150: true}
	for k, n := range r.series {
		if want[k] != (n == 1) || n > 1 {
			t.Errorf("slice %d has %d calls", k, n)
		}
	}
	if r.Calls != 5 || r.GaveUp != 1 || r.P50 != nil {
		t.Errorf("calls %d, gave up %v, p50 %v; want 5 calls, all gave up, no p50", r.Calls, r.GaveUp, r.P50)
	}
}

// TestHerdCapacity checks the server: 50 clients in lockstep every 100ms,
// 10 served per slice, so 50+40+30+20+10 calls and the last success at 400ms.
func TestHerdCapacity(t *testing.T) {
	cfg := smallHerd()
	cfg.clients, cfg.outage, cfg.capacity, cfg.every, cfg.attempts = 50, 0, 10, 100*time.Millisecond, 100
	r := herdOne(&cfg, constant, noop)
	if r.Calls != 150 || r.Peak != 50 || r.GaveUp != 0 || *r.Max != 400 || *r.P50 != 200 {
		t.Errorf("got calls %d, peak %d, gave up %v, p50 %v, max %v; want 150, 50, 0, 200, 400",
			r.Calls, r.Peak, r.GaveUp, *r.P50, *r.Max)
	}
}

// TestHerdBudget checks that full+budget uses a real retry.Budget: with no
// reserve it allows no retry at all, and with a large one nobody gives up.
func TestHerdBudget(t *testing.T) {
	cfg := smallHerd()
	cfg.clients, cfg.outage, cfg.attempts = 200, 500*time.Millisecond, 10
	cfg.budgetRatio, cfg.budgetReserve = 0.5, 0
	if r := herdOne(&cfg, fullBudget, noop); r.Calls != 200 || r.GaveUp != 1 {
		t.Errorf("reserve 0: calls %d, gave up %v; want 200, all", r.Calls, r.GaveUp)
	}
	cfg.budgetReserve = 100000
	r := herdOne(&cfg, fullBudget, noop)
	plain := herdOne(&cfg, full, noop)
	if r.GaveUp != 0 || r.Calls != plain.Calls {
		t.Errorf("large reserve: calls %d, gave up %v; want %d calls as without a budget, none gave up",
			r.Calls, r.GaveUp, plain.Calls)
	}
}

// TestHerdJitterCures checks the point of the default run, on a smaller
// fleet: jitter keeps the load after recovery near capacity, lockstep does
// not.
func TestHerdJitterCures(t *testing.T) {
	cfg := smallHerd()
	cfg.clients, cfg.outage, cfg.capacity, cfg.attempts, cfg.strategies = 400, 2*time.Second, 4, 10, herdStrategies
	byName := map[string]herdResult{}
	for _, r := range runHerd(cfg, noop) {
		byName[r.Strategy] = r
	}
	for _, st := range []string{"constant", "exponential"} {
		if byName[st].Peak < 200 {
			t.Errorf("%s: peak %d after recovery, want the whole lockstep herd", st, byName[st].Peak)
		}
	}
	for _, st := range []string{"full", "decorrelated", "smooth"} {
		if byName[st].Peak > 5*cfg.capacity || byName[st].GaveUp > 0.05 {
			t.Errorf("%s: peak %d, gave up %v; want near capacity and few give-ups", st, byName[st].Peak, byName[st].GaveUp)
		}
	}
}

// TestProportionalOnRequest checks that the extra strategy, gRPC's ±20%
// jitter, can be asked for in both models, keeps the order asked for, and
// spreads a herd (no lockstep wave of every client after recovery).
func TestProportionalOnRequest(t *testing.T) {
	var herd []map[string]any
	mustJSON(t, &herd, "herd", "-json", "-clients", "1000", "-capacity", "10", "-strategies", "proportional,exponential")
	if len(herd) != 2 || herd[0]["strategy"] != "proportional" || herd[1]["strategy"] != "exponential" {
		t.Fatalf("herd rows = %v", herd)
	}
	if p, e := herd[0]["peak"].(float64), herd[1]["peak"].(float64); p >= e/2 {
		t.Errorf("proportional peak %v, want well below exponential's %v", p, e)
	}
	var occ []map[string]any
	mustJSON(t, &occ, "occ", "-json", "-clients", "10", "-trials", "5", "-strategies", "proportional")
	if len(occ) != 1 || occ[0]["strategy"] != "proportional" || occ[0]["calls"].(float64) < 10 {
		t.Errorf("occ rows = %v", occ)
	}
}

// TestHerdBudgetNote checks that the text output explains full+budget's
// give-ups, which read like a bug without it, and says nothing when that row
// is absent or nobody gave up; -json rows carry no such note.
func TestHerdBudgetNote(t *testing.T) {
	const note = "not a bug, the Budget did its job"
	cases := []struct {
		name string
		args []string
		want bool
	}{
		{"default strategies", []string{"herd", "-clients", "300", "-capacity", "5"}, true},
		{"no budget row", []string{"herd", "-clients", "300", "-capacity", "5", "-strategies", "full,equal"}, false},
		{"a reserve nobody exhausts", []string{"herd", "-clients", "300", "-capacity", "5", "-strategies", "full,full+budget", "-budget-reserve", "100000"}, false},
		{"json", []string{"herd", "-json", "-clients", "300", "-capacity", "5"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := cli(t, c.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if got := strings.Contains(stdout, note); got != c.want {
				t.Errorf("note printed: %v, want %v:\n%s", got, c.want, stdout)
			}
			if c.want && !strings.Contains(stdout, "instead of full's") {
				t.Errorf("the note does not compare with full:\n%s", stdout)
			}
		})
	}
}
