package main

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// The limiter model: one client service sends requests that arrive at
// random (Poisson) to a qserver (workers, a FIFO queue, exponential
// service times, wasted work on requests whose client gave up), through a
// concurrency limiter shared by all its requests. Every request is one
// real retry.Do on the simulation's clock, attempts at most, each waiting
// timeout at most for its answer; every attempt holds a permit while in
// flight, and an attempt that finds none is refused at once (no wait).
//
// The strategies differ only by the limiter:
//
//	ours         retry.NewLimiter() with its defaults, through retry.WithLimiter
//	static-0.5x  a fixed limit of half the ideal concurrency (a retry.Limiter
//	             whose floor and ceiling are that limit)
//	static-2x    a fixed limit of twice the ideal
//	failsafe     failsafe-go's adaptivelimiter with its defaults, its permit
//	             taken and recorded (or dropped) around each attempt as its
//	             own executor does
//
// The ideal concurrency is capacity × no-load latency (Little's law): the
// workers, whatever their speed. failsafe-go's limiter reads time.Now and
// cannot be given a clock, so it runs only where time.Now is the
// simulation's: in a testing/synctest bubble, in this command's tests
// (limiter_failsafe_test.go); the command itself runs the other three.
//
// The scenarios:
//
//	overload-3x  requests arrive at 3× the capacity for a minute
//	step         at 1.5× the full capacity, the capacity steps 100 % → 50 % →
//	             100 % (the workers slow down to half speed), 30 s each
//	incident     at 0.8× the full capacity, a minute at full capacity, then
//	             ten minutes at 50 %, then 30 s back at full capacity

// limStrategy names a limiter of the model.
type limStrategy string

const (
	limOurs     limStrategy = "ours"
	limHalf     limStrategy = "static-0.5x"
	limDouble   limStrategy = "static-2x"
	limFailsafe limStrategy = "failsafe"
)

// limStrategies are the strategies the command runs, in the order of the
// report; failsafe runs in the tests only (see above).
var limStrategies = []limStrategy{limOurs, limHalf, limDouble}

// limScenario names a scenario of the model.
type limScenario string

const (
	limOverload limScenario = "overload-3x"
	limStep     limScenario = "step"
	limIncident limScenario = "incident"
)

var limScenarios = []limScenario{limOverload, limStep, limIncident}

// limConfig is the model's parameters.
type limConfig struct {
	workers  int
	service  time.Duration // mean, at full speed
	timeout  time.Duration // of each attempt
	attempts int           // per request, the first included
	seed     uint64

	strategies []limStrategy
	scenarios  []limScenario
}

// capacity returns the server's requests per second at full speed.
func (cfg *limConfig) capacity() float64 {
	return float64(cfg.workers) / cfg.service.Seconds()
}

// phase is a stretch of a scenario at one load and speed.
type phase struct {
	length time.Duration
	load   float64 // of the full capacity
	speed  float64 // of the workers
}

// phases returns sc's phases, and the span measured for goodput and
// latency: from, to.
func (sc limScenario) phases() (ps []phase, from, to time.Duration) {
	switch sc {
	case limOverload:
		return []phase{{time.Minute, 3, 1}}, 10 * time.Second, time.Minute
	case limStep:
		return []phase{{30 * time.Second, 1.5, 1}, {30 * time.Second, 1.5, 0.5}, {30 * time.Second, 1.5, 1}}, 0, 90 * time.Second
	case limIncident:
		return []phase{{time.Minute, 0.8, 1}, {10 * time.Minute, 0.8, 0.5}, {30 * time.Second, 0.8, 1}}, time.Minute, 11 * time.Minute
	}
	panic("retrysim: unknown limiter scenario " + string(sc))
}

// limResult is one row of `retrysim limiter -json`.
type limResult struct {
	Strategy   string  `json:"strategy"`
	Scenario   string  `json:"scenario"`
	GoodputPct float64 `json:"goodput_pct"` // successes per 100 requests the server could serve, over the measured span
	P99Ms      float64 `json:"p99_ms"`      // p99 latency of the requests that succeeded in the measured span
	// p99 latency of requests at 10 % load, no limiter, full speed.
	P99NoLoadMs float64 `json:"p99_noload_ms"`
	// step: the longest time after a step until the limit (its median over
	// each second) stays within 25 % of where it ends the phase; nil for
	// the other scenarios, or if it never does.
	SettleS *float64 `json:"settle_s"`
	// incident: the rise of the limit (its median over each second) over
	// the incident's last half, in percent of its mean there: the rise of
	// the least-squares line through it; nil otherwise.
	DriftPct *float64 `json:"drift_pct"`

	limits  []float64 // the limit's median over each second
	p99s    []float64 // p99 latency of the requests that succeeded in each second, in ms
	goodput []float64 // successes per second over capacity, in %
}

// errLimited is a failsafe limiter's refusal.
var errLimited = errors.New("limiter refused the attempt")

// Random streams of the limiter model.
const (
	streamLimArrivals = 11
	streamLimService  = 12
	streamLimJitter   = 13
)

// fsLimiter is what the model needs of failsafe-go's limiter, which only
// the tests import (see above).
type fsLimiter interface {
	// try takes a permit if one is free, and returns its release: record
	// (true) or drop (false).
	try() (func(record bool), bool)
	limit() int
}

// limRun simulates strategy st in scenario sc. fs is the failsafe limiter
// for st == limFailsafe, nil otherwise; pace, if set, is the sim's pace
// (see sim).
func limRun(cfg *limConfig, st limStrategy, sc limScenario, fs fsLimiter, pace func(time.Duration)) limResult {
	s := &sim{pace: pace}
	clock := simClock{s}
	q := newQServer(s, qserverConfig{workers: cfg.workers, service: cfg.service, src: pcg(cfg.seed, streamLimService)}, nil)
	arrivals := rand.New(pcg(cfg.seed, streamLimArrivals))
	sched := retry.Exponential(cfg.service).Cap(10 * cfg.service).FullJitter(pcg(cfg.seed, streamLimJitter)).Take(cfg.attempts - 1)
	var lim *retry.Limiter
	switch st {
	case limOurs:
		lim = retry.NewLimiter(retry.LimiterClock(clock))
	case limHalf, limDouble:
		n := cfg.workers / 2
		if st == limDouble {
			n = 2 * cfg.workers
		}
		n = max(n, 1)
		lim = retry.NewLimiter(retry.LimiterMin(n), retry.LimiterMax(n), retry.LimiterClock(clock))
	}
	limitNow := func() int {
		if fs != nil {
			return fs.limit()
		}
		return lim.Limit()
	}

	ps, from, to := sc.phases()
	var end time.Duration
	for _, p := range ps {
		end += p.length
	}
	phaseAt := func(t time.Duration) phase {
		for _, p := range ps {
			if t < p.length {
				return p
			}
			t -= p.length
		}
		return ps[len(ps)-1]
	}
	var at time.Duration
	for _, p := range ps {
		speed := p.speed
		s.at(at, func() { q.setSpeed(speed) })
		at += p.length
	}

	r := limResult{Strategy: string(st), Scenario: string(sc)}
	buckets := int(end / bucket)
	successes := make([]int, buckets+1)
	lats := make([][]time.Duration, buckets+1)
	samples := make([][]float64, buckets+1)
	const sampleEvery = 100 * time.Millisecond
	var sample func()
	sample = func() {
		if s.now >= end {
			return
		}
		k := int(s.now / bucket)
		samples[k] = append(samples[k], float64(limitNow()))
		s.at(s.now+sampleEvery, sample)
	}
	s.at(0, sample)

	ctx := context.Background()
	request := func(c *client) {
		start := c.sim.now
		opts := []retry.Option{retry.WithClock(c)}
		if lim != nil {
			opts = append(opts, retry.WithLimiter(lim))
		}
		err := retry.Do(ctx, sched, func(context.Context) error {
			var release func(bool)
			if fs != nil {
				var ok bool
				if release, ok = fs.try(); !ok {
					return retry.Permanent(errLimited)
				}
			}
			ans := q.call(c, qrequest{timeout: cfg.timeout})
			if release != nil {
				release(true) // failsafe's executor records every execution its caller did not cancel
			}
			switch ans {
			case qServed:
				return nil
			case qTimeout:
				return errAttemptTimeout
			default:
				return errRefused
			}
		}, opts...)
		if err == nil {
			k := int(c.sim.now / bucket)
			if k < len(successes) {
				successes[k]++
				lats[k] = append(lats[k], c.sim.now-start)
			}
		}
	}

	workers := &workerPool{s: s}
	s.spawn(0, func(c *client) {
		for {
			rate := phaseAt(c.sim.now).load * cfg.capacity()
			c.wait(time.Duration(float64(time.Second) / rate * arrivals.ExpFloat64()))
			if c.sim.now >= end {
				return
			}
			workers.start(request)
		}
	})
	s.run()
	workers.close()

	// Goodput and latency over the measured span, per second for charts.
	var ok, could float64
	var measured []time.Duration
	for k := range buckets {
		t := time.Duration(k) * bucket
		capK := cfg.capacity() * phaseAt(t).speed
		r.goodput = append(r.goodput, round(100*float64(successes[k])/capK, 2))
		r.p99s = append(r.p99s, round(ms(quantile(lats[k], 0.99)), 2))
		r.limits = append(r.limits, median(samples[k]))
		if t >= from && t < to {
			ok += float64(successes[k])
			could += capK
			measured = append(measured, lats[k]...)
		}
	}
	r.GoodputPct = round(100*ok/could, 2)
	r.P99Ms = round(ms(quantile(measured, 0.99)), 2)
	switch sc {
	case limStep:
		r.SettleS = settle(r.limits, []int{30, 60}, 30)
	case limIncident:
		r.DriftPct = drift(r.limits[360:660])
	}
	return r
}

// limNoLoad returns the p99 latency in ms of requests at 10 % of the
// capacity, with no limiter, at full speed: the no-load latency.
func limNoLoad(cfg *limConfig) float64 {
	s := &sim{}
	q := newQServer(s, qserverConfig{workers: cfg.workers, service: cfg.service, src: pcg(cfg.seed, streamLimService)}, nil)
	arrivals := rand.New(pcg(cfg.seed, streamLimArrivals))
	const span = time.Minute
	var lats []time.Duration
	workers := &workerPool{s: s}
	s.spawn(0, func(c *client) {
		for {
			c.wait(time.Duration(float64(time.Second) / (0.1 * cfg.capacity()) * arrivals.ExpFloat64()))
			if c.sim.now >= span {
				return
			}
			workers.start(func(c *client) {
				start := c.sim.now
				if q.call(c, qrequest{timeout: cfg.timeout}) == qServed {
					lats = append(lats, c.sim.now-start)
				}
			})
		}
	})
	s.run()
	workers.close()
	return round(ms(quantile(lats, 0.99)), 2)
}

// settle returns, over the steps at the seconds steps, each followed by a
// phase of length seconds, the longest time until the limit stays within
// 25 % of its mean over the last third of the phase; nil if it never does.
func settle(limits []float64, steps []int, length int) *float64 {
	worst := 0.0
	for _, st := range steps {
		end := min(st+length, len(limits))
		tail := limits[end-length/3 : end]
		var sum float64
		for _, x := range tail {
			sum += x
		}
		final := sum / float64(len(tail))
		k := end
		for k > st && math.Abs(limits[k-1]-final) <= 0.25*final {
			k--
		}
		if k == end {
			return nil
		}
		worst = max(worst, float64(k-st))
	}
	return ptr(worst)
}

// drift returns the rise of the limits over their span, in percent of
// their mean: the least-squares line's rise from the first to the last,
// less sensitive than two end points to the limit's noise.
func drift(limits []float64) *float64 {
	n := float64(len(limits))
	var sx, sy, sxx, sxy float64
	for i, y := range limits {
		x := float64(i)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	slope := (n*sxy - sx*sy) / (n*sxx - sx*sx)
	return ptr(round(100*slope*(n-1)/(sy/n), 2))
}

// quantile returns the q-quantile of ds (nearest rank); 0 if empty.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(int(math.Ceil(q*float64(len(s))))-1, len(s)-1)]
}

// median returns the median of xs; 0 if empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// limRuns runs every strategy of cfg in every scenario of cfg, each on its
// own goroutine (at most GOMAXPROCS at once), scenario by scenario in the
// order of cfg. done is called once per finished run.
func limRuns(cfg limConfig, done func()) []limResult {
	n := len(cfg.strategies)
	results := make([]limResult, len(cfg.scenarios)*n)
	noload := limNoLoad(&cfg)
	parallel(len(results), func(i int) {
		results[i] = limRun(&cfg, cfg.strategies[i%n], cfg.scenarios[i/n], nil, nil)
		results[i].P99NoLoadMs = noload
		done()
	})
	return results
}
