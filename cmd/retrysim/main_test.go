package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seed-b8c8f69d/retry"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestMain lets a test run the real main in a child process: with
// RETRYSIM_RUN_MAIN=1 the test binary is retrysim.
func TestMain(m *testing.M) {
	if os.Getenv("RETRYSIM_RUN_MAIN") == "1" {
		// The child is started as "test-binary -test.run=^$ -- args...".
		args := os.Args[1:]
		for i, a := range args {
			if a == "--" {
				args = args[i+1:]
				break
			}
		}
		os.Args = append([]string{"retrysim"}, args...)
		main()
		return
	}
	os.Exit(m.Run())
}

// cli runs retrysim in-process with args, stderr not a terminal.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut, false)
	return out.String(), errOut.String(), code
}

// mustJSON runs args, which must succeed and print exactly one JSON document
// on stdout and nothing on stderr, and decodes it into v.
func mustJSON(t *testing.T, v any, args ...string) []byte {
	t.Helper()
	stdout, stderr, code := cli(t, args...)
	if code != 0 || stderr != "" {
		t.Fatalf("retrysim %s: exit %d, stderr %q", strings.Join(args, " "), code, stderr)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("retrysim %s: stdout is not JSON: %v\n%s", strings.Join(args, " "), err, stdout)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("retrysim %s: stdout has more than one JSON document", strings.Join(args, " "))
	}
	return []byte(stdout)
}

// golden compares got with testdata/name, or rewrites the file with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run go test -update if the change is intended)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestGoldenJSON(t *testing.T) {
	cases := []struct {
		name string
		file string
		args []string
		v    any
	}{
		{"herd", "herd.json", []string{"herd", "-json", "-clients", "300", "-capacity", "5", "-seed", "1"}, &[]herdResult{}},
		{"herd seed 2", "herd_seed2.json", []string{"-json", "-clients", "200", "-outage", "1s", "-seed", "2"}, &[]herdResult{}},
		{"occ", "occ.json", []string{"occ", "-json", "-clients", "5,20", "-trials", "10", "-seed", "1"}, &[]occResult{}},
		{"plan exact", "plan_exponential.json", []string{"plan", "-json", "-schedule", "exponential(100ms).cap(2s).take(6)"}, &planResult{}},
		{"plan forever", "plan_forever.json", []string{"plan", "-json", "-samples", "10", "-schedule", "exponential(100ms)"}, &planResult{}},
		{"amplify", "amplify.json", []string{"amplify", "-json"}, &amplifyResult{}},
		{"amplify budget", "amplify_4x2.json", []string{"amplify", "-json", "-depth", "2", "-attempts", "4", "-requests", "100", "-budget-reserve", "3"}, &amplifyResult{}},
		{"hedge", "hedge.json", []string{"hedge", "-json", "-requests", "1000", "-fanout", "10", "-servers", "10", "-pause-every", "1s", "-load", "0.2,0.5"}, &[]hedgeResult{}},
		{"hedge paper", "hedge_paper.json", []string{"hedge", "-json", "-scenario", "paper", "-requests", "200", "-pause-every", "10m"}, &[]hedgeResult{}},
		{"hedge sweep", "hedge_sweep.json", []string{"hedge", "-json", "-scenario", "paper", "-requests", "200", "-pause-every", "10m", "-strategies", "none,adaptive", "-sweep-pause", "100ms,1s"}, &[]hedgeResult{}},
		{"overload", "overload.json", []string{"overload", "-json", "-rate", "100", "-capacity", "200", "-clients", "4", "-warmup", "20s", "-outage", "20s", "-after", "30s", "-throttle-window", "10s", "-breaker-window", "10s"}, &[]overloadResult{}},
		{"metastable", "metastable.json", []string{"metastable", "-json", "-workers", "5", "-clients", "4", "-warmup", "20s", "-after", "60s", "-load", "0.7"}, &[]msResult{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			golden(t, c.file, mustJSON(t, c.v, c.args...))
		})
	}
}

func TestDeterministic(t *testing.T) {
	for _, args := range [][]string{
		{"herd", "-json", "-clients", "200"},
		{"occ", "-json", "-clients", "10", "-trials", "5"},
		{"hedge", "-json", "-requests", "300", "-fanout", "10", "-servers", "10", "-pause-every", "1s"},
		{"overload", "-json", "-rate", "50", "-capacity", "100", "-warmup", "10s", "-outage", "10s", "-after", "10s", "-throttle-window", "5s", "-breaker-window", "5s"},
		{"metastable", "-json", "-workers", "5", "-warmup", "10s", "-after", "60s", "-load", "0.7", "-trigger", "dip", "-strategies", "throttle,breaker,recommended"},
	} {
		t.Run(args[0], func(t *testing.T) {
			a, _, _ := cli(t, append(args, "-seed", "5")...)
			b, _, _ := cli(t, append(args, "-seed", "5")...)
			c, _, _ := cli(t, append(args, "-seed", "6")...)
			if a != b {
				t.Errorf("two runs with -seed 5 differ:\n%s\n%s", a, b)
			}
			if a == c {
				t.Errorf("runs with -seed 5 and -seed 6 are the same")
			}
		})
	}
}

func TestBadCommandLine(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"bogus"}, `unknown command "bogus"`},
		{"default command, unknown flag", []string{"-bogus"}, "herd: -bogus is not a flag of retrysim herd"},
		{"herd unknown flag", []string{"herd", "-bogus"}, "herd: -bogus is not a flag of retrysim herd"},
		{"herd missing value", []string{"herd", "-clients"}, "herd: -clients needs a value"},
		{"herd bad integer", []string{"herd", "-clients", "abc"}, `herd: -clients "abc" is not an integer`},
		{"herd huge integer", []string{"herd", "-clients", "99999999999999999999"}, `herd: -clients "99999999999999999999" is out of range`},
		{"herd negative seed", []string{"herd", "-seed", "-1"}, `herd: -seed "-1" is not an integer of 0 or more`},
		{"herd bad float", []string{"herd", "-budget-ratio", "a tenth"}, `herd: -budget-ratio "a tenth" is not a number`},
		{"herd huge float", []string{"herd", "-budget-ratio", "1e999"}, `herd: -budget-ratio "1e999" is out of range`},
		{"herd NaN ratio", []string{"herd", "-budget-ratio", "NaN"}, `herd: -budget-ratio NaN is not a finite number`},
		{"herd bad duration", []string{"herd", "-outage", "2"}, `herd: -outage "2" is not a duration such as 100ms`},
		{"herd bad bool", []string{"herd", "-json=maybe"}, `herd: -json "maybe" is not true or false`},
		{"herd no clients", []string{"herd", "-clients", "0"}, "-clients 0 is outside"},
		{"herd cap below base", []string{"herd", "-base", "1s", "-cap", "10ms"}, "-cap 10ms is less than -base 1s"},
		{"herd no attempts", []string{"herd", "-attempts", "0"}, "-attempts 0"},
		{"herd endless attempts", []string{"herd", "-base", "1ns", "-cap", "1ns", "-constant", "0", "-attempts", "1000000"}, "-attempts 1000000"},
		{"herd zero base", []string{"herd", "-base", "0"}, "-base 0s is not positive"},
		{"herd unknown strategy", []string{"herd", "-strategies", "full,bogus"}, `unknown strategy "bogus"`},
		{"herd strategy twice", []string{"herd", "-strategies", "full,full"}, `"full" given twice`},
		{"herd bad image", []string{"herd", "-out", "chart.gif"}, "must end in .svg or .png"},
		{"herd stray argument", []string{"herd", "now"}, `unexpected argument "now"`},
		{"herd endless run", []string{"herd", "-cap", "1000h", "-attempts", "100"}, "raise -slice"},
		{"herd negative budget", []string{"herd", "-budget-ratio", "-1"}, "-budget-ratio -1 is negative"},
		{"occ bad clients", []string{"occ", "-clients", "10,x"}, `occ: -clients "10,x": "x" is not an integer`},
		{"occ bad trials", []string{"occ", "-trials", "x"}, `occ: -trials "x" is not an integer`},
		{"plan bad samples", []string{"plan", "-samples", "1e3"}, `plan: -samples "1e3" is not an integer`},
		{"amplify bad depth", []string{"amplify", "-depth", "three"}, `amplify: -depth "three" is not an integer`},
		{"amplify infinite ratio", []string{"amplify", "-budget-ratio", "+Inf"}, `amplify: -budget-ratio +Inf is not a finite number`},
		{"amplify tiny ratio", []string{"amplify", "-budget-ratio", "1e-9"}, `amplify: -budget-ratio 1e-09 is below 1e-06`},
		{"herd tiny ratio", []string{"herd", "-budget-ratio", "1e-9"}, `herd: -budget-ratio 1e-09 is below 1e-06`},
		{"occ zero clients", []string{"occ", "-clients", "0"}, "-clients 0 is outside"},
		{"occ no trials", []string{"occ", "-trials", "0"}, "-trials 0"},
		{"occ zero base", []string{"occ", "-base", "0"}, "-base 0s is not positive"},
		{"occ herd-only strategy", []string{"occ", "-strategies", "constant"}, `unknown strategy "constant"`},
		{"plan unknown combinator", []string{"plan", "-schedule", "exponential(100ms).cpa(2s)"}, `column 20: unknown combinator "cpa"`},
		{"plan negative duration", []string{"plan", "-schedule", "constant(-1s)"}, "negative duration"},
		{"plan empty schedule", []string{"plan", "-schedule", ""}, "expected a source"},
		{"plan unclosed", []string{"plan", "-schedule", "exponential(100ms"}, "unclosed"},
		{"plan no samples", []string{"plan", "-samples", "0"}, "-samples 0"},
		{"amplify no depth", []string{"amplify", "-depth", "0"}, "-depth 0"},
		{"amplify too many calls", []string{"amplify", "-depth", "20", "-attempts", "3"}, "too many to simulate"},
		{"hedge few requests", []string{"hedge", "-requests", "10"}, "hedge: -requests 10 is outside [100, 1000000]"},
		{"hedge one server", []string{"hedge", "-servers", "1"}, "hedge: -servers 1 is outside [2, 100000]"},
		{"hedge too many leaves", []string{"hedge", "-requests", "1000000", "-fanout", "1000"}, "make more than 100 million leaves"},
		{"hedge bad load", []string{"hedge", "-load", "0.3,x"}, `hedge: -load "0.3,x": "x" is not a number`},
		{"hedge overload", []string{"hedge", "-load", "0.3,1"}, "hedge: -load 1 is outside (0, 0.95]"},
		{"hedge zero load", []string{"hedge", "-load", "0"}, "hedge: -load 0 is outside (0, 0.95]"},
		{"hedge NaN load", []string{"hedge", "-load", "NaN"}, "hedge: -load NaN is outside (0, 0.95]"},
		{"hedge zero service", []string{"hedge", "-service", "0s"}, "hedge: -service 0s is not positive"},
		{"hedge bad sigma", []string{"hedge", "-sigma", "-1"}, "hedge: -sigma -1 is outside [0, 3]"},
		{"hedge pauses overlap", []string{"hedge", "-pause", "1s", "-pause-every", "100ms"}, "hedge: -pause-every 100ms is shorter than -pause 1s"},
		{"hedge negative delay", []string{"hedge", "-delay", "-1ms"}, "hedge: -delay -1ms is negative"},
		{"hedge quantile", []string{"hedge", "-quantile", "1"}, "hedge: -quantile 1 is outside (0, 1)"},
		{"hedge negative budget", []string{"hedge", "-budget-ratio", "-0.1"}, "hedge: -budget-ratio -0.1 is negative"},
		{"hedge tiny budget", []string{"hedge", "-budget-ratio", "1e-7"}, "hedge: -budget-ratio 1e-07 is below 1e-06"},
		{"hedge unknown strategy", []string{"hedge", "-strategies", "none,hedged"}, `hedge: unknown strategy "hedged"`},
		{"hedge bad image", []string{"hedge", "-out", "chart.jpg"}, "must end in .svg or .png"},
		{"overload no clients", []string{"overload", "-clients", "0"}, "overload: -clients 0 is outside [1, 10000]"},
		{"overload zero rate", []string{"overload", "-rate", "0"}, "overload: -rate 0 is not a positive number"},
		{"overload infinite capacity", []string{"overload", "-capacity", "+Inf"}, "overload: -capacity +Inf is not a positive number"},
		{"overload outage capacity", []string{"overload", "-outage-capacity", "1.5"}, "overload: -outage-capacity 1.5 is outside (0, 1]"},
		{"overload no outage capacity", []string{"overload", "-outage-capacity", "0"}, "overload: -outage-capacity 0 is outside (0, 1]"},
		{"overload short outage", []string{"overload", "-outage", "10ms"}, "overload: -outage 10ms is shorter than 1s"},
		{"overload zero burst", []string{"overload", "-burst", "0s"}, "overload: -burst 0s is not positive"},
		{"overload small K", []string{"overload", "-throttle-k", "0.5"}, "overload: -throttle-k 0.5 is outside [1, 1e+09]"},
		{"overload huge K", []string{"overload", "-throttle-k", "1e10"}, "overload: -throttle-k 1e+10 is outside [1, 1e+09]"},
		{"overload NaN K", []string{"overload", "-throttle-k", "NaN"}, "overload: -throttle-k NaN is outside [1, 1e+09]"},
		{"overload zero window", []string{"overload", "-throttle-window", "0s"}, "overload: -throttle-window 0s is not positive"},
		{"overload zero open", []string{"overload", "-breaker-open", "0s"}, "overload: -breaker-open 0s is not positive"},
		{"overload too many requests", []string{"overload", "-rate", "1e6"}, "more than 10000000"},
		{"overload endless request", []string{"overload", "-cap", "1000h"}, "overload: a request could last 3 × (-latency 20ms + -cap 1000h0m0s), more than a day"},
		{"overload no attempts", []string{"overload", "-attempts", "0"}, "overload: -attempts 0 is outside [1, 100]"},
		{"overload unknown strategy", []string{"overload", "-strategies", "none,full"}, `overload: unknown strategy "full"`},
		{"overload tiny budget", []string{"overload", "-budget-ratio", "1e-7"}, "overload: -budget-ratio 1e-07 is below 1e-06"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := cli(t, c.args...)
			if code != 2 {
				t.Errorf("exit status %d, want 2", code)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
				t.Errorf("stderr is not one line: %q", stderr)
			}
			if !strings.Contains(stderr, c.want) {
				t.Errorf("stderr %q does not say %q", stderr, c.want)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, name := range []string{"herd", "occ", "plan", "amplify", "hedge", "overload"} {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := cli(t, name, "-h")
			if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "Usage: retrysim "+name) || !strings.Contains(stdout, "-json") {
				t.Errorf("exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
			}
			// Every strategy -strategies accepts is described.
			known, ok := map[string][]strategy{"herd": herdStrategies, "occ": occStrategies}[name]
			if !ok {
				return
			}
			for _, st := range append(slices.Clip(known), extraStrategies...) {
				if !strings.Contains(stdout, "\n  "+string(st)+" ") {
					t.Errorf("strategy %s is not described:\n%s", st, stdout)
				}
			}
			// The kinds of the flags are named, although parseFlags wraps
			// every value while parsing.
			if name == "herd" && (!strings.Contains(stdout, "-clients int") || !strings.Contains(stdout, "-outage duration")) {
				t.Errorf("the kinds of the flags are missing:\n%s", stdout)
			}
		})
	}
	// Without a command, -h lists the commands rather than herd's flags.
	for _, args := range [][]string{{"help"}, {"-h"}, {"-help"}, {"--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			stdout, stderr, code := cli(t, args...)
			if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "Usage: retrysim [command]") ||
				strings.Contains(stdout, "-clients") {
				t.Errorf("exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
			}
			for _, c := range commands {
				if !strings.Contains(stdout, "\n  "+c.name+" ") {
					t.Errorf("command %s is not listed:\n%s", c.name, stdout)
				}
			}
		})
	}
}

// TestProcess runs the real main in a child process: the exit status, and
// that stdout holds only the JSON document.
func TestProcess(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	runMain := func(args ...string) (stdout, stderr string, code int) {
		cmd := exec.Command(exe, append([]string{"-test.run=^$", "--"}, args...)...)
		cmd.Env = append(os.Environ(), "RETRYSIM_RUN_MAIN=1")
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code = cmd.ProcessState.ExitCode()
		if err != nil && code < 0 {
			t.Fatal(err)
		}
		return out.String(), errOut.String(), code
	}

	t.Run("bad schedule", func(t *testing.T) {
		stdout, stderr, code := runMain("plan", "-schedule", "exponential(100ms).cpa(2s)")
		if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 || strings.Contains(stderr, "goroutine") {
			t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	})
	t.Run("json", func(t *testing.T) {
		stdout, stderr, code := runMain("herd", "-json", "-clients", "50", "-strategies", "full,exponential")
		var v []herdResult
		if code != 0 || stderr != "" || json.Unmarshal([]byte(stdout), &v) != nil || len(v) != 2 {
			t.Errorf("exit %d, stderr %q, stdout %q", code, stderr, stdout)
		}
	})
}

// TestMaxThrottleK checks maxThrottleK against retry.ThrottleK, which
// panics above it: a K validate accepts must not panic there.
func TestMaxThrottleK(t *testing.T) {
	_ = retry.ThrottleK(maxThrottleK)
	defer func() {
		if recover() == nil {
			t.Errorf("ThrottleK(%v) did not panic: maxThrottleK is out of date", maxThrottleK*2)
		}
	}()
	_ = retry.ThrottleK(maxThrottleK * 2)
}

// TestMinBudgetRatio checks minBudgetRatio against retry.NewBudget, which
// panics below it: a ratio checkBudgetRatio accepts must not panic there.
func TestMinBudgetRatio(t *testing.T) {
	_ = retry.NewBudget(minBudgetRatio, 1)
	defer func() {
		if recover() == nil {
			t.Errorf("NewBudget(%v, 1) did not panic: minBudgetRatio is out of date", minBudgetRatio/2)
		}
	}()
	_ = retry.NewBudget(minBudgetRatio/2, 1)
}
