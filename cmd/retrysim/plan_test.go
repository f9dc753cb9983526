package main

import (
	"slices"
	"strings"
	"testing"
)

// TestPlanExact is the exact case: the six delays of
// exponential(100ms).cap(2s).take(6), in text and in JSON.
func TestPlanExact(t *testing.T) {
	const spec = "exponential(100ms).cap(2s).take(6)"
	stdout, stderr, code := cli(t, "plan", "-schedule", spec)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var delays []string
	for line := range strings.Lines(stdout) {
		if f := strings.Fields(line); len(f) == 2 && (f[0] == "retry" || f[0] >= "1" && f[0] <= "9") {
			delays = append(delays, f[1])
		}
	}
	want := []string{"delay", "100ms", "200ms", "400ms", "800ms", "1.6s", "2s"}
	if !slices.Equal(delays, want) {
		t.Errorf("delay column = %q, want %q\n%s", delays, want, stdout)
	}
	if !strings.Contains(stdout, "7 attempts") || !strings.Contains(stdout, "total wait: median 5.1s, p99 5.1s, worst 5.1s") {
		t.Errorf("missing attempts or total:\n%s", stdout)
	}

	var p planResult
	mustJSON(t, &p, "plan", "-json", "-schedule", spec)
	wantMs := []float64{100, 200, 400, 800, 1600, 2000}
	if p.Attempts == nil || *p.Attempts != 7 || len(p.Delays) != len(wantMs) {
		t.Fatalf("attempts %v, %d delays; want 7 attempts, 6 delays", p.Attempts, len(p.Delays))
	}
	for i, d := range p.Delays {
		if d.Min != wantMs[i] || d.P50 != wantMs[i] || d.P99 != wantMs[i] || d.Max != wantMs[i] {
			t.Errorf("delay %d = %+v, want exactly %vms", i+1, d, wantMs[i])
		}
	}
	if p.Total != (totalStats{5100, 5100, 5100}) {
		t.Errorf("total = %+v, want 5100ms", p.Total)
	}
}

func TestPlanWarnings(t *testing.T) {
	cases := []struct {
		spec     string
		attempts int // 0: never gives up
		want     []string
	}{
		{"exponential(100ms)", 0, []string{"no cap: the 30th delay is 1.7 years", "no jitter", "never gives up"}},
		{"exponential(100ms).cap(2s).take(6)", 7, []string{"no jitter"}},
		{"exponential(100ms).cap(2s).fulljitter.take(5)", 6, nil},
		{"exponential(1s).take(20)", 21, []string{"no cap: the 20th delay is 6.07 days", "no jitter"}},
		{"exponential(100ms).fulljitter.cap(1s).take(8)", 9, []string{"delays pile up at 1s"}},
		{"decorrelated(100ms, 2s)", 0, []string{"never gives up"}},
		{"exponential(100ms).JitTer(0.5).then(constant(1s).take(2)).cap(1s).take(9)", 10, []string{"delays pile up at 1s"}},
		{"smooth(100ms).within(1m)", -1, nil},
		{"constant(1s).within(3500ms)", 4, []string{"no jitter"}},
		{"delays()", 1, nil},
		{"take(3)", -2, nil},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			if c.attempts == -2 {
				if _, _, code := cli(t, "plan", "-schedule", c.spec); code != 2 {
					t.Errorf("exit %d, want 2", code)
				}
				return
			}
			var p planResult
			mustJSON(t, &p, "plan", "-json", "-samples", "2000", "-schedule", c.spec)
			switch {
			case c.attempts == 0 && p.Attempts != nil:
				t.Errorf("attempts = %d, want none (never gives up)", *p.Attempts)
			case c.attempts > 0 && (p.Attempts == nil || *p.Attempts != c.attempts):
				t.Errorf("attempts = %v, want %d", p.Attempts, c.attempts)
			}
			if len(p.Warnings) != len(c.want) {
				t.Errorf("warnings = %q, want %d: %q", p.Warnings, len(c.want), c.want)
			}
			for _, w := range c.want {
				if !slices.ContainsFunc(p.Warnings, func(s string) bool { return strings.Contains(s, w) }) {
					t.Errorf("no warning says %q: %q", w, p.Warnings)
				}
			}
		})
	}
}

// TestPlanJitterAdvice checks that the advice of the no-jitter warning fits
// the schedule: a cap is mentioned only if there is one, and the schedule it
// suggests parses and has jitter.
func TestPlanJitterAdvice(t *testing.T) {
	cases := []struct{ spec, want string }{
		{"constant(1s).take(3)", "add a jitter, such as constant(1s).fulljitter.take(3)"},
		{"exponential(100ms).cap(2s).take(6)", "add .fulljitter after the cap: exponential(100ms).cap(2s).fulljitter.take(6)"},
		{"constant(1s).within(3500ms)", "add a jitter, such as constant(1s).fulljitter.within(3500ms)"},
		{"delays(1ms, 2ms).then(constant(1s).take(2))", "add a jitter, such as delays(1ms, 2ms).then(constant(1s).take(2)).fulljitter"},
		{"exponential(100ms).cap(2s).take(3).cap(1s)", "add .fulljitter after the cap: exponential(100ms).cap(2s).take(3).cap(1s).fulljitter"},
		{" Exponential(1.5s).Cap(2s) .Take(2) ", "add .fulljitter after the cap: Exponential(1.5s).Cap(2s).fulljitter.Take(2)"},
	}
	// Without a cap, the advice follows the no-cap warning's.
	var p planResult
	mustJSON(t, &p, "plan", "-json", "-samples", "100", "-schedule", "exponential(100ms).take(40)")
	if len(p.Warnings) != 2 || !strings.Contains(p.Warnings[0], "bound the delays with .cap(...) before any jitter") ||
		!strings.HasSuffix(p.Warnings[1], "; add .fulljitter after that cap") {
		t.Errorf("warnings %q, want no cap, then no jitter with .fulljitter after that cap", p.Warnings)
	}

	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			var p planResult
			mustJSON(t, &p, "plan", "-json", "-samples", "100", "-schedule", c.spec)
			i := slices.IndexFunc(p.Warnings, func(w string) bool { return strings.HasPrefix(w, "no jitter") })
			if i < 0 {
				t.Fatalf("no jitter warning: %q", p.Warnings)
			}
			if !strings.HasSuffix(p.Warnings[i], "; "+c.want) {
				t.Errorf("warning %q, want it to end %q", p.Warnings[i], c.want)
			}
			_, fixed, _ := strings.Cut(c.want, ": ")
			if fixed == c.want || fixed == "" {
				_, fixed, _ = strings.Cut(c.want, "such as ")
			}
			var q planResult
			mustJSON(t, &q, "plan", "-json", "-samples", "100", "-schedule", fixed)
			if slices.ContainsFunc(q.Warnings, func(w string) bool { return strings.HasPrefix(w, "no jitter") }) {
				t.Errorf("the advice %q has no jitter either", fixed)
			}
		})
	}
}

// TestPlanJitterBounds checks the statistics of a jittered schedule.
func TestPlanJitterBounds(t *testing.T) {
	var p planResult
	mustJSON(t, &p, "plan", "-json", "-samples", "5000", "-schedule", "exponential(100ms).cap(1s).fulljitter.take(5)")
	upper := []float64{100, 200, 400, 800, 1000}
	for i, d := range p.Delays {
		if !(0 <= d.Min && d.Min <= d.P50 && d.P50 <= d.P99 && d.P99 <= d.Max && d.Max <= upper[i]) {
			t.Errorf("delay %d = %+v, want ordered within [0, %v]", i+1, d, upper[i])
		}
		if d.P50 < 0.4*upper[i] || d.P50 > 0.6*upper[i] {
			t.Errorf("delay %d: median %v, want about half of %v", i+1, d.P50, upper[i])
		}
	}
	if p.Total.Max > 2500 || p.Total.P50 > p.Total.P99 || p.Total.P99 > p.Total.Max {
		t.Errorf("total = %+v, want ordered and at most 2.5s", p.Total)
	}
}

func TestPlanLongScheduleIsCut(t *testing.T) {
	stdout, _, code := cli(t, "plan", "-schedule", "constant(1ms).take(100)")
	if code != 0 || !strings.Contains(stdout, "101 attempts") || !strings.Contains(stdout, "... 70 more") ||
		!strings.Contains(stdout, "total wait: median 100ms") {
		t.Errorf("exit %d:\n%s", code, stdout)
	}
}

// TestPlanSeeded checks that a jittered plan is the same for the same -seed
// and differs for another.
func TestPlanSeeded(t *testing.T) {
	spec := "exponential(100ms).cap(1s).fulljitter.take(5)"
	run := func(seed string) string {
		stdout, stderr, code := cli(t, "plan", "-json", "-samples", "200", "-seed", seed, "-schedule", spec)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		return stdout
	}
	if a, b := run("7"), run("7"); a != b {
		t.Errorf("same seed, different plans:\n%s\n%s", a, b)
	}
	if a, b := run("7"), run("8"); a == b {
		t.Errorf("different seeds, same plan:\n%s", a)
	}
}
