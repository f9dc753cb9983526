package main

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"golang.org/x/exp/stats"
)

// The thundering-herd model. clients callers all make their first call at
// t=0, when the dependency is down; it stays down for outage, then serves at
// most capacity calls in each time slice of length slice and fails the rest
// (first come, first served). Every client runs one real retry.Do with the
// strategy's schedule, limited to attempts calls by Take, until it succeeds
// or gives up. full+budget shares one real retry.Budget among all clients.

// herdConfig is the model's parameters.
type herdConfig struct {
	clients       int
	outage        time.Duration
	slice         time.Duration
	capacity      int
	base          time.Duration
	limit         time.Duration // the cap
	every         time.Duration // the delay of the constant strategy
	attempts      int
	budgetRatio   float64
	budgetReserve int
	seed          uint64
	strategies    []strategy
}

// herdStrategies is the default comparison, in the order of the report.
var herdStrategies = []strategy{constant, exponential, full, equal, decorrelated, smooth, fullBudget}

// herdResult is the outcome for one strategy; its exported fields are the
// JSON document of `herd -json`. The times to success are nil when no client
// succeeded.
type herdResult struct {
	Strategy string   `json:"strategy"`
	Calls    int      `json:"calls"`
	Peak     int      `json:"peak"`
	P50      *float64 `json:"p50_ms"`
	P99      *float64 `json:"p99_ms"`
	Max      *float64 `json:"max_ms"`
	GaveUp   float64  `json:"gave_up"`

	series []int // calls in each slice, from t=0
}

var (
	errDown       = errors.New("dependency down")
	errOverloaded = errors.New("dependency over capacity")
)

// herdServer is the dependency: it counts the calls in each slice and admits
// up to capacity of them once the outage is over.
type herdServer struct {
	cfg    *herdConfig
	calls  []int // per slice
	served []int // per slice
}

func (h *herdServer) call(now time.Duration) error {
	k := int(now / h.cfg.slice)
	for len(h.calls) <= k {
		h.calls = append(h.calls, 0)
		h.served = append(h.served, 0)
	}
	h.calls[k]++
	switch {
	case now < h.cfg.outage:
		return errDown
	case h.served[k] >= h.cfg.capacity:
		return errOverloaded
	}
	h.served[k]++
	return nil
}

// runHerd simulates every strategy of cfg, each on its own goroutine (at most
// GOMAXPROCS at once) with its own seeded source, and returns the results in
// the order of cfg.strategies. done is called once per client that finished,
// from any of those goroutines.
func runHerd(cfg herdConfig, done func()) []herdResult {
	results := make([]herdResult, len(cfg.strategies))
	parallel(len(results), func(i int) { results[i] = herdOne(&cfg, cfg.strategies[i], done) })
	return results
}

// herdOne simulates one strategy, with the random sequence of its id.
func herdOne(cfg *herdConfig, st strategy, done func()) herdResult {
	base := cfg.base
	if st == constant {
		base = cfg.every
	}
	sched := st.schedule(base, cfg.limit, pcg(cfg.seed, st.id())).Take(cfg.attempts - 1)
	var budget *retry.Budget
	if st == fullBudget {
		budget = retry.NewBudget(cfg.budgetRatio, cfg.budgetReserve)
	}
	srv := &herdServer{cfg: cfg}
	s := &sim{}
	ctx := context.Background()
	success := make([]float64, 0, cfg.clients) // ms from start to success
	gaveUp := 0
	for range cfg.clients {
		s.spawn(0, func(c *client) {
			opts := []retry.Option{retry.WithClock(c)}
			if budget != nil {
				opts = append(opts, retry.WithBudget(budget))
			}
			err := retry.Do(ctx, sched, func(context.Context) error { return srv.call(c.sim.now) }, opts...)
			done()
			if err != nil {
				gaveUp++
				return
			}
			success = append(success, ms(c.sim.now))
		})
	}
	s.run()

	r := herdResult{Strategy: string(st), series: srv.calls}
	for k, n := range srv.calls {
		r.Calls += n
		if time.Duration(k)*cfg.slice >= cfg.outage {
			r.Peak = max(r.Peak, n)
		}
	}
	r.GaveUp = round(float64(gaveUp)/float64(cfg.clients), 4)
	if len(success) > 0 {
		slices.Sort(success)
		q := stats.Quantiles(success, 0.5, 0.99, 1)
		r.P50, r.P99, r.Max = ptr(round(q[0], 1)), ptr(round(q[1], 1)), ptr(round(q[2], 1))
	}
	return r
}

// ms converts d to milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// round rounds x to the given number of decimals, so that JSON output and
// golden files stay short and stable.
func round(x float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(x*p) / p
}

func ptr[T any](v T) *T { return &v }
