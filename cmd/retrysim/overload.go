package main

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// The overload model. A fleet of processes (clients of them) sends
// requests to one dependency: requests arrive at random (Poisson) at rate per second in
// all, each to a process chosen at random. Every request is one real
// retry.Do with the same jittered schedule; what differs between the
// strategies is what each process puts in front of the dependency: nothing,
// a retry.Budget, a retry.Throttle, a retry.Breaker, or a Budget and a
// Throttle, one of each per process (as a service keeps one per
// dependency), all reading the simulation's clock.
//
// The dependency serves capacity calls per second: a token bucket that
// holds at most burst of its rate (a server that absorbs that much work at
// once); a call that finds no token is refused at once (an overload error,
// a 503) and costs nothing. From warmup on, for outage, its capacity drops
// to outageFactor of that, then comes back. Every call, served or refused,
// takes latency to answer. Requests arrive until outage+after past the
// outage's start, and the run lasts until the last of them is done.
//
// The warm-up before the outage fills the windows of the throttles and the
// breakers with healthy traffic, as in a service that has been running for
// a while; by default it is as long as the Throttle's default window.

// overloadStrategy names what each process puts in front of the dependency.
type overloadStrategy string

const (
	ovNone           overloadStrategy = "none"
	ovBudget         overloadStrategy = "budget"
	ovThrottle       overloadStrategy = "throttle"
	ovBreaker        overloadStrategy = "breaker"
	ovBudgetThrottle overloadStrategy = "budget+throttle"
	ovBreakerBackoff overloadStrategy = "breaker+backoff" // the Breaker's default open periods
)

// overloadStrategies is the comparison, in the order of the report.
var overloadStrategies = []overloadStrategy{ovNone, ovBudget, ovThrottle, ovBreaker, ovBudgetThrottle}

// overloadExtra can be asked for with -strategies but is not in the
// default comparison, whose JSON rows are fixed.
var overloadExtra = []overloadStrategy{ovBreakerBackoff}

// bucket is the resolution of the goodput series and of recovery_s.
const bucket = time.Second

// fullGoodput is the share of the requests started in one bucket that must
// succeed for that bucket to count as fully recovered.
const fullGoodput = 0.99

// overloadConfig is the model's parameters.
type overloadConfig struct {
	clients      int           // processes in the fleet
	rate         float64       // requests per second, the whole fleet
	capacity     float64       // calls per second the healthy dependency serves
	outageFactor float64       // the share of capacity left during the outage
	warmup       time.Duration // healthy traffic before the outage
	outage       time.Duration
	after        time.Duration // requests keep arriving this long after the outage
	latency      time.Duration // of every call, served or refused
	burst        time.Duration // the token bucket holds this much of the capacity (at least one call)

	attempts int           // per request, the first included
	base     time.Duration // of the retry schedule
	limit    time.Duration // its cap

	budgetRatio   float64
	budgetReserve int
	throttleK     float64
	throttleWin   time.Duration
	breakerOpen   time.Duration // the breaker's fixed open period
	breakerWin    time.Duration

	seed       uint64
	strategies []overloadStrategy
}

// overloadResult is the outcome for one strategy; its exported fields are
// one element of the JSON document of `overload -json`. Goodput and
// rejections count the requests that started from the outage on.
type overloadResult struct {
	Strategy    string   `json:"strategy"`
	GoodputPct  float64  `json:"goodput_pct"`   // requests that succeeded, per 100
	OutageLoadX float64  `json:"outage_load_x"` // calls reaching the dependency during the outage, × its capacity then
	RecoveryS   *float64 `json:"recovery_s"`    // from the end of the outage to full goodput; nil: not within the run
	RejectedPct float64  `json:"rejected_pct"`  // requests refused locally, per 100

	calls     []int // calls reaching the dependency per bucket, from t=0
	served    []int // calls it served per bucket
	started   []int // requests started per bucket
	succeeded []int // of those, the ones that succeeded
}

var errUnavailable = errors.New("dependency over capacity (503)")

// overloadServer is the dependency: a token bucket whose rate drops during
// the outage, and the count of calls per bucket.
type overloadServer struct {
	cfg    *overloadConfig
	tokens float64
	last   time.Duration // when tokens was last refilled
	calls  []int
	served []int
	outage int // calls that arrived during the outage
}

// rateAt returns the dependency's capacity at time t, in calls per second.
func (cfg *overloadConfig) rateAt(t time.Duration) float64 {
	if t >= cfg.warmup && t < cfg.warmup+cfg.outage {
		return cfg.capacity * cfg.outageFactor
	}
	return cfg.capacity
}

// admit reports whether a call arriving at now is served. The bucket is
// refilled piecewise, so a refill that spans the outage's start or end
// uses each rate for its part.
func (d *overloadServer) admit(now time.Duration) bool {
	cfg := d.cfg
	for _, edge := range [...]time.Duration{cfg.warmup, cfg.warmup + cfg.outage, now} {
		if edge <= d.last || edge > now {
			continue
		}
		rate := cfg.rateAt(d.last)
		d.tokens = math.Min(d.tokens+rate*(edge-d.last).Seconds(), math.Max(rate*cfg.burst.Seconds(), 1))
		d.last = edge
	}
	// A burst bigger than the new rate allows is cut when the rate drops.
	d.tokens = math.Min(d.tokens, math.Max(cfg.rateAt(now)*cfg.burst.Seconds(), 1))
	k := int(now / bucket)
	d.calls = grow(d.calls, k)
	d.served = grow(d.served, k)
	d.calls[k]++
	if now >= cfg.warmup && now < cfg.warmup+cfg.outage {
		d.outage++
	}
	if d.tokens < 1 {
		return false
	}
	d.tokens--
	d.served[k]++
	return true
}

// grow extends s with zeros so that s[k] exists.
func grow(s []int, k int) []int {
	for len(s) <= k {
		s = append(s, 0)
	}
	return s
}

// runOverload simulates every strategy of cfg, each on its own goroutine (at
// most GOMAXPROCS at once), and returns the results in the order of
// cfg.strategies. done is called once per finished strategy.
func runOverload(cfg overloadConfig, done func()) []overloadResult {
	results := make([]overloadResult, len(cfg.strategies))
	parallel(len(results), func(i int) {
		results[i] = overloadOne(&cfg, cfg.strategies[i])
		done()
	})
	return results
}

// Random streams: every strategy draws the same arrivals from its own
// stream, so the strategies differ by what they do, not by luck.
const (
	streamOverloadArrivals = 1
	streamOverloadJitter   = 2
	// Process i's Throttle draws its rejections from stream
	// streamOverloadThrottles+i.
	streamOverloadThrottles = 1 << 32
)

// overloadOne simulates one strategy.
func overloadOne(cfg *overloadConfig, st overloadStrategy) overloadResult {
	s := &sim{}
	clock := simClock{s}
	arrivals := rand.New(pcg(cfg.seed, streamOverloadArrivals))
	sched := retry.Exponential(cfg.base).Cap(cfg.limit).FullJitter(pcg(cfg.seed, streamOverloadJitter)).Take(cfg.attempts - 1)
	procs := make([][]retry.Option, cfg.clients)
	for i := range procs {
		procs[i] = st.options(cfg, clock, pcg(cfg.seed, streamOverloadThrottles+uint64(i)))
	}
	dep := &overloadServer{cfg: cfg, tokens: math.Max(cfg.capacity*cfg.burst.Seconds(), 1)}
	r := overloadResult{Strategy: string(st)}
	var requests, successes, rejected int
	end := cfg.warmup + cfg.outage + cfg.after
	ctx := context.Background()

	request := func(c *client, proc []retry.Option) {
		start := c.sim.now
		opts := append(proc[:len(proc):len(proc)], retry.WithClock(c))
		err := retry.Do(ctx, sched, func(context.Context) error {
			ok := dep.admit(c.sim.now)
			c.wait(cfg.latency)
			if !ok {
				return errUnavailable
			}
			return nil
		}, opts...)
		k := int(start / bucket)
		r.started = grow(r.started, k)
		r.succeeded = grow(r.succeeded, k)
		r.started[k]++
		if err == nil {
			r.succeeded[k]++
		}
		if start < cfg.warmup {
			return
		}
		requests++
		switch {
		case err == nil:
			successes++
		case localRefusal(err):
			rejected++
		}
	}
	gap := float64(time.Second) / cfg.rate
	workers := &workerPool{s: s}
	s.spawn(0, func(c *client) {
		for {
			c.wait(time.Duration(arrivals.ExpFloat64() * gap))
			if c.sim.now >= end {
				return
			}
			proc := procs[arrivals.IntN(len(procs))]
			workers.start(func(c *client) { request(c, proc) })
		}
	})
	s.run()
	workers.close()

	r.calls, r.served = dep.calls, dep.served
	r.GoodputPct = round(100*float64(successes)/float64(max(requests, 1)), 2)
	r.RejectedPct = round(100*float64(rejected)/float64(max(requests, 1)), 2)
	r.OutageLoadX = round(float64(dep.outage)/(cfg.capacity*cfg.outageFactor*cfg.outage.Seconds()), 2)
	r.RecoveryS = recovery(cfg, r.started, r.succeeded)
	return r
}

// workerPool runs jobs on clients that it reuses: a client that has done
// its job parks until the pool gives it another. A new client's coroutine
// starts on a small stack that a retry.Do call grows, which cost more than
// the whole simulation of its request; a reused one keeps its stack.
type workerPool struct {
	s    *sim
	idle []*worker
}

type worker struct {
	c   *client
	job func(*client) // nil tells a resumed worker to return
}

// start runs job now on an idle worker, or on a new one.
func (p *workerPool) start(job func(*client)) {
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle = p.idle[:n-1]
		w.job = job
		p.s.resume(w.c)
		return
	}
	w := &worker{job: job}
	p.s.spawn(p.s.now, func(c *client) {
		w.c = c
		for w.job != nil {
			job := w.job
			w.job = nil
			job(c)
			p.idle = append(p.idle, w)
			c.park()
		}
	})
}

// close ends every worker once the simulation has run to the end, when all
// of them are idle, so that no coroutine is left behind.
func (p *workerPool) close() {
	for _, w := range p.idle {
		if _, ok := w.c.next(); ok {
			panic("retrysim: a worker went on after its pool closed")
		}
	}
	p.idle = nil
}

// recovery returns the time from the end of the outage to the start of the
// first bucket from which on every bucket of requests that started before
// the arrivals stopped has at least fullGoodput of them succeeding, in
// seconds; nil if the last such bucket does not. Only buckets that start
// at or after the end of the outage count.
func recovery(cfg *overloadConfig, started, succeeded []int) *float64 {
	from := int((cfg.warmup + cfg.outage + bucket - 1) / bucket)
	last := int((cfg.warmup+cfg.outage+cfg.after)/bucket) - 1
	first := -1
	for k := last; k >= from && k < len(started); k-- {
		if started[k] > 0 && float64(succeeded[k]) < fullGoodput*float64(started[k]) {
			break
		}
		first = k
	}
	if first < 0 {
		return nil
	}
	return ptr(round((time.Duration(first)*bucket - cfg.warmup - cfg.outage).Seconds(), 3))
}

// localRefusal reports whether err ended a request without the dependency's
// say: a budget, a throttle or a breaker refused it.
func localRefusal(err error) bool {
	return errors.Is(err, retry.ErrBudgetExhausted) || errors.Is(err, retry.ErrThrottled) || errors.Is(err, retry.ErrBreakerOpen) ||
		errors.Is(err, retry.ErrLimited)
}

// options returns the options of one process under st: its own Budget,
// Throttle or Breaker, reading clock; a Throttle draws from src.
func (st overloadStrategy) options(cfg *overloadConfig, clock retry.Clock, src rand.Source) []retry.Option {
	budget := func() retry.Option { return retry.WithBudget(retry.NewBudget(cfg.budgetRatio, cfg.budgetReserve)) }
	throttle := func() retry.Option {
		return retry.WithThrottle(retry.NewThrottle(retry.ThrottleK(cfg.throttleK), retry.ThrottleWindow(cfg.throttleWin),
			retry.ThrottleClock(clock), retry.ThrottleRand(src)))
	}
	switch st {
	case ovNone:
		return nil
	case ovBudget:
		return []retry.Option{budget()}
	case ovThrottle:
		return []retry.Option{throttle()}
	case ovBreaker:
		// A fixed open period; the Breaker's defaults for the ratio (0.5),
		// the minimum of outcomes (20) and the probes (1).
		return []retry.Option{retry.WithBreaker(retry.NewBreaker(retry.BreakerOpenPeriods(retry.Constant(cfg.breakerOpen)),
			retry.BreakerWindow(cfg.breakerWin), retry.BreakerClock(clock)))}
	case ovBudgetThrottle:
		return []retry.Option{budget(), throttle()}
	case ovBreakerBackoff:
		// The Breaker's default open periods, Constant(5s) since issue 28
		// (they were Exponential(5s).Cap(2m)).
		return []retry.Option{retry.WithBreaker(retry.NewBreaker(retry.BreakerWindow(cfg.breakerWin), retry.BreakerClock(clock)))}
	}
	panic("retrysim: unknown overload strategy " + string(st))
}

// simClock is the simulation's clock for what the processes share (a
// Throttle, a Breaker): it reads the simulated time. Only the clients
// themselves can wait, so Sleep panics.
type simClock struct{ s *sim }

func (c simClock) Now() time.Time { return epoch.Add(c.s.now) }

func (c simClock) Sleep(context.Context, time.Duration) error {
	panic("retrysim: a shared clock cannot sleep; only a client can")
}
