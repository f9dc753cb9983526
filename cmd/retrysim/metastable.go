package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// The metastable model: a retry storm that keeps a server down after its
// trigger is gone. A qserver (workers, a queue, exponential service times,
// wasted work on requests whose client gave up) serves requests that
// arrive at random (Poisson; evenly spaced with -arrivals constant) at a
// base load, a fraction of its capacity, each sent by one of a fleet of
// processes. Every request is one real retry.Do on the simulation's clock;
// each attempt waits for its answer at most the client's timeout, then
// fails (retry's AttemptTimeout runs on the real clock, so the attempt
// function carries the timeout: it parks the client until the answer or
// the timeout, whichever comes first). What differs between the
// strategies is the schedule and what each process puts in front of the
// server: one Budget, Throttle or Breaker per process, on simulated time.
//
// After warmup of base load, the trigger: the load goes up factor times
// (a spike) or the capacity down factor times (a dip) for trigger, then
// back. Requests arrive until after past the trigger's end; the run lasts
// until the server has worked off everything.

// msStrategy names what the clients of the metastable model do.
type msStrategy string

const (
	msNaive       msStrategy = "naive"       // Constant(0): retry at once, attempts at most
	msJitter      msStrategy = "jitter"      // Exponential(base).Cap(cap).FullJitter
	msBudget      msStrategy = "budget"      // jitter, and a Budget per process
	msThrottle    msStrategy = "throttle"    // jitter, and a Throttle per process
	msBreaker     msStrategy = "breaker"     // jitter, and a Breaker per process
	msRecommended msStrategy = "recommended" // the README's default for a new service: see recommendedOptions
	msLimiter     msStrategy = "limiter"     // jitter, and a Limiter per process
)

// The candidates for the recommended policy that it was chosen against
// (docs/METASTABLE.md): not in the default comparison, whose JSON rows are
// fixed; -strategies names them.
const (
	msBudgetThrottle msStrategy = "budget+throttle" // jitter, a Budget and a Throttle
	msBudgetBreaker  msStrategy = "budget+breaker"  // jitter, a Budget and a Breaker with the flags' window
)

// msStrategies is the comparison, in the order of the report.
var msStrategies = []msStrategy{msNaive, msJitter, msBudget, msThrottle, msBreaker, msRecommended, msServer, msServerRecommended, msLimiter}

// msExtra can be asked for with -strategies.
var msExtra = []msStrategy{msBudgetThrottle, msBudgetBreaker}

// msConfig is the model's parameters.
type msConfig struct {
	// The server.
	workers     int
	service     time.Duration // mean
	dist        qdist
	lifo        bool
	queueLimit  int
	refusalCost float64

	// The load and the trigger.
	load     float64 // base load, a fraction of the capacity
	constant bool    // evenly spaced arrivals instead of Poisson ones
	clients  int     // processes in the fleet
	warmup   time.Duration
	trigger  time.Duration
	after    time.Duration
	dip      bool    // the trigger divides the capacity instead of multiplying the load
	factor   float64 // of the trigger, > 1

	// The clients.
	timeout       time.Duration // of each attempt
	attempts      int           // per request, the first included
	base, limit   time.Duration // of the jittered schedule
	budgetRatio   float64
	budgetReserve int
	throttleK     float64       // 0: the library's default
	throttleWin   time.Duration // 0: the library's default
	breakerWin    time.Duration // 0: the library's default
	breakerOpen   time.Duration // the first open period, doubling up to 2m; 0: the library's default

	// The shedding server of the server strategies (retryserver's options).
	shedTarget, shedInterval time.Duration
	shedQueueLimit           int

	seed       uint64
	strategies []msStrategy
}

// capacity returns the server's requests per second at full speed.
func (cfg *msConfig) capacity() float64 {
	return float64(cfg.workers) / cfg.service.Seconds()
}

// The windows of the verdicts: goodput is judged over goodWindow of
// requests (by the second they started in); a run is stuck if every such
// window in the stuckFor after the trigger has goodput below stuckBelow;
// it has recovered from the start of the first window from which on every
// window reaches recoveredAt.
const (
	goodWindow  = 5 // buckets
	stuckFor    = 60 * time.Second
	stuckBelow  = 0.10
	recoveredAt = 0.95
)

// msResult is the outcome of one strategy at one base load; its exported
// fields are one row of `metastable -json`.
type msResult struct {
	Strategy string  `json:"strategy"`
	BaseLoad float64 `json:"base_load"` // a fraction of the capacity
	Stuck    bool    `json:"stuck"`     // goodput below 10% in every 5s window of the 60s after the trigger
	// From the end of the trigger to the start of the 5s window from which
	// on every window's goodput is 95% or more; nil: not within the run.
	RecoveryS *float64 `json:"recovery_s"`
	// From the end of the trigger to the start of the first 5s window whose
	// goodput is 95% or more, whatever follows; nil: none within the run.
	FirstGoodS *float64 `json:"first_good_s"`
	// The work standing at the server when the trigger ends, over its
	// workers: how long it needs to work it off with nothing arriving.
	DrainS           float64 `json:"drain_s"`
	GoodputBeforePct float64 `json:"goodput_before_pct"` // requests started in the second half of the warm-up that succeeded, per 100
	GoodputAfterPct  float64 `json:"goodput_after_pct"`  // requests started after the trigger that succeeded, per 100
	// Attempts reaching the server per request started after the trigger.
	AttemptsPerRequest float64 `json:"attempts_per_request"`
	RejectedPct        float64 `json:"rejected_pct"` // requests started after the trigger that a budget, throttle, breaker or limiter ended, per 100
	WastedPct          float64 `json:"wasted_pct"`   // of the server's work from the trigger on, the share spent on requests whose client had given up
	// Requests served to a client still waiting per second during the
	// trigger, per 100 of the server's capacity (at full speed).
	TriggerGoodputCapPct float64 `json:"trigger_goodput_cap_pct"`

	started   []int     // requests started per bucket
	succeeded []int     // of those, the ones that succeeded
	sent      []int     // attempts reaching the server per bucket
	queue     []float64 // mean queue length per bucket
}

var (
	errAttemptTimeout = errors.New("attempt timed out")
	errRefused        = errors.New("server refused the request (503)")
)

// Random streams of the metastable model: every strategy draws the same
// arrivals and the same processes, so the strategies differ by what they
// do, not by luck.
const (
	streamMsArrivals = 1
	streamMsService  = 2
	streamMsJitter   = 3
	// Process i's Throttle draws from stream streamMsThrottles+i.
	streamMsThrottles = 1 << 32
)

// msRun simulates one strategy at cfg.load.
func msRun(cfg *msConfig, st msStrategy) msResult {
	s := &sim{}
	clock := simClock{s}
	q := newQServer(s, qserverConfig{
		workers: cfg.workers, service: cfg.service, dist: cfg.dist, lifo: cfg.lifo,
		queueLimit: cfg.queueLimit, refusalCost: cfg.refusalCost, src: pcg(cfg.seed, streamMsService),
	}, st.serverPolicy(cfg))
	arrivals := rand.New(pcg(cfg.seed, streamMsArrivals))
	sched := retry.Constant(0).Take(cfg.attempts - 1)
	if !st.naiveSchedule() {
		sched = retry.Exponential(cfg.base).Cap(cfg.limit).FullJitter(pcg(cfg.seed, streamMsJitter)).Take(cfg.attempts - 1)
	}
	procs := make([][]retry.Option, cfg.clients)
	for i := range procs {
		procs[i] = st.options(cfg, clock, pcg(cfg.seed, streamMsThrottles+uint64(i)))
	}

	trigEnd := cfg.warmup + cfg.trigger
	end := trigEnd + cfg.after
	r := msResult{Strategy: string(st), BaseLoad: cfg.load}
	var before, beforeOK, after, afterOK, afterAttempts, rejected int
	ctx := context.Background()
	request := func(c *client, proc []retry.Option) {
		start := c.sim.now
		n := 0
		opts := append(proc[:len(proc):len(proc)], retry.WithClock(c))
		err := retry.Do(ctx, sched, func(context.Context) error {
			n++
			switch j := q.callJob(c, qrequest{attempt: n, timeout: cfg.timeout}); j.answer {
			case qServed:
				return nil
			case qTimeout:
				return errAttemptTimeout
			default:
				return refusedError(j)
			}
		}, opts...)
		r.started = bump(r.started, start)
		if err == nil {
			r.succeeded = bump(r.succeeded, start)
		}
		switch {
		case start >= trigEnd:
			after++
			afterAttempts += n
			if err == nil {
				afterOK++
			} else if localRefusal(err) {
				rejected++
			}
		case start >= cfg.warmup/2 && start < cfg.warmup:
			before++
			if err == nil {
				beforeOK++
			}
		}
	}

	// The trigger.
	rate := func(t time.Duration) float64 {
		x := cfg.load * cfg.capacity()
		if !cfg.dip && t >= cfg.warmup && t < trigEnd {
			x *= cfg.factor
		}
		return x
	}
	if cfg.dip {
		s.at(cfg.warmup, func() { q.setSpeed(1 / cfg.factor) })
		s.at(trigEnd, func() { q.setSpeed(1) })
	}
	var busyAtTrigger, wasteAtTrigger time.Duration
	s.at(cfg.warmup, func() { busyAtTrigger, wasteAtTrigger = q.stats.busy, q.stats.waste })
	s.at(trigEnd, func() { r.DrainS = round(q.backlog().Seconds()/float64(cfg.workers), 2) })

	workers := &workerPool{s: s}
	s.spawn(0, func(c *client) {
		for {
			gap := float64(time.Second) / rate(c.sim.now)
			if !cfg.constant {
				gap *= arrivals.ExpFloat64()
			}
			c.wait(time.Duration(gap))
			if c.sim.now >= end {
				return
			}
			proc := procs[arrivals.IntN(len(procs))]
			workers.start(func(c *client) { request(c, proc) })
		}
	})
	s.run()
	workers.close()

	r.sent = q.stats.arrivedPer
	r.queue = q.stats.queuePer
	r.started = grow(r.started, int(end/bucket))
	r.succeeded = grow(r.succeeded, len(r.started)-1)
	pct := func(a, b int) float64 { return round(100*float64(a)/float64(max(b, 1)), 2) }
	r.GoodputBeforePct = pct(beforeOK, before)
	r.GoodputAfterPct = pct(afterOK, after)
	r.RejectedPct = pct(rejected, after)
	r.AttemptsPerRequest = round(float64(afterAttempts)/float64(max(after, 1)), 2)
	if busy := q.stats.busy - busyAtTrigger; busy > 0 {
		r.WastedPct = round(100*float64(q.stats.waste-wasteAtTrigger)/float64(busy), 2)
	}
	r.TriggerGoodputCapPct = cfg.triggerGoodput(q.stats.servedPer)
	r.Stuck, r.RecoveryS = cfg.verdict(r.started, r.succeeded)
	r.FirstGoodS = cfg.firstGood(r.started, r.succeeded)
	return r
}

// verdict judges the goodput after the trigger: stuck, and the time to
// recover (nil if not within the run). See msResult.
func (cfg *msConfig) verdict(started, succeeded []int) (stuck bool, recovery *float64) {
	trigEnd := cfg.warmup + cfg.trigger
	from := int((trigEnd + bucket - 1) / bucket) // the first bucket wholly after the trigger
	last := int((trigEnd+cfg.after)/bucket) - goodWindow
	good := func(k int) float64 {
		n, ok := window(started, succeeded, k)
		if n == 0 {
			return 1
		}
		return float64(ok) / float64(n)
	}
	stuck = true
	for k := from; k <= from+int(stuckFor/bucket)-goodWindow && k <= last; k++ {
		if good(k) >= stuckBelow {
			stuck = false
			break
		}
	}
	first := -1
	for k := last; k >= from; k-- {
		if good(k) < recoveredAt {
			break
		}
		first = k
	}
	if first >= 0 {
		recovery = ptr(round((time.Duration(first)*bucket - trigEnd).Seconds(), 3))
	}
	return stuck, recovery
}

// firstGood returns the time from the end of the trigger to the start of
// the first window of goodWindow buckets, wholly after it, whose goodput
// reaches recoveredAt; nil if there is none within the run. Unlike
// verdict's recovery, a later window that falls short does not push it
// back: it says when the stuck state ended, not whether noise follows.
func (cfg *msConfig) firstGood(started, succeeded []int) *float64 {
	trigEnd := cfg.warmup + cfg.trigger
	from := int((trigEnd + bucket - 1) / bucket)
	last := int((trigEnd+cfg.after)/bucket) - goodWindow
	for k := from; k <= last && k+goodWindow <= len(started); k++ {
		if n, ok := window(started, succeeded, k); n == 0 || float64(ok) >= recoveredAt*float64(n) {
			return ptr(round((time.Duration(k)*bucket - trigEnd).Seconds(), 3))
		}
	}
	return nil
}

// triggerGoodput returns the requests served to a waiting client per
// second over the whole seconds of the trigger, per 100 of the capacity.
func (cfg *msConfig) triggerGoodput(servedPer []int) float64 {
	from := int((cfg.warmup + bucket - 1) / bucket)
	to := int((cfg.warmup + cfg.trigger) / bucket) // exclusive
	var n int
	for k := from; k < to && k < len(servedPer); k++ {
		n += servedPer[k]
	}
	if to <= from {
		return 0
	}
	perSecond := float64(n) / (time.Duration(to-from) * bucket).Seconds()
	return round(100*perSecond/cfg.capacity(), 2)
}

// window returns the requests started in the goodWindow buckets from k,
// and how many of them succeeded.
func window(started, succeeded []int, k int) (n, ok int) {
	for j := k; j < k+goodWindow; j++ {
		n += started[j]
		ok += succeeded[j]
	}
	return n, ok
}

// options returns the options of one process under st: its own Budget,
// Throttle or Breaker with the library's defaults, reading clock; a
// Throttle draws from src.
func (st msStrategy) options(cfg *msConfig, clock retry.Clock, src rand.Source) []retry.Option {
	switch st {
	case msNaive, msJitter, msServer:
		return nil
	case msBudget:
		return []retry.Option{retry.WithBudget(retry.NewBudget(cfg.budgetRatio, cfg.budgetReserve))}
	case msThrottle:
		return []retry.Option{cfg.throttle(clock, src)}
	case msBreaker:
		return []retry.Option{cfg.breaker(clock)}
	case msRecommended, msServerRecommended:
		return recommendedOptions(clock)
	case msBudgetThrottle:
		return []retry.Option{retry.WithBudget(retry.NewBudget(cfg.budgetRatio, cfg.budgetReserve)), cfg.throttle(clock, src)}
	case msBudgetBreaker:
		return []retry.Option{retry.WithBudget(retry.NewBudget(cfg.budgetRatio, cfg.budgetReserve)), cfg.breaker(clock)}
	case msLimiter:
		return []retry.Option{retry.WithLimiter(retry.NewLimiter(retry.LimiterClock(clock)))}
	}
	panic("retrysim: unknown metastable strategy " + string(st))
}

// throttle returns a process's Throttle: the library's defaults but for
// the flags given.
func (cfg *msConfig) throttle(clock retry.Clock, src rand.Source) retry.Option {
	opts := []retry.ThrottleOption{retry.ThrottleClock(clock), retry.ThrottleRand(src)}
	if cfg.throttleK > 0 {
		opts = append(opts, retry.ThrottleK(cfg.throttleK))
	}
	if cfg.throttleWin > 0 {
		opts = append(opts, retry.ThrottleWindow(cfg.throttleWin))
	}
	return retry.WithThrottle(retry.NewThrottle(opts...))
}

// breaker returns a process's Breaker: the library's defaults but for the
// flags given.
func (cfg *msConfig) breaker(clock retry.Clock) retry.Option {
	opts := []retry.BreakerOption{retry.BreakerClock(clock)}
	if cfg.breakerWin > 0 {
		opts = append(opts, retry.BreakerWindow(cfg.breakerWin))
	}
	if cfg.breakerOpen > 0 {
		opts = append(opts, retry.BreakerOpenPeriods(retry.Exponential(cfg.breakerOpen).Cap(2*time.Minute)))
	}
	return retry.WithBreaker(retry.NewBreaker(opts...))
}

// recommendedWindow is the Breaker window of the recommended policy. The
// sweeps recorded in docs/METASTABLE.md chose it when the library's
// default was a minute, too slow to let a drowning server drain: 10s came
// back within 1.5 × the drain bound + 2s up to 90% load. The default is 5s
// since; the recommended policy still names 10s (see "How the recommended
// policy was chosen" there).
const recommendedWindow = 10 * time.Second

// recommendedOptions is the policy the README names as the default for a
// new service, on top of the jittered schedule: NewBudget(0.1, 10) and
// NewBreaker(BreakerWindow(10*time.Second)) per process, whatever the
// flags say, as docs/METASTABLE.md chose them.
func recommendedOptions(clock retry.Clock) []retry.Option {
	return []retry.Option{
		retry.WithBudget(retry.NewBudget(0.1, 10)),
		retry.WithBreaker(retry.NewBreaker(retry.BreakerWindow(recommendedWindow), retry.BreakerClock(clock))),
	}
}

// msRuns simulates every strategy of cfg at every load of loads, each on
// its own goroutine (at most GOMAXPROCS at once), and returns the results
// load by load, in the order of cfg.strategies. done is called once per
// finished run.
func msRuns(cfg msConfig, loads []float64, done func()) []msResult {
	n := len(cfg.strategies)
	results := make([]msResult, len(loads)*n)
	parallel(len(results), func(i int) {
		c := cfg
		c.load = loads[i/n]
		results[i] = msRun(&c, cfg.strategies[i%n])
		done()
	})
	return results
}
