package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// A hedgeScenario is a named set of values for hedge's flags.
type hedgeScenario struct {
	name  string
	about string
	flags []scenarioFlag
}

// scenarioFlag is one flag's value in a scenario, and why.
type scenarioFlag struct{ name, value, why string }

// paperScenario is the experiment of "The Tail at Scale" (Dean and Barroso,
// CACM 2013): "a Google benchmark that reads the values for 1,000 keys
// stored in a BigTable table distributed across 100 different servers.
// Sending a hedging request after a 10ms delay reduces the 99.9th-
// percentile latency for retrieving all 1,000 values from 1,800ms to 74ms
// while sending just 2% more requests." The paper gives neither the
// service times nor the stalls, so those are stated here: a leaf's body is
// a millisecond, and the tail comes from rare server-side stalls of a
// second, which reach 0.1% to 1% of the requests (a stall freezes one
// server of the 100, and every request reads from all of them).
var paperScenario = hedgeScenario{
	name:  "paper",
	about: `"The Tail at Scale": a read of 1000 keys over 100 servers, rare 1 s stalls, hedging after 10 ms or the p95`,
	flags: []scenarioFlag{
		{"fanout", "1000", "a read of 1,000 keys"},
		{"servers", "100", "stored on 100 servers (10 keys each per read)"},
		{"requests", "5000", "enough that p99.9 is the 5th slowest read"},
		{"load", "0.1", "9 reads/s: 10% of the servers' capacity"},
		{"service", "1ms", "a key's read takes about 1 ms"},
		{"sigma", "0.5", "with a lognormal spread"},
		{"pause", "1s", "rare long server-side stalls of the order of a second"},
		{"pause-every", "5h", "one per server every 5 h on average: one somewhere every 3 min"},
		{"delay", "10ms", "the paper's fixed hedge delay"},
		{"quantile", "0.95", "the paper's advice: hedge after the p95"},
	},
}

// hedgeScenarios are the scenarios hedge -scenario knows.
var hedgeScenarios = []hedgeScenario{paperScenario}

// applyScenario sets, for the scenario named name (if not ""), every flag
// of fs that the command line did not set.
func applyScenario(fs *flag.FlagSet, name string) error {
	if name == "" {
		return nil
	}
	for _, sc := range hedgeScenarios {
		if sc.name != name {
			continue
		}
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		for _, f := range sc.flags {
			if !given[f.name] {
				if err := fs.Set(f.name, f.value); err != nil {
					panic("retrysim: scenario " + name + ": -" + f.name + " " + f.value + ": " + err.Error())
				}
			}
		}
		return nil
	}
	names := make([]string, len(hedgeScenarios))
	for i, sc := range hedgeScenarios {
		names[i] = sc.name
	}
	return usagef("-scenario %q is not one of %s", name, strings.Join(names, ", "))
}

// durationList is a flag of comma-separated durations.
type durationList []time.Duration

func (l *durationList) String() string {
	s := make([]string, len(*l))
	for i, d := range *l {
		s[i] = d.String()
	}
	return strings.Join(s, ",")
}

func (l *durationList) Set(v string) error {
	*l = nil
	for f := range strings.SplitSeq(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("%q is not a duration", f)
		}
		*l = append(*l, d)
	}
	return nil
}

// runHedgeSweep simulates every strategy of cfg at its one load, once for
// each pause length, and returns the results in the order pauses, then
// strategies, each with its pause set.
func runHedgeSweep(cfg hedgeConfig, pauses []time.Duration, done func()) []hedgeResult {
	var results []hedgeResult
	for _, p := range pauses {
		c := cfg
		c.pause = p
		for _, r := range runHedge(c, done) {
			r.Pause = ptr(ms(p))
			results = append(results, r)
		}
	}
	return results
}

// validateSweep checks a sweep of pauses against cfg.
func validateSweep(cfg *hedgeConfig, pauses []time.Duration) error {
	if len(cfg.loads) != 1 {
		return usagef("-sweep-pause needs exactly one -load, not %d", len(cfg.loads))
	}
	for _, p := range pauses {
		c := *cfg
		c.pause = p
		if err := c.validate(); err != nil {
			return err
		}
	}
	return nil
}

// printHedgeSweep writes one table of every pause and strategy, with each
// strategy's cut of the p99.9: none's p99.9 over its own.
func printHedgeSweep(w io.Writer, cfg *hedgeConfig, pauses []time.Duration, results []hedgeResult) {
	fmt.Fprintf(w, "hedge: %d requests, each fanned out to %d leaves over %d servers, at load %s (%.0f requests/s)\n",
		cfg.requests, cfg.fanout, cfg.servers, loadPct(cfg.loads[0]), cfg.rate(cfg.loads[0]))
	fmt.Fprintf(w, "       service lognormal, median %v, sigma %v; a pause of each length below every %v per server on average; network %v each way\n",
		cfg.service, cfg.sigma, cfg.pauseEvery, cfg.net)
	fmt.Fprintf(w, "       fixed delay %v; adaptive at the observed p%v; budget NewBudget(%v, %d); seed %d\n\n",
		cfg.delay, cfg.quantile*100, cfg.budgetRatio, cfg.budgetReserve, cfg.seed)
	fmt.Fprintf(w, "%8s %-16s %8s %8s %8s %11s %11s\n", "pause", "strategy", "p50", "p99", "p99.9", "extra load", "p99.9 cut")
	n := len(cfg.strategies)
	for pi, p := range pauses {
		group := results[pi*n : (pi+1)*n]
		for _, r := range group {
			fmt.Fprintf(w, "%8s %-16s %8s %8s %8s %10.1f%% %10.1f×\n", human(p), r.Strategy,
				human(fromMs(r.P50)), human(fromMs(r.P99)), human(fromMs(r.P999)), r.ExtraLoad, cut(group, r))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "p99.9 cut: the p99.9 of none (or of the first strategy, without none) over the strategy's own.")
}

// cut returns the p99.9 of none in group, or of its first result without
// none, over r's.
func cut(group []hedgeResult, r hedgeResult) float64 {
	base := group[0]
	for _, g := range group {
		if g.Strategy == string(hedgeNone) {
			base = g
		}
	}
	return round(base.P999/r.P999, 2)
}

// hedgeSweepImage draws four panels against the pause length: the p99 and
// p99.9 of the requests' latency, the p99.9 cut and the extra load. Both
// axes are logarithmic.
func hedgeSweepImage(path string, cfg *hedgeConfig, pauses []time.Duration, results []hedgeResult) error {
	const xLabel = "length of a server's stall (ms, log scale)"
	p99 := newPlot("p99 of the requests' latency", "", "ms (log scale)")
	p999 := newPlot("p99.9 of the requests' latency", "", "ms (log scale)")
	cuts := newPlot("p99.9 cut: none's p99.9 over the strategy's", xLabel, "× (log scale)")
	extra := newPlot("extra load: hedges per 100 leaves", xLabel, "% (log scale)")
	ticks := make(plot.ConstantTicks, len(pauses))
	for i, p := range pauses {
		ticks[i] = plot.Tick{Value: ms(p), Label: human(p)}
	}
	n := len(cfg.strategies)
	panels := []struct {
		p   *plot.Plot
		get func(group []hedgeResult, r hedgeResult) float64
	}{
		{p99, func(_ []hedgeResult, r hedgeResult) float64 { return r.P99 }},
		{p999, func(_ []hedgeResult, r hedgeResult) float64 { return r.P999 }},
		{cuts, cut},
		{extra, func(_ []hedgeResult, r hedgeResult) float64 { return r.ExtraLoad }},
	}
	for _, pn := range panels {
		pn.p.X.Scale, pn.p.X.Tick.Marker = plot.LogScale{}, ticks
		pn.p.Y.Scale, pn.p.Y.Tick.Marker = plot.LogScale{}, ticks125{}
	}
	for si, st := range cfg.strategies {
		for _, pn := range panels {
			if (pn.p == extra || pn.p == cuts) && st == hedgeNone {
				continue
			}
			xys := make(plotter.XYs, 0, len(pauses))
			for pi, p := range pauses {
				group := results[pi*n : (pi+1)*n]
				if y := pn.get(group, group[si]); y > 0 && !math.IsInf(y, 0) {
					xys = append(xys, plotter.XY{X: ms(p), Y: y})
				}
			}
			if len(xys) == 0 {
				continue
			}
			name := ""
			if pn.p == p999 {
				name = string(st)
			}
			if err := addSeries(pn.p, xys, hedgePalette[st], name); err != nil {
				return err
			}
		}
	}
	p999.Legend.Top, p999.Legend.Left = true, true
	p999.Legend.XOffs = vg.Millimeter * 2
	return saveGrid(path, [][]*plot.Plot{{p99, p999}, {cuts, extra}}, 8*vg.Inch, 6.5*vg.Inch)
}
