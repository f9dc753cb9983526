package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

// smallMetastable is a quick configuration for the model tests: a server
// of 5 workers (50 requests/s), 20s of warm-up, a 10s spike to twice the
// load, 60s after it.
func smallMetastable() msConfig {
	return msConfig{
		workers: 5, service: 100 * time.Millisecond, refusalCost: 0.05,
		load: 0.5, clients: 4, warmup: 20 * time.Second, trigger: 10 * time.Second, after: time.Minute, factor: 2,
		timeout: 500 * time.Millisecond, attempts: 5, base: 100 * time.Millisecond, limit: 2 * time.Second,
		budgetRatio: 0.1, budgetReserve: 10, seed: 1,
	}
}

// TestMetastableVerdict checks the verdicts on made-up goodput series:
// 10 buckets of warm-up, a 10s trigger, 70s after it (buckets 20 to 89).
func TestMetastableVerdict(t *testing.T) {
	cfg := smallMetastable()
	cfg.warmup, cfg.trigger, cfg.after = 10*time.Second, 10*time.Second, 70*time.Second
	series := func(good func(k int) int) (started, succeeded []int) {
		for k := range 91 {
			started = append(started, 10)
			succeeded = append(succeeded, good(k))
		}
		return started, succeeded
	}
	cases := []struct {
		name     string
		good     func(k int) int
		stuck    bool
		recovery *float64
	}{
		{"healthy", func(int) int { return 10 }, false, ptr(0.0)},
		{"back after 7s", func(k int) int {
			if k < 27 {
				return 0
			}
			return 10
		}, false, ptr(7.0)},
		{"stuck for good", func(int) int { return 0 }, true, nil},
		// 5% goodput for 62s, then back: stuck (below 10% in every
		// window of the 60s after the trigger), though it recovers
		// before the run ends.
		{"stuck, then back", func(k int) int {
			if k < 82 {
				return k % 2 // 5 in 100
			}
			return 10
		}, true, ptr(62.0)},
		{"one good window is not stuck", func(k int) int {
			if k >= 40 && k < 45 {
				return 5
			}
			return 0
		}, false, nil},
		{"a relapse counts", func(k int) int {
			if k < 25 || k >= 60 && k < 62 {
				return 0
			}
			return 10
		}, false, ptr(42.0)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stuck, rec := cfg.verdict(series(c.good))
			if stuck != c.stuck {
				t.Errorf("stuck = %v, want %v", stuck, c.stuck)
			}
			switch {
			case (rec == nil) != (c.recovery == nil):
				t.Errorf("recovery = %v, want %v", fmtPtr(rec), fmtPtr(c.recovery))
			case rec != nil && *rec != *c.recovery:
				t.Errorf("recovery = %v, want %v", *rec, *c.recovery)
			}
		})
	}
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "nil"
	}
	return time.Duration(*p * float64(time.Second)).String()
}

// TestMetastableNoRetries checks the model without retries at a low load:
// every request makes one attempt, nearly all succeed, nothing is stuck,
// and the drain bound is small.
func TestMetastableNoRetries(t *testing.T) {
	cfg := smallMetastable()
	cfg.attempts, cfg.load = 1, 0.3
	for _, st := range []msStrategy{msNaive, msRecommended} {
		r := msRun(&cfg, st)
		if r.AttemptsPerRequest != 1 || r.Stuck || r.RecoveryS == nil || r.GoodputAfterPct < 98 || r.DrainS > 1 {
			t.Errorf("%s: %+v; want 1 attempt per request, not stuck, recovered, goodput ≥ 98%%, drain ≤ 1s", st, r)
		}
	}
}

// TestMetastableDrainBound checks the drain bound against arithmetic: a
// spike to twice a load of 90% for 10s, without retries, leaves (1.8 − 1)
// × 10s = 8s of work queued, give or take the randomness of the arrivals
// and the service times.
func TestMetastableDrainBound(t *testing.T) {
	cfg := smallMetastable()
	cfg.workers, cfg.attempts, cfg.load = 20, 1, 0.9
	r := msRun(&cfg, msNaive)
	t.Logf("drain bound %vs", r.DrainS)
	if r.DrainS < 6.5 || r.DrainS > 9.5 {
		t.Errorf("drain bound %vs, want about 8s", r.DrainS)
	}
	if r.AttemptsPerRequest != 1 {
		t.Errorf("%v attempts per request, want 1", r.AttemptsPerRequest)
	}
}

// TestMetastableShape checks the default run's shape: at 90% load the
// server is healthy before the spike; naive retries leave it stuck after
// it, the recommended policy does not. It takes seconds, so it is skipped
// under the race detector and with -short.
func TestMetastableShape(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("the default run: too slow under -race or -short")
	}
	var rs []msResult
	mustJSON(t, &rs, "metastable", "-json", "-strategies", "naive,recommended")
	naive, rec := rs[0], rs[1]
	t.Logf("naive %+v", naive)
	t.Logf("recommended %+v", rec)
	if naive.GoodputBeforePct < 99 || rec.GoodputBeforePct < 99 {
		t.Errorf("goodput before the trigger %v%% and %v%%, want ≥ 99%%", naive.GoodputBeforePct, rec.GoodputBeforePct)
	}
	if !naive.Stuck || naive.RecoveryS != nil || naive.AttemptsPerRequest < 4.5 {
		t.Errorf("naive: stuck %v, recovery %v, %v attempts per request; want stuck for good at about 5 attempts",
			naive.Stuck, fmtPtr(naive.RecoveryS), naive.AttemptsPerRequest)
	}
	if rec.Stuck || rec.RecoveryS == nil {
		t.Errorf("recommended: stuck %v, recovery %v; want it to recover", rec.Stuck, fmtPtr(rec.RecoveryS))
	}
}

func TestMetastableSweep(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("60 runs: too slow under -race or -short")
	}
	args := []string{"metastable", "-sweep", "-workers", "5", "-warmup", "10s", "-after", "60s", "-strategies", "naive,budget"}
	var rs []msResult
	mustJSON(t, &rs, append(args, "-json")...)
	if len(rs) != 2*len(sweepLoads) {
		t.Fatalf("%d rows, want %d", len(rs), 2*len(sweepLoads))
	}
	for i, r := range rs {
		if want := sweepLoads[i/2]; r.BaseLoad != want {
			t.Errorf("row %d: base load %v, want %v", i, r.BaseLoad, want)
		}
	}
	stdout, _, code := cli(t, args...)
	if code != 0 || !strings.Contains(stdout, "boundary") {
		t.Errorf("exit %d, table:\n%s", code, stdout)
	}
}

func TestMetastableBadCommandLine(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no workers", []string{"-workers", "0"}, "-workers 0 is outside [1, 10000]"},
		{"no service", []string{"-service", "0s"}, "-service 0s is not positive"},
		{"full load", []string{"-load", "1"}, "-load 1 is outside (0, 1)"},
		{"NaN load", []string{"-load", "NaN"}, "-load NaN is outside (0, 1)"},
		{"small factor", []string{"-factor", "1"}, "-factor 1 is outside (1, 100]"},
		{"short trigger", []string{"-trigger-for", "10ms"}, "-trigger-for 10ms is shorter than 1s"},
		{"short after", []string{"-after", "30s"}, "-after 30s is shorter than 1m0s"},
		{"bad trigger", []string{"-trigger", "storm"}, `-trigger "storm" is not spike or dip`},
		{"bad discipline", []string{"-discipline", "random"}, `-discipline "random" is not fifo or lifo`},
		{"bad arrivals", []string{"-arrivals", "bursty"}, `-arrivals "bursty" is not poisson or constant`},
		{"bad scenario", []string{"-scenario", "paper"}, `-scenario "paper" is not default or published`},
		{"bad refusal cost", []string{"-refusal-cost", "2"}, "-refusal-cost 2 is outside [0, 1]"},
		{"no attempts", []string{"-attempts", "0"}, "-attempts 0 is outside [1, 100]"},
		{"no timeout", []string{"-timeout", "0s"}, "-timeout 0s is not positive"},
		{"cap below base", []string{"-cap", "10ms"}, "-cap 10ms is less than -base 100ms"},
		{"small K", []string{"-throttle-k", "0.5"}, "-throttle-k 0.5 is outside [1, 1e+09]"},
		{"negative window", []string{"-breaker-window", "-1s"}, "-breaker-window -1s is negative"},
		{"too many requests", []string{"-workers", "10000", "-service", "1ms"}, "more than 5000000"},
		{"unknown strategy", []string{"-strategies", "naive,limiter"}, `unknown strategy "limiter"`},
		{"chart of a sweep", []string{"-sweep", "-out", "x.svg"}, "does not go with -sweep"},
		{"tiny budget", []string{"-budget-ratio", "1e-7"}, "-budget-ratio 1e-07 is below 1e-06"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := cli(t, append([]string{"metastable"}, c.args...)...)
			if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 ||
				!strings.HasPrefix(stderr, "retrysim metastable: ") || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want status 2 and one line saying %q", code, stdout, stderr, c.want)
			}
		})
	}
}

func TestMetastableHelp(t *testing.T) {
	stdout, stderr, code := cli(t, "metastable", "-h")
	if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "Usage: retrysim metastable") {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	for _, st := range msStrategies {
		if !strings.Contains(stdout, "  "+string(st)+" ") {
			t.Errorf("-h does not describe %s", st)
		}
	}
}

// BenchmarkMetastableDefault is the default metastable run, every strategy,
// through the command line: cmd/retrysim/README.md gives its time.
func BenchmarkMetastableDefault(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if code := run([]string{"metastable", "-json"}, io.Discard, io.Discard, false); code != 0 {
			b.Fatalf("exit status %d", code)
		}
	}
}
