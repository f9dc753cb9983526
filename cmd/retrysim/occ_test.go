package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// TestOccTicksAtDataPoints checks the x axis of the occ chart: a tick at
// every number of clients simulated and no other, labelled unless the
// labels would crowd.
func TestOccTicksAtDataPoints(t *testing.T) {
	type tick struct {
		value float64
		label string
	}
	cases := []struct {
		clients []int
		want    []tick
	}{
		{[]int{10, 50, 100}, []tick{{10, "10"}, {50, "50"}, {100, "100"}}},
		{[]int{100, 10, 50, 10}, []tick{{10, "10"}, {50, "50"}, {100, "100"}}},
		{[]int{7}, []tick{{7, "7"}}},
		{[]int{1, 2, 3, 10, 50, 100}, []tick{{1, "1"}, {2, ""}, {3, ""}, {10, "10"}, {50, "50"}, {100, "100"}}},
		{[]int{1, 50, 98, 100}, []tick{{1, "1"}, {50, "50"}, {98, ""}, {100, "100"}}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.clients), func(t *testing.T) {
			var got []tick
			for _, tk := range clientTicks(c.clients) {
				got = append(got, tick{tk.Value, tk.Label})
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("ticks = %v, want %v", got, c.want)
			}
		})
	}

	// And in the image: the labels of both panels' x axes are the numbers
	// of clients, not round numbers between them.
	path := filepath.Join(t.TempDir(), "occ.svg")
	if _, stderr, code := cli(t, "occ", "-clients", "10,50,100", "-trials", "2", "-out", path); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{">10<", ">50<", ">100<"} {
		if n := strings.Count(string(b), label); n < 2 {
			t.Errorf("label %s appears %d times, want it on each x axis", label, n)
		}
	}
	for _, label := range []string{">20<", ">60<"} {
		if strings.Contains(string(b), label) {
			t.Errorf("label %s is not a number of clients", label)
		}
	}
}
