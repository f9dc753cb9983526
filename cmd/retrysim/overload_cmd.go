package main

import (
	"fmt"
	"image/color"
	"io"
	"slices"
	"time"

	"gonum.org/v1/plot/plotter"
)

const overloadSummary = `A fleet of -clients processes sends -rate requests per second in all, at
random, to a dependency that serves -capacity calls per second and refuses
the rest at once (a 503). After -warmup of healthy traffic its capacity drops
to -outage-capacity of that for -outage, then comes back; requests keep
arriving for -after. Every call takes -latency. Each request is one real
retry.Do of Exponential(-base).Cap(-cap).FullJitter, -attempts calls at most;
each process keeps one of the following per dependency, on simulated time:

  none             nothing but the retries
  budget           NewBudget(-budget-ratio, -budget-reserve)
  throttle         NewThrottle(ThrottleK(-throttle-k), ThrottleWindow(-throttle-window))
  breaker          NewBreaker(BreakerOpenPeriods(Constant(-breaker-open)), BreakerWindow(-breaker-window)),
                   otherwise its defaults: ratio 0.5, 20 outcomes at least, 1 probe
  budget+throttle  both the budget and the throttle
  breaker+backoff  NewBreaker(BreakerWindow(-breaker-window)) with its default open periods,
                   Constant(5s); only when -strategies names it

Reports the goodput (requests that succeeded, of those started from the
outage on), the calls reaching the dependency during the outage as a
multiple of its capacity then, the time from the end of the outage until
every second's requests succeed again (99%), and the requests refused
locally. -out writes a chart of the calls and the goodput over time as an
SVG or PNG image (by extension).`

// maxOverloadRequests bounds a run: about a second of simulation per
// million requests and strategy.
const maxOverloadRequests = 10_000_000

// maxThrottleK is the largest K that retry.ThrottleK accepts; it panics
// above it.
const maxThrottleK = 1e9

func runOverloadCmd(args []string, o *output) error {
	fs := newFlagSet("overload")
	cfg := overloadConfig{}
	fs.IntVar(&cfg.clients, "clients", 10, "processes in the fleet, each with its own budget, throttle or breaker, in [1, 10000]")
	fs.Float64Var(&cfg.rate, "rate", 500, "requests per second from the whole fleet")
	fs.Float64Var(&cfg.capacity, "capacity", 1000, "calls per second the healthy dependency serves")
	fs.Float64Var(&cfg.outageFactor, "outage-capacity", 0.1, "the share of -capacity left during the outage, in (0, 1]")
	fs.DurationVar(&cfg.warmup, "warmup", 2*time.Minute, "healthy traffic before the outage, to fill the throttles' and breakers' windows")
	fs.DurationVar(&cfg.outage, "outage", 30*time.Second, "how long the capacity stays down")
	fs.DurationVar(&cfg.after, "after", time.Minute, "how long requests keep arriving after the outage")
	fs.DurationVar(&cfg.burst, "burst", 100*time.Millisecond, "the dependency serves bursts of up to this much of its capacity at once (a token bucket)")
	fs.DurationVar(&cfg.latency, "latency", 20*time.Millisecond, "time every call takes to answer, served or refused")
	fs.IntVar(&cfg.attempts, "attempts", 3, "calls per request at most, the first included, in [1, 100]")
	fs.DurationVar(&cfg.base, "base", 100*time.Millisecond, "base delay of the retry schedule")
	fs.DurationVar(&cfg.limit, "cap", time.Second, "cap on every retry delay")
	fs.Float64Var(&cfg.budgetRatio, "budget-ratio", 0.1, "retries per request that each process's Budget allows")
	fs.IntVar(&cfg.budgetReserve, "budget-reserve", 10, "reserve of each process's Budget, in retries")
	fs.Float64Var(&cfg.throttleK, "throttle-k", 2, "K of each process's Throttle: it refuses calls once requests exceed K × accepted")
	fs.DurationVar(&cfg.throttleWin, "throttle-window", 5*time.Second, "the window over which each Throttle counts requests and accepts (NewThrottle's default)")
	fs.DurationVar(&cfg.breakerOpen, "breaker-open", 5*time.Second, "the fixed open period of each process's Breaker")
	fs.DurationVar(&cfg.breakerWin, "breaker-window", 5*time.Second, "the window over which each Breaker counts outcomes (NewBreaker's default)")
	list := fs.String("strategies", joinStrategies(overloadStrategies), "comma-separated strategies to compare; breaker+backoff is not among the default ones")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of every random draw")
	asJSON := fs.Bool("json", false, "print the results as JSON on stdout, and nothing else there")
	out := fs.String("out", "", "write the chart to this .svg or .png file and print its absolute path; a relative path is relative to the working directory, which is cmd/retrysim under go -C cmd/retrysim")
	if err := parseFlags(fs, args, o, overloadSummary); err != nil {
		return err
	}
	var err error
	if cfg.strategies, err = parseStrategies(*list, append(slices.Clip(overloadStrategies), overloadExtra...)); err != nil {
		return err
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	path, err := imagePath(*out)
	if err != nil {
		return err
	}

	bar := newProgress(o, "overload", len(cfg.strategies))
	results := runOverload(cfg, bar.add)
	bar.finish()

	return report(o, path, *asJSON, results,
		func(path string) error { return overloadImage(path, &cfg, results) },
		func() { printOverload(o.stdout, &cfg, results) })
}

func (cfg *overloadConfig) validate() error {
	if err := checkBudgetRatio(cfg.budgetRatio); err != nil {
		return err
	}
	switch {
	case cfg.clients < 1 || cfg.clients > 10000:
		return usagef("-clients %d is outside [1, 10000]", cfg.clients)
	case !finite(cfg.rate) || cfg.rate <= 0:
		return usagef("-rate %v is not a positive number", cfg.rate)
	case !finite(cfg.capacity) || cfg.capacity <= 0:
		return usagef("-capacity %v is not a positive number", cfg.capacity)
	case !(cfg.outageFactor > 0 && cfg.outageFactor <= 1):
		// 0 would leave the outage load without a capacity to compare with.
		return usagef("-outage-capacity %v is outside (0, 1]", cfg.outageFactor)
	case cfg.warmup < 0:
		return usagef("-warmup %v is negative", cfg.warmup)
	case cfg.outage < bucket:
		return usagef("-outage %v is shorter than %v", cfg.outage, bucket)
	case cfg.after < bucket:
		return usagef("-after %v is shorter than %v", cfg.after, bucket)
	case cfg.burst <= 0:
		return usagef("-burst %v is not positive", cfg.burst)
	case cfg.latency < 0:
		return usagef("-latency %v is negative", cfg.latency)
	case cfg.attempts < 1 || cfg.attempts > 100:
		return usagef("-attempts %d is outside [1, 100]", cfg.attempts)
	case cfg.base <= 0:
		return usagef("-base %v is not positive", cfg.base)
	case cfg.limit < cfg.base:
		return usagef("-cap %v is less than -base %v", cfg.limit, cfg.base)
	case cfg.budgetReserve < 0:
		return usagef("-budget-reserve %d is negative", cfg.budgetReserve)
	case !(cfg.throttleK >= 1 && cfg.throttleK <= maxThrottleK):
		return usagef("-throttle-k %v is outside [1, %v]", cfg.throttleK, maxThrottleK)
	case cfg.throttleWin <= 0:
		return usagef("-throttle-window %v is not positive", cfg.throttleWin)
	case cfg.breakerOpen <= 0:
		return usagef("-breaker-open %v is not positive", cfg.breakerOpen)
	case cfg.breakerWin <= 0:
		return usagef("-breaker-window %v is not positive", cfg.breakerWin)
	}
	span := cfg.warmup + cfg.outage + cfg.after
	if span > 24*time.Hour {
		return usagef("-warmup, -outage and -after add up to %v, more than a day", span)
	}
	// The counts are kept per second until the last request ends, at most
	// this long after the arrivals stop.
	if last := float64(cfg.attempts) * (float64(cfg.latency) + float64(cfg.limit)); last > float64(24*time.Hour) {
		return usagef("a request could last %d × (-latency %v + -cap %v), more than a day", cfg.attempts, cfg.latency, cfg.limit)
	}
	if n := cfg.rate * span.Seconds(); n > maxOverloadRequests {
		return usagef("-rate %v over %v makes %.0f requests, more than %d", cfg.rate, span, n, maxOverloadRequests)
	}
	return nil
}

// printOverload writes the table and the terminal chart.
func printOverload(w io.Writer, cfg *overloadConfig, results []overloadResult) {
	fmt.Fprintf(w, "overload: %d processes send %v requests/s to a dependency that serves %v calls/s;\n",
		cfg.clients, cfg.rate, cfg.capacity)
	fmt.Fprintf(w, "          after %v it serves %v%% of that (%v/s) for %v; requests arrive for %v more; every call takes %v\n",
		cfg.warmup, round(cfg.outageFactor*100, 2), round(cfg.capacity*cfg.outageFactor, 2), cfg.outage, cfg.after, cfg.latency)
	fmt.Fprintf(w, "          Exponential(%v).Cap(%v).FullJitter, %d attempts; budget %v/%d; throttle K %v over %v; breaker open %v, window %v; seed %d\n\n",
		cfg.base, cfg.limit, cfg.attempts, cfg.budgetRatio, cfg.budgetReserve, cfg.throttleK, cfg.throttleWin, cfg.breakerOpen, cfg.breakerWin, cfg.seed)
	fmt.Fprintf(w, "%-16s %8s %12s %9s %9s\n", "strategy", "goodput", "outage load", "recovery", "rejected")
	for _, r := range results {
		fmt.Fprintf(w, "%-16s %7.1f%% %11.1f× %9s %8.1f%%\n", r.Strategy, r.GoodputPct, r.OutageLoadX, humanS(r.RecoveryS, "never"), r.RejectedPct)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "goodput: requests that succeeded, of those started from the outage on; outage load: calls reaching")
	fmt.Fprintln(w, "the dependency during the outage, × its capacity then; recovery: from the end of the outage until")
	fmt.Fprintf(w, "every second's requests succeed again (%v%%); rejected: requests refused by the process itself.\n", fullGoodput*100)
	fmt.Fprintln(w)

	from := chartStart(cfg.warmup)
	labels := make([]string, len(results))
	series := make([][]int, len(results))
	for i, r := range results {
		labels[i] = r.Strategy
		if from < len(r.calls) {
			series[i] = r.calls[from:]
		}
	}
	fmt.Fprintf(w, "calls reaching the dependency per second, from %v before the outage (linear scale)\n", cfg.warmup-time.Duration(from)*bucket)
	sparkRowsScaled(w, labels, series, 64, int(cfg.warmup/bucket)-from, "the outage begins", linearLevel)
}

// overloadPalette gives each strategy its color in the chart.
var overloadPalette = map[overloadStrategy]color.RGBA{
	ovNone:           {0x7f, 0x7f, 0x7f, 0xff},
	ovBudget:         {0x17, 0xbe, 0xcf, 0xff},
	ovThrottle:       {0x1f, 0x77, 0xb4, 0xff},
	ovBreaker:        {0xd6, 0x27, 0x28, 0xff},
	ovBudgetThrottle: {0x2c, 0xa0, 0x2c, 0xff},
	ovBreakerBackoff: {0x94, 0x67, 0xbd, 0xff},
}

// overloadImage draws two panels over time, from 10s before the outage to
// the end of the arrivals: the calls reaching the dependency per second,
// with its capacity dashed, and the share of each second's requests that
// succeeded. The outage is shaded in both.
func overloadImage(path string, cfg *overloadConfig, results []overloadResult) error {
	from := chartStart(cfg.warmup)
	to := int((cfg.warmup + cfg.outage + cfg.after) / bucket)
	x := func(k int) float64 { return (time.Duration(k)*bucket - cfg.warmup).Seconds() }
	ymin := max(cfg.capacity*cfg.outageFactor/4, 1)
	c, low := cfg.capacity, cfg.capacity*max(cfg.outageFactor, ymin/cfg.capacity)
	capacity := plotter.XYs{
		{X: x(from), Y: c}, {X: 0, Y: c}, {X: 0, Y: low}, {X: cfg.outage.Seconds(), Y: low}, {X: cfg.outage.Seconds(), Y: c}, {X: x(to), Y: c},
	}
	runs := make([]strategyRun, len(results))
	for i, r := range results {
		runs[i] = strategyRun{r.Strategy, overloadPalette[overloadStrategy(r.Strategy)], r.calls, r.started, r.succeeded}
	}
	return timeChart(path, "calls reaching the dependency per second (dashed: its capacity)", "calls/s (log scale)",
		"seconds since the outage began (shaded: the outage)", from, to, cfg.warmup, cfg.outage.Seconds(), capacity, ymin, runs)
}
