package main

import (
	"flag"
	"fmt"
	"image/color"
	"io"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/seed-b8c8f69d/retry/retryserver"
)

const metastableSummary = `A queueing server (-workers workers, exponential service times of mean
-service: capacity = workers / service) serves requests that arrive at
random at -load of its capacity from -clients processes. After -warmup, the
trigger: the load goes up -factor times (-trigger spike) or the capacity
down -factor times (-trigger dip) for -trigger-for, then back; requests keep
arriving for -after. The server works on every request it took, even one
whose client has given up (wasted work). Each request is one real retry.Do,
-attempts attempts at most, each waiting -timeout at most for its answer;
each process keeps its own Budget, Throttle or Breaker, on simulated time:

  naive        Constant(0): a retry as soon as an attempt times out
  jitter       Exponential(-base).Cap(-cap).FullJitter
  budget       jitter, and NewBudget(-budget-ratio, -budget-reserve)
  throttle     jitter, and NewThrottle() with the library's defaults
  breaker      jitter, and NewBreaker() with the library's defaults
  recommended  jitter, NewBudget(0.1, 10) and NewBreaker(BreakerWindow(10s)),
               whatever the flags say: the README's default for a new service
  budget+throttle, budget+breaker
               jitter, and the budget with the throttle or the breaker: the
               candidates recommended was chosen against; only when
               -strategies names them
  server       naive clients, and a server that sheds as retryserver's
               Shedder does (docs/SERVER.md), whose pushback they honour
  server+recommended  the recommended clients, and the shedding server
  limiter      jitter, and NewLimiter() with the library's defaults

Reports, per strategy: the goodput before the trigger and after it, whether
the server is stuck (goodput below 10% in every 5 s window of the 60 s after
the trigger), the time from the end of the trigger until every 5 s window
has 95% goodput, the drain bound (the work standing when the trigger ends,
over the workers), the attempts per request after the trigger. -sweep
repeats the run at base loads from 50% to 95% and reports, per strategy, the
highest load at which it recovers. -scenario published sets the published
setup: one worker (10 requests/s), evenly spaced arrivals. -out writes a
chart of the run at -load (SVG or PNG, by extension).`

func runMetastableCmd(args []string, o *output) error {
	fs := newFlagSet("metastable")
	cfg := msConfig{}
	scenario := fs.String("scenario", "default", "default, or published: one worker and evenly spaced arrivals, the published setup")
	fs.IntVar(&cfg.workers, "workers", 50, "the server's workers, in [1, 10000]")
	fs.DurationVar(&cfg.service, "service", 100*time.Millisecond, "mean service time of a request (exponential)")
	discipline := fs.String("discipline", "fifo", "the order in which the server takes queued requests: fifo or lifo")
	fs.IntVar(&cfg.queueLimit, "queue-limit", 0, "requests the server queues at most, refusing the others; 0 for no limit")
	fs.Float64Var(&cfg.refusalCost, "refusal-cost", 0.05, "a refusal costs the server this fraction of a mean service time, in [0, 1]")
	fs.Float64Var(&cfg.load, "load", 0.9, "base load, a fraction of the capacity, in (0, 1)")
	arrivals := fs.String("arrivals", "poisson", "poisson, or constant: evenly spaced")
	fs.IntVar(&cfg.clients, "clients", 10, "processes in the fleet, each with its own budget, throttle or breaker, in [1, 10000]")
	fs.DurationVar(&cfg.warmup, "warmup", 2*time.Minute, "base load before the trigger, to fill the throttles' and breakers' windows")
	trigger := fs.String("trigger", "spike", "spike (the load goes up) or dip (the capacity goes down)")
	fs.Float64Var(&cfg.factor, "factor", 2, "the trigger multiplies the load, or divides the capacity, by this, in (1, 100]")
	fs.DurationVar(&cfg.trigger, "trigger-for", 10*time.Second, "how long the trigger lasts")
	fs.DurationVar(&cfg.after, "after", 2*time.Minute, "how long requests keep arriving after the trigger, at least 60s")
	fs.DurationVar(&cfg.timeout, "timeout", 500*time.Millisecond, "each attempt waits this long at most for its answer")
	fs.IntVar(&cfg.attempts, "attempts", 5, "attempts per request at most, the first included, in [1, 100]")
	fs.DurationVar(&cfg.base, "base", 100*time.Millisecond, "base delay of the jittered schedule")
	fs.DurationVar(&cfg.limit, "cap", 2*time.Second, "cap on every delay of the jittered schedule")
	fs.Float64Var(&cfg.budgetRatio, "budget-ratio", 0.1, "retries per request that each process's Budget allows")
	fs.IntVar(&cfg.budgetReserve, "budget-reserve", 10, "reserve of each process's Budget, in retries")
	fs.Float64Var(&cfg.throttleK, "throttle-k", 0, "K of each process's Throttle; 0 for the library's default")
	fs.DurationVar(&cfg.throttleWin, "throttle-window", 0, "the window of each process's Throttle; 0 for the library's default")
	fs.DurationVar(&cfg.breakerWin, "breaker-window", 0, "the window of each process's Breaker; 0 for the library's default")
	fs.DurationVar(&cfg.breakerOpen, "breaker-open", 0, "the first open period of each process's Breaker, doubling up to 2m; 0 for the library's default")
	fs.DurationVar(&cfg.shedTarget, "shed-target", retryserver.DefaultTarget, "Target of the shedding server of the server strategies")
	fs.DurationVar(&cfg.shedInterval, "shed-interval", retryserver.DefaultInterval, "Interval of the shedding server of the server strategies, at least -shed-target")
	fs.IntVar(&cfg.shedQueueLimit, "shed-queue-limit", retryserver.DefaultQueueLimit, "QueueLimit of the shedding server of the server strategies")
	list := fs.String("strategies", joinStrategies(msStrategies), "comma-separated strategies to compare")
	sweep := fs.Bool("sweep", false, "repeat the run at base loads 50%, 55%, …, 95% and report the metastability boundary of each strategy")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of every random draw")
	asJSON := fs.Bool("json", false, "print the results as JSON on stdout, and nothing else there")
	out := fs.String("out", "", "write the chart of the run at -load to this .svg or .png file and print its absolute path; a relative path is relative to the working directory, which is cmd/retrysim under go -C cmd/retrysim")
	if err := parseFlags(fs, args, o, metastableSummary); err != nil {
		return err
	}
	switch *scenario {
	case "default":
	case "published":
		// Flags given explicitly still win.
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		if !given["workers"] {
			cfg.workers = 1
		}
		if !given["arrivals"] {
			*arrivals = "constant"
		}
	default:
		return usagef("-scenario %q is not default or published", *scenario)
	}
	var err error
	if cfg.lifo, err = either("discipline", *discipline, "fifo", "lifo"); err != nil {
		return err
	}
	if cfg.constant, err = either("arrivals", *arrivals, "poisson", "constant"); err != nil {
		return err
	}
	if cfg.dip, err = either("trigger", *trigger, "spike", "dip"); err != nil {
		return err
	}
	if cfg.strategies, err = parseStrategies(*list, append(slices.Clip(msStrategies), msExtra...)); err != nil {
		return err
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	path, err := imagePath(*out)
	if err != nil {
		return err
	}
	loads := []float64{cfg.load}
	if *sweep {
		if path != "" {
			return usagef("-out draws the run at -load; it does not go with -sweep")
		}
		loads = sweepLoads
	}
	bar := newProgress(o, "metastable", len(loads)*len(cfg.strategies))
	results := msRuns(cfg, loads, bar.add)
	bar.finish()
	if *sweep {
		return report(o, "", *asJSON, results, nil, func() { printSweep(o.stdout, &cfg, loads, results) })
	}
	return report(o, path, *asJSON, results,
		func(path string) error { return metastableImage(path, &cfg, results) },
		func() { printMetastable(o.stdout, &cfg, results) })
}

// either parses value, the value of flag -name, which must be off or on,
// and reports whether it is on.
func either(name, value, off, on string) (bool, error) {
	switch value {
	case off:
		return false, nil
	case on:
		return true, nil
	}
	return false, usagef("-%s %q is not %s or %s", name, value, off, on)
}

// sweepLoads are the base loads of -sweep.
var sweepLoads = []float64{0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95}

// maxMsRequests bounds a run: about a second of simulation per few
// hundred thousand requests and strategy.
const maxMsRequests = 5_000_000

func (cfg *msConfig) validate() error {
	if err := checkBudgetRatio(cfg.budgetRatio); err != nil {
		return err
	}
	if cfg.shedTarget <= 0 || cfg.shedInterval < cfg.shedTarget || cfg.shedQueueLimit < 0 {
		return usagef("-shed-target must be positive, -shed-interval at least -shed-target and -shed-queue-limit not negative")
	}
	switch {
	case cfg.workers < 1 || cfg.workers > 10000:
		return usagef("-workers %d is outside [1, 10000]", cfg.workers)
	case cfg.service <= 0:
		return usagef("-service %v is not positive", cfg.service)
	case cfg.queueLimit < 0:
		return usagef("-queue-limit %d is negative", cfg.queueLimit)
	case !(cfg.refusalCost >= 0 && cfg.refusalCost <= 1):
		return usagef("-refusal-cost %v is outside [0, 1]", cfg.refusalCost)
	case !(cfg.load > 0 && cfg.load < 1):
		return usagef("-load %v is outside (0, 1)", cfg.load)
	case cfg.clients < 1 || cfg.clients > 10000:
		return usagef("-clients %d is outside [1, 10000]", cfg.clients)
	case cfg.warmup < 0:
		return usagef("-warmup %v is negative", cfg.warmup)
	case !finite(cfg.factor) || !(cfg.factor > 1 && cfg.factor <= 100):
		return usagef("-factor %v is outside (1, 100]", cfg.factor)
	case cfg.trigger < bucket:
		return usagef("-trigger-for %v is shorter than %v", cfg.trigger, bucket)
	case cfg.after < stuckFor:
		return usagef("-after %v is shorter than %v, the time a stuck server is watched", cfg.after, stuckFor)
	case cfg.timeout <= 0:
		return usagef("-timeout %v is not positive", cfg.timeout)
	case cfg.attempts < 1 || cfg.attempts > 100:
		return usagef("-attempts %d is outside [1, 100]", cfg.attempts)
	case cfg.base <= 0:
		return usagef("-base %v is not positive", cfg.base)
	case cfg.limit < cfg.base:
		return usagef("-cap %v is less than -base %v", cfg.limit, cfg.base)
	case cfg.budgetReserve < 0:
		return usagef("-budget-reserve %d is negative", cfg.budgetReserve)
	case cfg.throttleK != 0 && !(cfg.throttleK >= 1 && cfg.throttleK <= maxThrottleK):
		return usagef("-throttle-k %v is outside [1, %v]", cfg.throttleK, maxThrottleK)
	case cfg.throttleWin < 0:
		return usagef("-throttle-window %v is negative", cfg.throttleWin)
	case cfg.breakerWin < 0:
		return usagef("-breaker-window %v is negative", cfg.breakerWin)
	case cfg.breakerOpen < 0:
		return usagef("-breaker-open %v is negative", cfg.breakerOpen)
	}
	span := cfg.warmup + cfg.trigger + cfg.after
	if span > 24*time.Hour {
		return usagef("-warmup, -trigger-for and -after add up to %v, more than a day", span)
	}
	if n := cfg.capacity() * (span.Seconds() + cfg.factor*cfg.trigger.Seconds()); n > maxMsRequests {
		return usagef("-workers %d / -service %v over %v makes %.0f requests, more than %d", cfg.workers, cfg.service, span, n, maxMsRequests)
	}
	if cfg.service > time.Hour || cfg.timeout > time.Hour || cfg.limit > time.Hour {
		return usagef("-service, -timeout and -cap must be at most an hour")
	}
	return nil
}

// printMetastable writes the table of a run at one load and a terminal
// chart of its goodput.
func printMetastable(w io.Writer, cfg *msConfig, results []msResult) {
	printMsSetup(w, cfg)
	fmt.Fprintf(w, "%-18s %8s %8s %6s %9s %8s %9s %9s %8s\n", "strategy", "before", "after", "stuck", "recovery", "drain", "attempts", "rejected", "wasted")
	for _, r := range results {
		fmt.Fprintf(w, "%-18s %7.1f%% %7.1f%% %6s %9s %7.1fs %9.2f %8.1f%% %7.1f%%\n", r.Strategy, r.GoodputBeforePct, r.GoodputAfterPct,
			yesNo(r.Stuck), humanS(r.RecoveryS, "never"), r.DrainS, r.AttemptsPerRequest, r.RejectedPct, r.WastedPct)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "before, after: goodput of the requests started in the second half of the warm-up, and after the")
	fmt.Fprintln(w, "trigger; stuck: below 10% in every 5s window of the 60s after it; recovery: from its end until every")
	fmt.Fprintln(w, "5s window has 95%; drain: the work standing at its end over the workers, a bound no client can beat;")
	fmt.Fprintln(w, "attempts: reaching the server per request after it; rejected: requests a budget, throttle, breaker or limiter")
	fmt.Fprintln(w, "ended; wasted: the server's work from the trigger on spent on requests whose client had given up.")
	fmt.Fprintln(w)

	from := chartStart(cfg.warmup)
	labels := make([]string, len(results))
	series := make([][]int, len(results))
	for i, r := range results {
		labels[i] = r.Strategy
		for k := from; k < len(r.started) && k < int((cfg.warmup+cfg.trigger+cfg.after)/bucket); k++ {
			g := 100
			if r.started[k] > 0 {
				g = 100 * r.succeeded[k] / r.started[k]
			}
			series[i] = append(series[i], g)
		}
	}
	fmt.Fprintf(w, "goodput per second, from %v before the trigger (linear scale)\n", cfg.warmup-time.Duration(from)*bucket)
	sparkRowsScaled(w, labels, series, 64, int(cfg.warmup/bucket)-from, "the trigger begins", linearLevel)
}

func printMsSetup(w io.Writer, cfg *msConfig) {
	arr := "Poisson"
	if cfg.constant {
		arr = "evenly spaced"
	}
	disc := "FIFO"
	if cfg.lifo {
		disc = "LIFO"
	}
	trig := fmt.Sprintf("the load ×%v", cfg.factor)
	if cfg.dip {
		trig = fmt.Sprintf("the capacity ÷%v", cfg.factor)
	}
	fmt.Fprintf(w, "metastable: %d workers × %v mean service = %v requests/s, %s; %d processes send %s arrivals;\n",
		cfg.workers, cfg.service, round(cfg.capacity(), 2), disc, cfg.clients, arr)
	fmt.Fprintf(w, "            after %v, %s for %v; requests arrive for %v more; timeout %v per attempt, %d attempts;\n",
		cfg.warmup, trig, cfg.trigger, cfg.after, cfg.timeout, cfg.attempts)
	fmt.Fprintf(w, "            jitter Exponential(%v).Cap(%v).FullJitter; budget %v/%d; refusal cost %v; seed %d\n\n",
		cfg.base, cfg.limit, cfg.budgetRatio, cfg.budgetReserve, cfg.refusalCost, cfg.seed)
}

// printSweep writes, per strategy, its verdict at each load and the
// highest load at which it recovered.
func printSweep(w io.Writer, cfg *msConfig, loads []float64, results []msResult) {
	printMsSetup(w, cfg)
	n := len(cfg.strategies)
	fmt.Fprintf(w, "%-18s", "load")
	for _, l := range loads {
		fmt.Fprintf(w, " %6s", strconv.FormatFloat(round(l*100, 2), 'f', -1, 64)+"%")
	}
	fmt.Fprintf(w, "  %s\n", "boundary")
	for i, st := range cfg.strategies {
		fmt.Fprintf(w, "%-18s", st)
		for j := range loads {
			r := results[j*n+i]
			cell := "stuck"
			switch {
			case r.GoodputBeforePct < 100*recoveredAt:
				cell = "before"
			case r.RecoveryS != nil:
				cell = humanS(r.RecoveryS, "")
			case !r.Stuck:
				cell = "slow"
			}
			fmt.Fprintf(w, " %6s", cell)
		}
		fmt.Fprintf(w, "  %s\n", boundary(loads, results, n, i))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "each cell: the recovery time at that base load; stuck: below 10% goodput for the 60s after the")
	fmt.Fprintln(w, "trigger; slow: neither stuck nor back to 95% within the run; before: below 95% goodput already")
	fmt.Fprintln(w, "before the trigger, at base load alone. boundary: the highest load up to which every run recovered.")
}

// boundary returns the highest load at which strategy i recovered, with
// every lower load recovering too, as a percentage; "none" if it did not
// recover at the lowest.
func boundary(loads []float64, results []msResult, n, i int) string {
	best := "none"
	for j, l := range loads {
		if r := results[j*n+i]; r.RecoveryS == nil || r.GoodputBeforePct < 100*recoveredAt {
			break
		}
		best = strconv.FormatFloat(round(l*100, 2), 'f', -1, 64) + "%"
	}
	return best
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// msPalette gives each strategy its color in the chart.
var msPalette = map[msStrategy]color.RGBA{
	msNaive:             {0x7f, 0x7f, 0x7f, 0xff},
	msJitter:            {0xff, 0x7f, 0x0e, 0xff},
	msBudget:            {0x17, 0xbe, 0xcf, 0xff},
	msThrottle:          {0x1f, 0x77, 0xb4, 0xff},
	msBreaker:           {0xd6, 0x27, 0x28, 0xff},
	msRecommended:       {0x2c, 0xa0, 0x2c, 0xff},
	msBudgetThrottle:    {0x94, 0x67, 0xbd, 0xff},
	msBudgetBreaker:     {0x8c, 0x56, 0x4b, 0xff},
	msServer:            {0xbc, 0xbd, 0x22, 0xff},
	msServerRecommended: {0xe3, 0x77, 0xc2, 0xff},
	msLimiter:           {0x17, 0x3f, 0x5f, 0xff},
}

// metastableImage draws two panels over time, from 10s before the trigger
// to the end of the arrivals: the attempts reaching the server per second,
// with its capacity dashed (log scale), and the goodput of the requests
// started in each second. The trigger is shaded in both.
func metastableImage(path string, cfg *msConfig, results []msResult) error {
	from := chartStart(cfg.warmup)
	to := int((cfg.warmup + cfg.trigger + cfg.after) / bucket)
	x := func(k int) float64 { return (time.Duration(k)*bucket - cfg.warmup).Seconds() }
	c := cfg.capacity()
	ymin := max(c/20, 1)
	capacity := plotter.XYs{{X: x(from), Y: c}, {X: x(to), Y: c}}
	if cfg.dip {
		d, end := max(c/cfg.factor, ymin), cfg.trigger.Seconds()
		capacity = plotter.XYs{{X: x(from), Y: c}, {X: 0, Y: c}, {X: 0, Y: d}, {X: end, Y: d}, {X: end, Y: c}, {X: x(to), Y: c}}
	}
	runs := make([]strategyRun, len(results))
	for i, r := range results {
		runs[i] = strategyRun{r.Strategy, msPalette[msStrategy(r.Strategy)], r.sent, r.started, r.succeeded}
	}
	return timeChart(path, "attempts reaching the server per second (dashed: its capacity)", "attempts/s (log scale)",
		"seconds since the trigger began (shaded: the trigger)", from, to, cfg.warmup, cfg.trigger.Seconds(), capacity, ymin, runs)
}
