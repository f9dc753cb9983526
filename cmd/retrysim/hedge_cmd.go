package main

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

const hedgeSummary = `Hedging against the latency tail, after "The Tail at Scale" (Dean and
Barroso, 2013). -requests requests arrive at random, each fanned out to
-fanout leaves over -servers servers, and is done when its last leaf answers.
Every server serves one copy at a time from a first-come-first-served queue;
service times are lognormal (median -service, shape -sigma), and each server
pauses for -pause (like a garbage collection) on average every -pause-every.
-load is the share of the servers' capacity the leaves use without hedging.
A hedge is a second copy sent to another server when the first has not
answered after the hedge delay; the first answer wins and the other copy is
cancelled: removed if still queued, run to the end if already in service.

  none             never hedge
  fixed            Constant(-delay).Take(1)
  adaptive         lat.Quantile(-quantile).Cap(1s).Take(1), lat a retry.Latency
                   told every copy's latency as WithLatency tells it: a winner's,
                   and a loser's running time until it was cancelled
  adaptive+budget  adaptive, with one NewBudget(-budget-ratio, -budget-reserve)
  duplicate        Constant(0).Take(1): two copies of every leaf at once

Reports, for each load and strategy, the p50, p99 and p99.9 of the requests'
latency, the extra load (hedges sent per 100 leaves) and the wasted work
(service time spent on losing copies, per 100 of the winners'). -out writes a
chart of them against the load as an SVG or PNG image (by extension).`

func runHedgeCmd(args []string, o *output) error {
	fs := newFlagSet("hedge")
	cfg := hedgeConfig{}
	loads := floatList{0.3}
	fs.IntVar(&cfg.requests, "requests", 20000, "fan-out requests per load and strategy, in [100, 1000000]")
	fs.IntVar(&cfg.fanout, "fanout", 100, "leaves per request, in [1, 10000]")
	fs.IntVar(&cfg.servers, "servers", 100, "servers in the pool, in [2, 100000]")
	fs.Var(&loads, "load", "comma-separated `loads`: the share of the servers' capacity the leaves use without hedging, each in (0, 0.95]")
	fs.DurationVar(&cfg.service, "service", time.Millisecond, "median service time of a leaf")
	fs.Float64Var(&cfg.sigma, "sigma", 0.5, "shape of the lognormal service time, in [0, 3]")
	fs.DurationVar(&cfg.pause, "pause", 50*time.Millisecond, "length of a server's pause")
	fs.DurationVar(&cfg.pauseEvery, "pause-every", 10*time.Second, "mean time between two pauses of a server; 0: no pauses")
	fs.DurationVar(&cfg.net, "net", 100*time.Microsecond, "one-way network delay of every copy, answer and cancel")
	fs.DurationVar(&cfg.delay, "delay", 5*time.Millisecond, "hedge delay of the fixed strategy")
	fs.Float64Var(&cfg.quantile, "quantile", 0.95, "quantile of the observed latency that the adaptive strategies wait, in (0, 1)")
	fs.Float64Var(&cfg.budgetRatio, "budget-ratio", 0.05, "hedges per leaf that the Budget of adaptive+budget allows")
	fs.IntVar(&cfg.budgetReserve, "budget-reserve", 100, "reserve of the Budget of adaptive+budget, in hedges: a request asks for its hedges all at once")
	list := fs.String("strategies", joinStrategies(hedgeStrategies), "comma-separated strategies to compare")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of every random draw")
	scenario := fs.String("scenario", "", "a named `scenario` whose values replace the defaults of the flags not given: paper, the experiment of \"The Tail at Scale\" (a read of 1000 keys over 100 servers with rare 1 s stalls; see the README)")
	var sweep durationList
	fs.Var(&sweep, "sweep-pause", "comma-separated pause `lengths`: simulate every strategy at the one -load for each, and chart against the pause length")
	asJSON := fs.Bool("json", false, "print the results as JSON on stdout, and nothing else there")
	out := fs.String("out", "", "write the chart to this .svg or .png file and print its absolute path; a relative path is relative to the working directory, which is cmd/retrysim under go -C cmd/retrysim")
	if err := parseFlags(fs, args, o, hedgeSummary); err != nil {
		return err
	}
	if err := applyScenario(fs, *scenario); err != nil {
		return err
	}
	cfg.loads = loads
	var err error
	if cfg.strategies, err = parseStrategies(*list, hedgeStrategies); err != nil {
		return err
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	if len(sweep) > 0 {
		if err := validateSweep(&cfg, sweep); err != nil {
			return err
		}
	}
	path, err := imagePath(*out)
	if err != nil {
		return err
	}

	if len(sweep) > 0 {
		bar := newProgress(o, "hedge", len(sweep)*len(cfg.strategies))
		results := runHedgeSweep(cfg, sweep, bar.add)
		bar.finish()
		return report(o, path, *asJSON, results,
			func(path string) error { return hedgeSweepImage(path, &cfg, sweep, results) },
			func() { printHedgeSweep(o.stdout, &cfg, sweep, results) })
	}
	bar := newProgress(o, "hedge", len(cfg.loads)*len(cfg.strategies))
	results := runHedge(cfg, bar.add)
	bar.finish()

	return report(o, path, *asJSON, results,
		func(path string) error { return hedgeImage(path, &cfg, results) },
		func() { printHedge(o.stdout, &cfg, results) })
}

func (cfg *hedgeConfig) validate() error {
	if err := checkBudgetRatio(cfg.budgetRatio); err != nil {
		return err
	}
	switch {
	case cfg.requests < 100 || cfg.requests > 1000000:
		return usagef("-requests %d is outside [100, 1000000]", cfg.requests)
	case cfg.fanout < 1 || cfg.fanout > 10000:
		return usagef("-fanout %d is outside [1, 10000]", cfg.fanout)
	case cfg.servers < 2 || cfg.servers > 100000:
		return usagef("-servers %d is outside [2, 100000]", cfg.servers)
	case float64(cfg.requests)*float64(cfg.fanout) > 1e8:
		return usagef("-requests %d of -fanout %d make more than 100 million leaves", cfg.requests, cfg.fanout)
	case len(cfg.loads) == 0:
		return usagef("-load is empty")
	case cfg.service <= 0:
		return usagef("-service %v is not positive", cfg.service)
	case !(cfg.sigma >= 0 && cfg.sigma <= 3):
		return usagef("-sigma %v is outside [0, 3]", cfg.sigma)
	case cfg.pause < 0:
		return usagef("-pause %v is negative", cfg.pause)
	case cfg.pauseEvery < 0:
		return usagef("-pause-every %v is negative", cfg.pauseEvery)
	case cfg.pauseEvery > 0 && cfg.pauseEvery < cfg.pause:
		return usagef("-pause-every %v is shorter than -pause %v", cfg.pauseEvery, cfg.pause)
	case cfg.net < 0:
		return usagef("-net %v is negative", cfg.net)
	case cfg.delay < 0:
		return usagef("-delay %v is negative", cfg.delay)
	case !(cfg.quantile > 0 && cfg.quantile < 1):
		return usagef("-quantile %v is outside (0, 1)", cfg.quantile)
	case cfg.budgetReserve < 0:
		return usagef("-budget-reserve %d is negative", cfg.budgetReserve)
	}
	for _, l := range cfg.loads {
		if !(l > 0 && l <= 0.95) {
			return usagef("-load %v is outside (0, 0.95]", l)
		}
	}
	return nil
}

// floatList is a flag of comma-separated numbers.
type floatList []float64

func (l *floatList) String() string {
	s := make([]string, len(*l))
	for i, x := range *l {
		s[i] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strings.Join(s, ",")
}

func (l *floatList) Set(v string) error {
	*l = nil
	for f := range strings.SplitSeq(v, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", f)
		}
		*l = append(*l, x)
	}
	return nil
}

// printHedge writes one table per load.
func printHedge(w io.Writer, cfg *hedgeConfig, results []hedgeResult) {
	fmt.Fprintf(w, "hedge: %d requests, each fanned out to %d leaves over %d servers\n", cfg.requests, cfg.fanout, cfg.servers)
	pauses := "no pauses"
	if cfg.pauseEvery > 0 {
		pauses = fmt.Sprintf("a %v pause every %v per server on average", cfg.pause, cfg.pauseEvery)
	}
	fmt.Fprintf(w, "       service lognormal, median %v, sigma %v (mean %v); %s; network %v each way\n",
		cfg.service, cfg.sigma, human(cfg.meanService()), pauses, cfg.net)
	fmt.Fprintf(w, "       fixed delay %v; adaptive at the observed p%v; budget NewBudget(%v, %d); seed %d\n",
		cfg.delay, cfg.quantile*100, cfg.budgetRatio, cfg.budgetReserve, cfg.seed)
	for li, load := range cfg.loads {
		fmt.Fprintf(w, "\nload %s (%.0f requests/s)\n", loadPct(load), cfg.rate(load))
		fmt.Fprintf(w, "%-16s %8s %8s %8s %11s %8s %12s %11s\n", "strategy", "p50", "p99", "p99.9", "extra load", "refused", "wasted work", "delay p50")
		for _, r := range results[li*len(cfg.strategies) : (li+1)*len(cfg.strategies)] {
			delay := "-"
			if r.Delay != nil {
				delay = human(fromMs(*r.Delay))
			}
			fmt.Fprintf(w, "%-16s %8s %8s %8s %10.1f%% %7.1f%% %11.1f%% %11s\n", r.Strategy,
				human(fromMs(r.P50)), human(fromMs(r.P99)), human(fromMs(r.P999)), r.ExtraLoad, r.Refused, r.WastedWork, delay)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "p50/p99/p99.9: latency of whole requests, from arrival to the last leaf's answer;")
	fmt.Fprintln(w, "extra load: hedges sent per 100 leaves; refused: hedges the budget refused, per 100 leaves;")
	fmt.Fprintln(w, "wasted work: service time spent on losing copies, per 100 of the winners';")
	fmt.Fprintln(w, "delay p50: the median hedge delay of the requests (the leaves of a request share it).")
}

// loadPct formats a load as a percentage: 0.3 is "30%", 0.55 "55%".
func loadPct(load float64) string {
	return strconv.FormatFloat(round(load*100, 2), 'f', -1, 64) + "%"
}

// hedgePalette gives each hedge strategy its color in the chart.
var hedgePalette = map[hedgeStrategy]color.RGBA{
	hedgeNone:           {0x7f, 0x7f, 0x7f, 0xff},
	hedgeFixed:          {0xff, 0x7f, 0x0e, 0xff},
	hedgeAdaptive:       {0x1f, 0x77, 0xb4, 0xff},
	hedgeAdaptiveBudget: {0x17, 0xbe, 0xcf, 0xff},
	hedgeDuplicate:      {0xd6, 0x27, 0x28, 0xff},
}

// hedgeImage draws four panels against the load: the p50, p99 and p99.9 of
// the requests' latency, and the extra load. Every y axis is logarithmic;
// the x ticks sit at the loads simulated. none is left out of the
// extra-load panel, where it would be 0.
func hedgeImage(path string, cfg *hedgeConfig, results []hedgeResult) error {
	const xLabel = "load (share of capacity used without hedging)"
	p50 := newPlot("p50 of the requests' latency", "", "ms (log scale)")
	p99 := newPlot("p99 of the requests' latency", "", "ms (log scale)")
	p999 := newPlot("p99.9 of the requests' latency", xLabel, "ms (log scale)")
	extra := newPlot("extra load: hedges per 100 leaves", xLabel, "% (log scale)")
	ticks := make(plot.ConstantTicks, len(cfg.loads))
	for i, load := range cfg.loads {
		ticks[i] = plot.Tick{Value: load * 100, Label: loadPct(load)}
	}
	panels := []struct {
		p   *plot.Plot
		get func(hedgeResult) float64
	}{
		{p50, func(r hedgeResult) float64 { return r.P50 }},
		{p99, func(r hedgeResult) float64 { return r.P99 }},
		{p999, func(r hedgeResult) float64 { return r.P999 }},
		{extra, func(r hedgeResult) float64 { return r.ExtraLoad }},
	}
	for _, pn := range panels {
		pn.p.Y.Scale, pn.p.Y.Tick.Marker = plot.LogScale{}, ticks125{}
		pn.p.X.Tick.Marker = ticks
	}
	for si, st := range cfg.strategies {
		for _, pn := range panels {
			if pn.p == extra && st == hedgeNone {
				continue
			}
			xys := make(plotter.XYs, len(cfg.loads))
			for li, load := range cfg.loads {
				xys[li] = plotter.XY{X: load * 100, Y: pn.get(results[li*len(cfg.strategies)+si])}
			}
			name := ""
			if pn.p == p50 {
				name = string(st)
			}
			if err := addSeries(pn.p, xys, hedgePalette[st], name); err != nil {
				return err
			}
		}
	}
	p50.Legend.Top, p50.Legend.Left = true, true
	p50.Legend.XOffs = vg.Millimeter * 2
	return saveGrid(path, [][]*plot.Plot{{p50, p99}, {p999, extra}}, 8*vg.Inch, 6.5*vg.Inch)
}

// ticks125 marks a logarithmic axis at 1, 2 and 5 times each power of ten,
// labelled, and at the other integer multiples, unlabelled: plot.LogTicks
// labels only the powers of ten, none at all on an axis that spans less
// than a decade.
type ticks125 struct{}

func (ticks125) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, e)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}
