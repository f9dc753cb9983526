package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

var herdSummary = `Simulates -clients callers that all fail at t=0 because their dependency is
down for -outage; after it, the dependency serves at most -capacity calls in
each -slice and fails the rest, which retry again. Each client runs one real
retry.Do with the strategy's schedule, limited to -attempts calls:

` + strategyTable(herdStrategies) + `

Reports total calls, the peak calls in one slice after recovery, the time to
success (p50, p99, max over the clients that succeeded) and the share that gave
up, with a chart of calls per slice over time. -out writes the chart as an SVG
or PNG image (by extension); nothing is written without -out.`

// maxSlices bounds the time series of a herd run (two ints per slice).
const maxSlices = 1 << 22

func runHerdCmd(args []string, o *output) error {
	fs := newFlagSet("herd")
	cfg := herdConfig{}
	fs.IntVar(&cfg.clients, "clients", 10000, "number of clients, at most 100000")
	fs.DurationVar(&cfg.outage, "outage", 2*time.Second, "how long the dependency is down from t=0")
	fs.DurationVar(&cfg.slice, "slice", 10*time.Millisecond, "the time slice of the capacity limit and of the chart")
	fs.IntVar(&cfg.capacity, "capacity", 100, "calls served per slice after the outage; the rest fail")
	fs.DurationVar(&cfg.base, "base", 100*time.Millisecond, "base delay of the exponential and jittered strategies")
	fs.DurationVar(&cfg.limit, "cap", 10*time.Second, "cap on every delay")
	fs.DurationVar(&cfg.every, "constant", time.Second, "delay of the constant strategy")
	fs.IntVar(&cfg.attempts, "attempts", 10, "calls per client at most, the first included (Take(attempts-1)); at most 1000")
	fs.Float64Var(&cfg.budgetRatio, "budget-ratio", 0.1, "retries per call that the Budget of full+budget allows")
	fs.IntVar(&cfg.budgetReserve, "budget-reserve", 10, "reserve of the Budget of full+budget, in retries")
	list := fs.String("strategies", joinStrategies(herdStrategies), "comma-separated strategies to compare; proportional is not among the default ones")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of every random draw")
	asJSON := fs.Bool("json", false, "print the results as JSON on stdout, and nothing else there")
	out := fs.String("out", "", "write the chart to this .svg or .png file and print its absolute path; a relative path is relative to the working directory, which is cmd/retrysim under go -C cmd/retrysim")
	if err := parseFlags(fs, args, o, herdSummary); err != nil {
		return err
	}
	var err error
	if cfg.strategies, err = parseStrategies(*list, append(slices.Clip(herdStrategies), extraStrategies...)); err != nil {
		return err
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	path, err := imagePath(*out)
	if err != nil {
		return err
	}

	bar := newProgress(o, "herd", len(cfg.strategies)*cfg.clients)
	results := runHerd(cfg, bar.add)
	bar.finish()

	return report(o, path, *asJSON, results,
		func(path string) error { return herdImage(path, &cfg, results) },
		func() { printHerd(o, &cfg, results) })
}

func (cfg *herdConfig) validate() error {
	if err := checkBudgetRatio(cfg.budgetRatio); err != nil {
		return err
	}
	switch {
	case cfg.clients < 1 || cfg.clients > 100000:
		return usagef("-clients %d is outside [1, 100000]", cfg.clients)
	case cfg.outage < 0:
		return usagef("-outage %v is negative", cfg.outage)
	case cfg.slice <= 0:
		return usagef("-slice %v is not positive", cfg.slice)
	case cfg.capacity < 0:
		return usagef("-capacity %d is negative", cfg.capacity)
	case cfg.base <= 0:
		return usagef("-base %v is not positive", cfg.base)
	case cfg.limit < cfg.base:
		return usagef("-cap %v is less than -base %v", cfg.limit, cfg.base)
	case cfg.every < 0:
		return usagef("-constant %v is negative", cfg.every)
	case cfg.attempts < 1 || cfg.attempts > 1000:
		return usagef("-attempts %d is outside [1, 1000]", cfg.attempts)
	case cfg.budgetReserve < 0:
		return usagef("-budget-reserve %d is negative", cfg.budgetReserve)
	}
	// Every delay is at most max(cap, constant), so this bounds the time of
	// the last call and the length of the series.
	last := float64(cfg.attempts-1)*float64(max(cfg.limit, cfg.every)) + float64(cfg.outage)
	if last/float64(cfg.slice) > maxSlices {
		return usagef("the run could last %v, more than %d slices of %v: raise -slice or lower -cap, -constant or -attempts",
			fromMs(last/1e6), maxSlices, cfg.slice)
	}
	return nil
}

// parseStrategies parses a comma-separated list of strategies, each of which
// must be in known: retry strategies for herd and occ, hedge strategies for
// hedge.
func parseStrategies[S ~string](list string, known []S) ([]S, error) {
	var out []S
	for name := range strings.SplitSeq(list, ",") {
		st := S(strings.TrimSpace(name))
		if !slices.Contains(known, st) {
			return nil, usagef("unknown strategy %q in -strategies (want some of %s)", st, joinStrategies(known))
		}
		if slices.Contains(out, st) {
			return nil, usagef("strategy %q given twice in -strategies", st)
		}
		out = append(out, st)
	}
	return out, nil
}

func joinStrategies[S ~string](sts []S) string {
	names := make([]string, len(sts))
	for i, st := range sts {
		names[i] = string(st)
	}
	return strings.Join(names, ",")
}

// printHerd writes the table and the terminal chart.
func printHerd(o *output, cfg *herdConfig, results []herdResult) {
	w := o.stdout
	fmt.Fprintf(w, "herd: %d clients; the dependency is down for %v, then serves %d calls per %v (%d/s)\n",
		cfg.clients, cfg.outage, cfg.capacity, cfg.slice, int(float64(cfg.capacity)*float64(time.Second)/float64(cfg.slice)))
	fmt.Fprintf(w, "      base %v, cap %v, constant %v, %d attempts at most; budget %v/%d; seed %d\n\n",
		cfg.base, cfg.limit, cfg.every, cfg.attempts, cfg.budgetRatio, cfg.budgetReserve, cfg.seed)
	fmt.Fprintf(w, "%-13s %9s %7s %9s %9s %9s %8s\n", "strategy", "calls", "peak", "p50", "p99", "max", "gave up")
	for _, r := range results {
		fmt.Fprintf(w, "%-13s %9d %7d %9s %9s %9s %8s\n", r.Strategy, r.Calls, r.Peak,
			humanMs(r.P50), humanMs(r.P99), humanMs(r.Max), percent(r.GaveUp))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "calls: every call the dependency saw; peak: most calls in one slice after recovery;")
	fmt.Fprintln(w, "p50/p99/max: time from t=0 to success, over the clients that succeeded.")
	budgetNote(w, cfg, results)
	fmt.Fprintln(w)

	labels := make([]string, len(results))
	series := make([][]int, len(results))
	for i, r := range results {
		labels[i], series[i] = r.Strategy, r.series
	}
	span := longest(series)
	fmt.Fprintf(w, "calls per %v slice over %v (log scale; the tallest bar in a column is its busiest slice)\n",
		cfg.slice, time.Duration(span)*cfg.slice)
	sparkRows(w, labels, series, 64, int(cfg.outage/cfg.slice), fmt.Sprintf("recovery at %v", cfg.outage))
}

// budgetNote explains the full+budget row, whose give-ups read like a bug
// without it: the Budget works as meant, for the dependency, not the callers.
func budgetNote(w io.Writer, cfg *herdConfig, results []herdResult) {
	var budget, plain *herdResult
	for i := range results {
		switch strategy(results[i].Strategy) {
		case fullBudget:
			budget = &results[i]
		case full:
			plain = &results[i]
		}
	}
	if budget == nil || budget.GaveUp == 0 {
		return
	}
	than := ""
	if plain != nil {
		than = fmt.Sprintf(" instead of full's %d", plain.Calls)
	}
	fmt.Fprintf(w, "full+budget: %s of the clients gave up (peak %d): not a bug, the Budget did its job. It holds\n", percent(budget.GaveUp), budget.Peak)
	fmt.Fprintf(w, "%d retries plus %v per call; here every client fails at once and no fresh calls refill it, so it soon\n", cfg.budgetReserve, cfg.budgetRatio)
	fmt.Fprintf(w, "refuses every retry: the clients fail fast and the dependency sees %d calls%s.\n", budget.Calls, than)
	fmt.Fprintln(w, "A budget protects the dependency from a retry storm, not the callers (see cmd/retrysim/README.md).")
}

func longest(series [][]int) int {
	n := 0
	for _, s := range series {
		n = max(n, len(s))
	}
	return n
}
