package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"golang.org/x/exp/stats"
)

// The hedging model of "The Tail at Scale" (Dean and Barroso, CACM 2013).
// Requests arrive at random (Poisson) and each fans out to fanout leaf
// requests, each sent to a server chosen at random in a pool; a request is
// done when its last leaf has answered. Every server is one worker with a
// first-come-first-served queue, so every copy sent costs queueing to the
// copies behind it. Service times are lognormal (median service, shape
// sigma), and every server now and then stops for a pause (a garbage
// collection, a compaction): pauses of length pause, starting at random on
// average every pauseEvery per server. A pause freezes the server: the copy
// in service and the queue wait it out.
//
// A strategy hedges a leaf by sending a second copy to another server when
// the first has not answered after the hedge delay, which it reads from a
// real retry.Schedule: the first delay of Constant(d).Take(1), of
// Constant(0).Take(1) for duplicate, or of an adaptive schedule. The first
// answer wins; the client then sends a cancel to the other copy's server.
// A cancel that finds its copy still queued removes it, so that it costs
// nothing; a copy already in service runs to the end, as a handler that does
// not poll its context would, and its work is wasted. Every message (copy,
// answer, cancel) takes net to cross the network.
//
// The budget strategy spends a real retry.Budget the way retry.Hedge does:
// every leaf deposits into it, and a hedge is sent only if it can withdraw a
// token. A Budget can only be used through Retry, Do or Hedge, so each leaf
// makes one retry.Do call against it when its fate is known (see settle).

// hedgeStrategy names one way of hedging the leaves.
type hedgeStrategy string

const (
	hedgeNone           hedgeStrategy = "none"            // never hedge
	hedgeFixed          hedgeStrategy = "fixed"           // Constant(delay).Take(1)
	hedgeAdaptive       hedgeStrategy = "adaptive"        // the observed p95, through retry.Latency
	hedgeAdaptiveBudget hedgeStrategy = "adaptive+budget" // adaptive, with a retry.Budget
	hedgeDuplicate      hedgeStrategy = "duplicate"       // Constant(0).Take(1): two copies at once
)

// hedgeStrategies is the comparison, in the order of the report.
var hedgeStrategies = []hedgeStrategy{hedgeNone, hedgeFixed, hedgeAdaptive, hedgeAdaptiveBudget, hedgeDuplicate}

// hedgeConfig is the model's parameters.
type hedgeConfig struct {
	requests      int           // fan-out requests per load and strategy
	fanout        int           // leaves per request
	servers       int           // servers in the pool
	loads         []float64     // utilization of the servers by first copies alone
	service       time.Duration // median service time of a leaf
	sigma         float64       // shape of the lognormal service time
	pause         time.Duration // length of a pause
	pauseEvery    time.Duration // mean time between pauses of one server
	net           time.Duration // one-way network delay
	delay         time.Duration // the fixed strategy's hedge delay
	quantile      float64       // the adaptive strategies' quantile
	budgetRatio   float64
	budgetReserve int
	seed          uint64
	strategies    []hedgeStrategy
}

// meanService returns the mean of the lognormal service time.
func (cfg *hedgeConfig) meanService() time.Duration {
	return time.Duration(float64(cfg.service) * math.Exp(cfg.sigma*cfg.sigma/2))
}

// rate returns the requests per second that make the first copies use
// load of the servers' capacity.
func (cfg *hedgeConfig) rate(load float64) float64 {
	return load * float64(cfg.servers) / (float64(cfg.fanout) * cfg.meanService().Seconds())
}

// hedgeResult is the outcome for one load and strategy; its exported fields
// are one element of the JSON document of `hedge -json`. Latencies are of
// whole fan-out requests, from arrival to the last leaf's answer.
type hedgeResult struct {
	Load       float64  `json:"load"`
	Strategy   string   `json:"strategy"`
	P50        float64  `json:"p50_ms"`
	P99        float64  `json:"p99_ms"`
	P999       float64  `json:"p999_ms"`
	ExtraLoad  float64  `json:"extra_load_pct"`     // hedges sent, per 100 leaves
	WastedWork float64  `json:"wasted_work_pct"`    // service spent on losers, per 100 of winners'
	Refused    float64  `json:"refused_pct"`        // hedges the budget refused, per 100 leaves
	Delay      *float64 `json:"delay_p50_ms"`       // median hedge delay of the requests; nil: never hedged
	BusyPct    float64  `json:"busy_pct"`           // share of the servers' time spent serving
	Pause      *float64 `json:"pause_ms,omitempty"` // the pause length, in a -sweep-pause run only
}

// runHedge simulates every load and strategy of cfg, each on its own
// goroutine (at most GOMAXPROCS at once), and returns the results in the
// order loads, then strategies. done is called once per finished
// simulation, from any goroutine.
func runHedge(cfg hedgeConfig, done func()) []hedgeResult {
	n := len(cfg.strategies)
	results := make([]hedgeResult, len(cfg.loads)*n)
	parallel(len(results), func(i int) {
		results[i] = hedgeOne(&cfg, cfg.loads[i/n], cfg.strategies[i%n])
		done()
	})
	return results
}

// Random streams. Every strategy and load draws the same request times,
// first copies and pauses from its own streams, so the strategies differ only
// by what they do, not by luck.
const (
	streamArrivals = 1 // request times, the first copies' servers and service times
	streamHedges   = 2 // the hedges' servers and service times
	streamPauses   = 3 // when the servers pause
)

// hedgeOne simulates one strategy at one load.
func hedgeOne(cfg *hedgeConfig, load float64, st hedgeStrategy) hedgeResult {
	sched, budget, lat := hedgeSchedule(cfg, st)
	r := simulateHedge(cfg, load, sched, budget, lat)
	r.Strategy = string(st)
	return r
}

// simulateHedge simulates hedging with the delays of sched (nil: never
// hedge), spending budget if it is not nil and recording in lat, if it is
// not nil, the latency of every winning copy and the running time of every
// losing one, as retry.WithLatency does in Hedge.
func simulateHedge(cfg *hedgeConfig, load float64, sched retry.Schedule, budget *retry.Budget, lat recorder) hedgeResult {
	h := newHedgeSim(cfg, load, sched, budget, lat)
	h.events.push(heapRare, 0, evArrival, 0, 0)
	h.run()
	return h.result(load)
}

// newHedgeSim returns a simulation with idle servers, whose pauses are
// scheduled, and no request yet.
func newHedgeSim(cfg *hedgeConfig, load float64, sched retry.Schedule, budget *retry.Budget, lat recorder) *hedgeSim {
	h := &hedgeSim{
		cfg:      cfg,
		arrivals: rand.New(pcg(cfg.seed, streamArrivals)),
		hedges:   rand.New(pcg(cfg.seed, streamHedges)),
		pauses:   rand.New(pcg(cfg.seed, streamPauses)),
		gap:      time.Duration(float64(time.Second) / cfg.rate(load)),
		sched:    sched,
		budget:   budget,
		lat:      lat,
		servers:  make([]hedgeServer, cfg.servers),
		perm:     make([]int32, cfg.servers),
		latency:  make([]float64, 0, cfg.requests),
	}
	for i := range h.servers {
		h.servers[i].current = -1
		h.perm[i] = int32(i)
		if cfg.pauseEvery > 0 {
			h.events.push(heapRare, h.expo(h.pauses, cfg.pauseEvery), evPauseStart, int32(i), 0)
		}
	}
	return h
}

// result summarizes a finished simulation.
func (h *hedgeSim) result(load float64) hedgeResult {
	r := hedgeResult{Load: load}
	slices.Sort(h.latency)
	q := stats.Quantiles(h.latency, 0.5, 0.99, 0.999)
	r.P50, r.P99, r.P999 = round(q[0], 2), round(q[1], 2), round(q[2], 2)
	leaves := float64(h.cfg.requests) * float64(h.cfg.fanout)
	r.ExtraLoad = round(100*float64(h.hedgesSent)/leaves, 2)
	r.Refused = round(100*float64(h.refused)/leaves, 2)
	r.WastedWork = round(100*float64(h.wasted)/float64(h.useful), 2)
	if len(h.delays) > 0 {
		slices.Sort(h.delays)
		r.Delay = ptr(round(stats.Quantiles(h.delays, 0.5)[0], 3))
	}
	r.BusyPct = round(100*float64(h.useful+h.wasted)/(float64(h.now)*float64(h.cfg.servers)), 1)
	return r
}

// hedgeSchedule returns the schedule of hedge delays of st (nil: never
// hedge), its Budget (nil: none) and the latency tracker the schedule reads
// (nil: none).
func hedgeSchedule(cfg *hedgeConfig, st hedgeStrategy) (retry.Schedule, *retry.Budget, recorder) {
	switch st {
	case hedgeNone:
		return nil, nil, nil
	case hedgeFixed:
		return retry.Constant(cfg.delay).Take(1), nil, nil
	case hedgeDuplicate:
		return retry.Constant(0).Take(1), nil, nil
	case hedgeAdaptive, hedgeAdaptiveBudget:
		// Until the tracker has 100 observations (the first request's
		// leaves), Quantile yields the largest Duration and Cap sets the
		// delay: the first request is not hedged.
		lat := retry.NewLatency()
		s := lat.Quantile(cfg.quantile).Cap(time.Second).Take(1)
		if st == hedgeAdaptiveBudget {
			return s, retry.NewBudget(cfg.budgetRatio, cfg.budgetReserve), lat
		}
		return s, nil, lat
	}
	panic("retrysim: unknown hedge strategy " + string(st))
}
