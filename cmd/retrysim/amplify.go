package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

const amplifySummary = `A chain of -depth services, each calling the next with a real retry.Do of at
most -attempts attempts; below the last one, the dependency is down. One user
request then reaches the bottom attempts^depth times (3 attempts, 3 deep: 27).
With one retry.NewBudget(-budget-ratio, -budget-reserve) per service, shared by
all the calls through it, the same outage costs little more than one call per
request: amplify runs -requests requests one after the other and reports the
mean. Nothing waits: the retries run on a clock that returns at once.`

// amplifyConfig is the model's parameters.
type amplifyConfig struct {
	depth, attempts int
	requests        int
	ratio           float64
	reserve         int
}

// amplifyResult is the JSON document of `amplify -json`: calls reaching the
// bottom per user request, without budgets (every request alike) and with a
// budget at each service (the mean over the requests).
type amplifyResult struct {
	Depth    int     `json:"depth"`
	Attempts int     `json:"attempts"`
	Without  float64 `json:"calls_without_budget"`
	With     float64 `json:"calls_with_budget"`

	without []int // calls into each level for one request; the last is the bottom
	with    []int // calls into each level over all requests
	first   []int // calls into each level for the first request, with budgets
	cfg     amplifyConfig
}

var errBottomDown = errors.New("bottom dependency down")

// instant is a retry.Clock on which waits take no time.
type instant struct{}

func (instant) Now() time.Time { return epoch }

func (instant) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// amplifyChain makes one call into level and everything it causes below;
// counts[level] counts the calls into level, and level depth is the bottom.
// budgets is nil, or holds one Budget per service.
func amplifyChain(ctx context.Context, cfg *amplifyConfig, sched retry.Schedule, budgets []*retry.Budget, level int, counts []int) error {
	counts[level]++
	if level == cfg.depth {
		return errBottomDown
	}
	opts := []retry.Option{retry.WithClock(instant{})}
	if budgets != nil {
		opts = append(opts, retry.WithBudget(budgets[level]))
	}
	return retry.Do(ctx, sched, func(ctx context.Context) error {
		return amplifyChain(ctx, cfg, sched, budgets, level+1, counts)
	}, opts...)
}

func amplify(cfg amplifyConfig) amplifyResult {
	ctx := context.Background()
	sched := retry.Exponential(100 * time.Millisecond).Cap(time.Second).Take(cfg.attempts - 1)
	r := amplifyResult{Depth: cfg.depth, Attempts: cfg.attempts, cfg: cfg,
		without: make([]int, cfg.depth+1), with: make([]int, cfg.depth+1), first: make([]int, cfg.depth+1)}

	_ = amplifyChain(ctx, &cfg, sched, nil, 0, r.without)
	budgets := make([]*retry.Budget, cfg.depth)
	for i := range budgets {
		budgets[i] = retry.NewBudget(cfg.ratio, cfg.reserve)
	}
	for i := range cfg.requests {
		_ = amplifyChain(ctx, &cfg, sched, budgets, 0, r.with)
		if i == 0 {
			copy(r.first, r.with)
		}
	}
	r.Without = float64(r.without[cfg.depth])
	r.With = round(float64(r.with[cfg.depth])/float64(cfg.requests), 3)
	return r
}

func runAmplifyCmd(args []string, o *output) error {
	fs := newFlagSet("amplify")
	cfg := amplifyConfig{}
	fs.IntVar(&cfg.depth, "depth", 3, "services in the chain, each retrying the next")
	fs.IntVar(&cfg.attempts, "attempts", 3, "attempts per call at each service, the first included")
	fs.IntVar(&cfg.requests, "requests", 1000, "user requests sent during the outage, for the budget's mean")
	fs.Float64Var(&cfg.ratio, "budget-ratio", 0.1, "retries per call that each service's Budget allows")
	fs.IntVar(&cfg.reserve, "budget-reserve", 10, "reserve of each service's Budget, in retries")
	asJSON := fs.Bool("json", false, "print the result as JSON on stdout, and nothing else there")
	if err := parseFlags(fs, args, o, amplifySummary); err != nil {
		return err
	}
	if err := checkBudgetRatio(cfg.ratio); err != nil {
		return err
	}
	switch {
	case cfg.depth < 1:
		return usagef("-depth %d is less than 1", cfg.depth)
	case cfg.attempts < 1:
		return usagef("-attempts %d is less than 1", cfg.attempts)
	case cfg.requests < 1 || cfg.requests > 1000000:
		return usagef("-requests %d is outside [1, 1000000]", cfg.requests)
	case cfg.reserve < 0:
		return usagef("-budget-reserve %d is negative", cfg.reserve)
	}
	// Every level multiplies the calls by at most attempts.
	if perRequest := math.Pow(float64(cfg.attempts), float64(cfg.depth)); perRequest > 1e7 || perRequest*float64(cfg.requests) > 5e7 {
		return usagef("%d attempts %d deep make up to %.3g calls per request, too many to simulate %d requests",
			cfg.attempts, cfg.depth, perRequest, cfg.requests)
	}
	r := amplify(cfg)
	if *asJSON {
		return writeJSON(o.stdout, r)
	}
	printAmplify(o.stdout, &r)
	return nil
}

func printAmplify(w io.Writer, r *amplifyResult) {
	cfg := r.cfg
	fmt.Fprintf(w, "amplify: %d services in a chain, each making up to %d attempts per call; the dependency below is down\n\n",
		cfg.depth, cfg.attempts)
	fmt.Fprintf(w, "calls per user request into each level\n")
	fmt.Fprintf(w, "%-10s %12s  %-26s %12s\n", "", "no budget", "", "budget")
	top := float64(r.without[cfg.depth])
	for level := range cfg.depth + 1 {
		name := "service " + strconv.Itoa(level+1)
		if level == cfg.depth {
			name = "bottom"
		}
		with := float64(r.with[level]) / float64(cfg.requests)
		fmt.Fprintf(w, "%-10s %12d  %-26s %12.3f  %s\n", name, r.without[level],
			bar(float64(r.without[level]), top, 26), with, bar(with, top, 26))
	}
	fmt.Fprintf(w, "\nwithout a budget: %d^%d = %d calls reach the bottom for every request.\n",
		cfg.attempts, cfg.depth, r.without[cfg.depth])
	fmt.Fprintf(w, "with NewBudget(%v, %d) at each service: %.3f per request over %d requests",
		cfg.ratio, cfg.reserve, r.With, cfg.requests)
	fmt.Fprintf(w, " (the first request, with full budgets: %d).\n", r.first[cfg.depth])
}
