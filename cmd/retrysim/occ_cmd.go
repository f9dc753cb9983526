package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

var occSummary = `The optimistic-concurrency model of the AWS Architecture Blog post
"Exponential Backoff And Jitter": each client reads one row, writes it back
conditionally, and on a conflict backs off and tries the read-write again until
its write succeeds. Network delay is |Normal(-net, -net-stddev)| per message.
Each client runs one real retry.Do with the strategy's schedule, without Take:

` + strategyTable(occStrategies) + `

Reports, for each number of clients, the mean over -trials trials of the calls
(conditional writes) and of the time until the last client is done. -out writes
the chart as an SVG or PNG image (by extension); nothing is written without it.`

func runOccCmd(args []string, o *output) error {
	fs := newFlagSet("occ")
	cfg := occConfig{}
	clients := intList{10, 50, 100}
	fs.Var(&clients, "clients", "comma-separated numbers of clients, each in [1, 10000]")
	fs.IntVar(&cfg.trials, "trials", 100, "trials per number of clients and strategy")
	fs.DurationVar(&cfg.base, "base", 5*time.Millisecond, "base delay")
	fs.DurationVar(&cfg.limit, "cap", 2*time.Second, "cap on every delay")
	fs.DurationVar(&cfg.netMean, "net", 10*time.Millisecond, "mean network delay of one message")
	fs.DurationVar(&cfg.netStdDev, "net-stddev", 2*time.Millisecond, "standard deviation of the network delay")
	list := fs.String("strategies", joinStrategies(occStrategies), "comma-separated strategies to compare; proportional is not among the default ones")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of every random draw")
	asJSON := fs.Bool("json", false, "print the results as JSON on stdout, and nothing else there")
	out := fs.String("out", "", "write the chart to this .svg or .png file and print its absolute path; a relative path is relative to the working directory, which is cmd/retrysim under go -C cmd/retrysim")
	if err := parseFlags(fs, args, o, occSummary); err != nil {
		return err
	}
	cfg.clients = clients
	var err error
	if cfg.strategies, err = parseStrategies(*list, append(slices.Clip(occStrategies), extraStrategies...)); err != nil {
		return err
	}
	switch {
	case len(cfg.clients) == 0:
		return usagef("-clients is empty")
	case cfg.trials < 1 || cfg.trials > 100000:
		return usagef("-trials %d is outside [1, 100000]", cfg.trials)
	case cfg.base <= 0:
		return usagef("-base %v is not positive", cfg.base)
	case cfg.limit < cfg.base:
		return usagef("-cap %v is less than -base %v", cfg.limit, cfg.base)
	case cfg.netMean < 0 || cfg.netStdDev < 0:
		return usagef("-net and -net-stddev must not be negative")
	}
	for _, n := range cfg.clients {
		if n < 1 || n > 10000 {
			return usagef("-clients %d is outside [1, 10000]", n)
		}
	}
	path, err := imagePath(*out)
	if err != nil {
		return err
	}

	bar := newProgress(o, "occ", len(cfg.clients)*len(cfg.strategies)*cfg.trials)
	results := runOcc(cfg, bar.add)
	bar.finish()

	return report(o, path, *asJSON, results,
		func(path string) error { return occImage(path, &cfg, results) },
		func() { printOcc(o.stdout, &cfg, results) })
}

// intList is a flag of comma-separated integers.
type intList []int

func (l *intList) String() string {
	s := make([]string, len(*l))
	for i, n := range *l {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func (l *intList) Set(v string) error {
	*l = nil
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("%q is not an integer", f)
		}
		*l = append(*l, n)
	}
	return nil
}

// printOcc writes two tables, calls and time, and bars for the largest
// number of clients.
func printOcc(w io.Writer, cfg *occConfig, results []occResult) {
	fmt.Fprintf(w, "occ: base %v, cap %v, network |Normal(%v, %v)| per message; mean of %d trials; seed %d\n",
		cfg.base, cfg.limit, cfg.netMean, cfg.netStdDev, cfg.trials, cfg.seed)
	table := func(title string, cell func(occResult) string) {
		fmt.Fprintf(w, "\n%s\n%7s", title, "clients")
		for _, st := range cfg.strategies {
			fmt.Fprintf(w, " %12s", st)
		}
		fmt.Fprintln(w)
		for ci, n := range cfg.clients {
			fmt.Fprintf(w, "%7d", n)
			for si := range cfg.strategies {
				fmt.Fprintf(w, " %12s", cell(results[ci*len(cfg.strategies)+si]))
			}
			fmt.Fprintln(w)
		}
	}
	table("mean calls (conditional writes)", func(r occResult) string { return strconv.FormatFloat(r.Calls, 'f', 1, 64) })
	table("mean time until the last client is done", func(r occResult) string { return human(fromMs(r.TimeMs)) })

	last := results[len(results)-len(cfg.strategies):]
	topCalls, topTime := 0.0, 0.0
	for _, r := range last {
		topCalls, topTime = max(topCalls, r.Calls), max(topTime, r.TimeMs)
	}
	fmt.Fprintf(w, "\n%-13s %-30s %s\n", fmt.Sprintf("%d clients", last[0].Clients), "calls", "time")
	for _, r := range last {
		fmt.Fprintf(w, "%-13s %-30s %s\n", r.Strategy, bar(r.Calls, topCalls, 30), bar(r.TimeMs, topTime, 30))
	}
}

// occImage draws two panels side by side, calls and time against the number
// of clients, one line per strategy. Time is on a log scale: without jitter,
// exponential backoff takes ten times longer than the others.
func occImage(path string, cfg *occConfig, results []occResult) error {
	calls := newPlot("mean calls (conditional writes)", "clients", "calls")
	times := newPlot("mean time until the last client is done", "clients", "seconds (log scale)")
	times.Y.Scale, times.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	for si, st := range cfg.strategies {
		cxy := make(plotter.XYs, len(cfg.clients))
		txy := make(plotter.XYs, len(cfg.clients))
		for ci, n := range cfg.clients {
			r := results[ci*len(cfg.strategies)+si]
			cxy[ci] = plotter.XY{X: float64(n), Y: r.Calls}
			txy[ci] = plotter.XY{X: float64(n), Y: r.TimeMs / 1000}
		}
		for _, pt := range []struct {
			p   *plot.Plot
			xys plotter.XYs
		}{{calls, cxy}, {times, txy}} {
			name := ""
			if pt.p == calls {
				name = string(st)
			}
			if err := addSeries(pt.p, pt.xys, palette[st], name); err != nil {
				return err
			}
		}
	}
	ticks := clientTicks(cfg.clients)
	calls.X.Tick.Marker, times.X.Tick.Marker = ticks, ticks
	calls.Legend.Top, calls.Legend.Left = true, true
	calls.Legend.XOffs = vg.Millimeter * 2
	calls.Y.Min = 0
	return saveGrid(path, [][]*plot.Plot{{calls, times}}, 8*vg.Inch, 3.5*vg.Inch)
}

// clientTicks puts a tick on the x axis at every number of clients simulated,
// so that the axis shows where the points are. Labels that would crowd their
// left neighbour, closer than a twelfth of the axis, are left out, but the
// last point is always labelled.
func clientTicks(clients []int) plot.ConstantTicks {
	xs := slices.Sorted(slices.Values(clients))
	xs = slices.Compact(xs)
	gap := float64(xs[len(xs)-1]-xs[0]) / 12
	ticks := make(plot.ConstantTicks, len(xs))
	last := -1 // the labelled tick furthest right
	for i, x := range xs {
		ticks[i].Value = float64(x)
		if i == len(xs)-1 && last >= 0 && float64(x)-ticks[last].Value < gap {
			ticks[last].Label = ""
		}
		if last < 0 || float64(x)-ticks[last].Value >= gap || i == len(xs)-1 {
			ticks[i].Label = strconv.Itoa(x)
			last = i
		}
	}
	return ticks
}
