package main

import (
	"fmt"
	"image/color"
	"io"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

const limiterSummary = `One client service sends requests that arrive at random (Poisson) to a
queueing server (-workers workers, exponential service times of mean
-service: capacity = workers / service; a FIFO queue; the server works on
requests whose client gave up), through one concurrency limiter shared by
all its requests. Each request is one real retry.Do with -attempts attempts
at most, each waiting -timeout at most; every attempt holds a permit while
in flight, and one that finds none is refused at once. The strategies:

  ours         retry.NewLimiter() with its defaults
  static-0.5x  a fixed limit of half the ideal concurrency (the workers)
  static-2x    a fixed limit of twice the ideal

and the scenarios:

  overload-3x  requests at 3x the capacity for a minute (measured from 10 s)
  step         at 1.5x the full capacity, the capacity steps 100% -> 50% ->
               100% (the workers slow to half speed), 30 s each
  incident     at 0.8x the full capacity: a minute at full capacity, ten
               minutes at 50%, 30 s back (measured over the ten minutes)

Reports, per strategy and scenario: the goodput (successes per 100 requests
the server could serve), the p99 latency of the requests that succeeded and
of requests at 10% load without a limiter, the time the limit takes to
settle after each step, and its drift over the incident's last half.
failsafe-go's adaptivelimiter reads time.Now and takes no clock: its rows
come from this command's tests, which run the same model in a
testing/synctest bubble (go test -run TestLimiterFailsafe -v; see
docs/LIMITER.md). -out writes a chart of the step scenario: the limit and
the p99 latency over time (SVG or PNG, by extension).`

func runLimiterCmd(args []string, o *output) error {
	fs := newFlagSet("limiter")
	cfg := limConfig{}
	fs.IntVar(&cfg.workers, "workers", 20, "the server's workers, in [2, 1000]")
	fs.DurationVar(&cfg.service, "service", 20*time.Millisecond, "mean service time of a request at full speed (exponential), in [1ms, 1s]")
	fs.DurationVar(&cfg.timeout, "timeout", 250*time.Millisecond, "each attempt waits this long at most for its answer")
	fs.IntVar(&cfg.attempts, "attempts", 2, "attempts per request at most, the first included, in [1, 10]")
	list := fs.String("strategies", joinStrategies(limStrategies), "comma-separated strategies to compare")
	scenarios := fs.String("scenarios", joinStrategies(limScenarios), "comma-separated scenarios to run")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of every random draw")
	asJSON := fs.Bool("json", false, "print the results as JSON on stdout, and nothing else there")
	out := fs.String("out", "", "write the chart of the step scenario to this .svg or .png file and print its absolute path")
	if err := parseFlags(fs, args, o, limiterSummary); err != nil {
		return err
	}
	var err error
	if cfg.strategies, err = parseStrategies(*list, limStrategies); err != nil {
		return err
	}
	if cfg.scenarios, err = parseStrategies(*scenarios, limScenarios); err != nil {
		return err
	}
	switch {
	case cfg.workers < 2 || cfg.workers > 1000:
		return usagef("-workers %d is outside [2, 1000]", cfg.workers)
	case cfg.service < time.Millisecond || cfg.service > time.Second:
		return usagef("-service %v is outside [1ms, 1s]", cfg.service)
	case cfg.timeout <= 0 || cfg.timeout > time.Hour:
		return usagef("-timeout %v is outside (0, 1h]", cfg.timeout)
	case cfg.attempts < 1 || cfg.attempts > 10:
		return usagef("-attempts %d is outside [1, 10]", cfg.attempts)
	}
	// The incident alone makes 0.8 × capacity × 690 s requests.
	if n := cfg.capacity() * 3 * 60 * float64(len(cfg.strategies)); cfg.capacity()*0.8*690 > maxMsRequests || n > maxMsRequests {
		return usagef("-workers %d / -service %v makes more than %d requests per run", cfg.workers, cfg.service, maxMsRequests)
	}
	path, err := imagePath(*out)
	if err != nil {
		return err
	}
	bar := newProgress(o, "limiter", len(cfg.scenarios)*len(cfg.strategies))
	results := limRuns(cfg, bar.add)
	bar.finish()
	return report(o, path, *asJSON, results,
		func(path string) error { return limiterImage(path, &cfg, results) },
		func() { printLimiter(o.stdout, &cfg, results) })
}

// printLimiter writes the table.
func printLimiter(w io.Writer, cfg *limConfig, results []limResult) {
	fmt.Fprintf(w, "limiter: %d workers × %v mean service = %v requests/s at full speed (ideal concurrency %d);\n",
		cfg.workers, cfg.service, round(cfg.capacity(), 2), cfg.workers)
	fmt.Fprintf(w, "         timeout %v per attempt, %d attempts; seed %d\n\n", cfg.timeout, cfg.attempts, cfg.seed)
	fmt.Fprintf(w, "%-12s %-12s %8s %9s %9s %8s %8s\n", "strategy", "scenario", "goodput", "p99", "p99 idle", "settle", "drift")
	for _, r := range results {
		never := "-" // only the step scenario settles
		if r.Scenario == string(limStep) {
			never = "never"
		}
		settle, drift := humanS(r.SettleS, never), "-"
		if r.DriftPct != nil {
			drift = fmt.Sprintf("%+.1f%%", *r.DriftPct)
		}
		fmt.Fprintf(w, "%-12s %-12s %7.1f%% %7.1fms %7.1fms %8s %8s\n", r.Strategy, r.Scenario, r.GoodputPct, r.P99Ms, r.P99NoLoadMs, settle, drift)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "goodput: successes per 100 requests the server could serve; p99: of the requests that succeeded;")
	fmt.Fprintln(w, "p99 idle: at 10% load without a limiter; settle: after each step, until the limit stays within 25%")
	fmt.Fprintln(w, "of where it ends the phase (the longest); drift: the limit's rise over the incident's last half.")
	fmt.Fprintln(w, "failsafe-go's rows: go test -run TestLimiterFailsafe -v (it reads time.Now; see docs/LIMITER.md).")
}

// limPalette gives each strategy its color in the chart.
var limPalette = map[string]color.RGBA{
	string(limOurs):     {0x2c, 0xa0, 0x2c, 0xff},
	string(limHalf):     {0x7f, 0x7f, 0x7f, 0xff},
	string(limDouble):   {0xff, 0x7f, 0x0e, 0xff},
	string(limFailsafe): {0x1f, 0x77, 0xb4, 0xff},
}

// limiterImage draws the step scenario: the limit (its median over each
// second) and the p99 latency of the requests that succeeded in each
// second, over time, with the half-speed phase shaded.
func limiterImage(path string, cfg *limConfig, results []limResult) error {
	const xLabel = "seconds (shaded: the workers at half speed)"
	lim := newPlot("the limit (median over each second; dashed: the ideal, the workers)", "", "permits")
	lat := newPlot("p99 latency of the requests that succeeded in each second", xLabel, "ms")
	var step []limResult
	for _, r := range results {
		if r.Scenario == string(limStep) {
			step = append(step, r)
		}
	}
	if len(step) == 0 {
		return usagef("-out draws the step scenario; add it to -scenarios")
	}
	var ymax, lmax float64
	for _, r := range step {
		for _, v := range r.limits {
			ymax = max(ymax, v)
		}
		for _, v := range r.p99s {
			lmax = max(lmax, v)
		}
	}
	ymax = max(ymax, float64(cfg.workers)) * 1.1
	lmax *= 1.1
	for _, p := range []struct {
		p  *plot.Plot
		hi float64
	}{{lim, ymax}, {lat, lmax}} {
		shade, err := shaded(30, 60, 0, p.hi)
		if err != nil {
			return err
		}
		p.p.Add(shade)
	}
	ideal, err := dashed(plotter.XYs{{X: 0, Y: float64(cfg.workers)}, {X: 90, Y: float64(cfg.workers)}})
	if err != nil {
		return err
	}
	lim.Add(ideal)
	for _, r := range step {
		for _, pl := range []struct {
			p  *plot.Plot
			ys []float64
		}{{lim, r.limits}, {lat, r.p99s}} {
			xys := make(plotter.XYs, 0, len(pl.ys))
			for k, v := range pl.ys {
				xys = append(xys, plotter.XY{X: float64(k) + 0.5, Y: v})
			}
			line, err := plotter.NewLine(xys)
			if err != nil {
				return err
			}
			line.Color = limPalette[r.Strategy]
			line.Width = vg.Points(1.1)
			pl.p.Add(line)
			if pl.p == lim {
				lim.Legend.Add(r.Strategy, line)
			}
		}
	}
	for _, p := range []*plot.Plot{lim, lat} {
		p.X.Min, p.X.Max = 0, 90
	}
	lim.Y.Min, lim.Y.Max = 0, ymax
	lat.Y.Min, lat.Y.Max = 0, lmax
	lim.Legend.Top = true
	return saveGrid(path, [][]*plot.Plot{{lim}, {lat}}, 8*vg.Inch, 6*vg.Inch)
}
