package main

import (
	"flag"
	"testing"
	"time"
)

// TestPaperShape checks the shape "The Tail at Scale" reports, in the
// paper scenario as the command runs it: hedging after the p95, with a
// Budget of 5%, cuts the p99.9 of the reads tenfold or more for at most 5%
// more requests. (Without the Budget the cut is about the same, for 6.9%
// more: see docs/TAIL.md.) It takes seconds, so it is skipped under the
// race detector and with -short.
func TestPaperShape(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("10 million leaves: too slow under -race or -short")
	}
	var rs []hedgeResult
	mustJSON(t, &rs, "hedge", "-json", "-scenario", "paper", "-strategies", "none,adaptive+budget")
	none, hedged := rs[0], rs[1]
	cut := none.P999 / hedged.P999
	t.Logf("p99.9 %v ms → %v ms (%.1f×) for %v%% more requests", none.P999, hedged.P999, cut, hedged.ExtraLoad)
	if cut < 10 || hedged.ExtraLoad > 5 {
		t.Errorf("p99.9 cut %.1f× for %v%% extra load; want ≥ 10× for ≤ 5%%", cut, hedged.ExtraLoad)
	}
}

// TestPaperScenarioFlags checks that -scenario paper sets the values it
// states, and that a flag given on the command line wins over it.
func TestPaperScenarioFlags(t *testing.T) {
	fs := flag.NewFlagSet("hedge", flag.ContinueOnError)
	fanout := fs.Int("fanout", 100, "")
	servers := fs.Int("servers", 100, "")
	requests := fs.Int("requests", 20000, "")
	var loads floatList
	fs.Var(&loads, "load", "")
	service := fs.Duration("service", time.Millisecond, "")
	sigma := fs.Float64("sigma", 0.5, "")
	pause := fs.Duration("pause", 50*time.Millisecond, "")
	every := fs.Duration("pause-every", 10*time.Second, "")
	delay := fs.Duration("delay", 5*time.Millisecond, "")
	quantile := fs.Float64("quantile", 0.9, "")
	if err := fs.Parse([]string{"-requests", "300"}); err != nil {
		t.Fatal(err)
	}
	if err := applyScenario(fs, "paper"); err != nil {
		t.Fatal(err)
	}
	if *fanout != 1000 || *servers != 100 || *requests != 300 || len(loads) != 1 || loads[0] != 0.1 ||
		*service != time.Millisecond || *sigma != 0.5 || *pause != time.Second || *every != 5*time.Hour ||
		*delay != 10*time.Millisecond || *quantile != 0.95 {
		t.Errorf("fanout %d servers %d requests %d loads %v service %v sigma %v pause %v every %v delay %v quantile %v",
			*fanout, *servers, *requests, loads, *service, *sigma, *pause, *every, *delay, *quantile)
	}
	if err := applyScenario(fs, "bogus"); err == nil {
		t.Error("an unknown scenario is accepted")
	}
}

// TestHedgeSweep checks that a sweep's rows are those of a run at each
// pause length, with the pause added.
func TestHedgeSweep(t *testing.T) {
	args := []string{"hedge", "-json", "-requests", "300", "-fanout", "10", "-servers", "10", "-pause-every", "1s", "-strategies", "none,adaptive"}
	var sweep []hedgeResult
	mustJSON(t, &sweep, append(args, "-sweep-pause", "20ms,80ms")...)
	for i, p := range []string{"20ms", "80ms"} {
		var one []hedgeResult
		mustJSON(t, &one, append(args, "-pause", p)...)
		for j, r := range one {
			got := sweep[2*i+j]
			want, _ := time.ParseDuration(p)
			if got.Pause == nil || *got.Pause != ms(want) {
				t.Fatalf("row %d: pause %v, want %v", 2*i+j, got.Pause, p)
			}
			got.Pause = nil
			if got.P999 != r.P999 || got.ExtraLoad != r.ExtraLoad || got.Strategy != r.Strategy || got.P50 != r.P50 {
				t.Errorf("pause %s: sweep row %+v, single run %+v", p, got, r)
			}
		}
	}
	if _, stderr, code := cli(t, append(args, "-sweep-pause", "20ms", "-load", "0.1,0.2")...); code == 0 {
		t.Errorf("a sweep with two loads is accepted: %s", stderr)
	}
}
