package main

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// erlangC returns the mean queue length Lq and the mean wait in the queue
// Wq (in seconds) of an M/M/c queue with arrival rate lambda and service
// rate mu per worker: Erlang's C formula.
func erlangC(lambda, mu float64, c int) (lq, wq float64) {
	a := lambda / mu
	rho := a / float64(c)
	sum, term := 0.0, 1.0 // term = a^k / k!
	for k := range c {
		if k > 0 {
			term *= a / float64(k)
		}
		sum += term
	}
	last := term * a / float64(c) / (1 - rho) // a^c / (c! (1-ρ))
	p := last / (sum + last)                  // the probability of waiting
	lq = p * rho / (1 - rho)
	return lq, lq / lambda
}

// poisson makes requests arrive at q at rate per second from 0 until
// until, as events (no client waits for them), drawing from src.
func poisson(s *sim, q *qserver, rate float64, until time.Duration, src rand.Source) {
	r := rand.New(src)
	gap := float64(time.Second) / rate
	var arrive func()
	arrive = func() {
		if s.now >= until {
			return
		}
		q.submit(&qjob{attempt: 1})
		s.at(s.now+time.Duration(r.ExpFloat64()*gap), arrive)
	}
	s.at(time.Duration(r.ExpFloat64()*gap), arrive)
}

// TestQServerQueueingFormulas checks the queue against the formulas of
// queueing theory: Erlang C for M/M/c, Pollaczek-Khinchine for M/D/1.
// Each run serves about a million requests after a warm-up, which puts the
// statistical error of the means near 1% (about 2% for M/M/4 at 90%): the
// tolerance, 4%, is about twice that, and the seeds are fixed, so the test
// cannot flake. It takes seconds, so it is skipped under the race detector
// (the queue runs on one goroutine: the detector has nothing to find) and
// with -short; the tests of call below cover the same code under both.
func TestQServerQueueingFormulas(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("4 million requests: too slow under -race or -short")
	}
	cases := []struct {
		name    string
		workers int
		dist    qdist
		rho     float64
	}{
		{"M/M/1 at 80%", 1, qExp, 0.8},
		{"M/M/4 at 90%", 4, qExp, 0.9},
		{"M/M/10 at 70%", 10, qExp, 0.7},
		{"M/D/1 at 80%", 1, qConst, 0.8},
	}
	const n = 1_000_000.0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const service = 100 * time.Millisecond
			mu := 1 / service.Seconds()
			s := &sim{}
			q := newQServer(s, qserverConfig{workers: tc.workers, service: service, dist: tc.dist, src: pcg(7, 1)}, nil)
			lambda := tc.rho * q.cfg.capacity()
			warmup := time.Duration(2000 / lambda * float64(time.Second))
			until := warmup + time.Duration(n/lambda*float64(time.Second))
			poisson(s, q, lambda, until, pcg(7, 2))
			s.at(warmup, q.startStats)
			var lq, wq float64
			s.at(until, func() {
				q.changeQueue(func() {})
				st := &q.stats
				lq = st.queueInt / (until - warmup).Seconds()
				wq = st.waitSum.Seconds() / float64(st.started)
			})
			s.run()

			wantLq, wantWq := erlangC(lambda, mu, tc.workers)
			if tc.dist == qConst {
				// M/D/1: half the M/M/1 queue.
				wantLq = tc.rho * tc.rho / (2 * (1 - tc.rho))
				wantWq = wantLq / lambda
			}
			t.Logf("Lq %.4f (formula %.4f), Wq %.5fs (formula %.5fs)", lq, wantLq, wq, wantWq)
			if math.Abs(lq/wantLq-1) > 0.04 {
				t.Errorf("mean queue length %.4f, formula %.4f: off by %.1f%%", lq, wantLq, 100*(lq/wantLq-1))
			}
			if math.Abs(wq/wantWq-1) > 0.04 {
				t.Errorf("mean wait %.5fs, formula %.5fs: off by %.1f%%", wq, wantWq, 100*(wq/wantWq-1))
			}
			if q.stats.refused+q.stats.dropped+q.stats.wasted != 0 {
				t.Errorf("refused %d, dropped %d, wasted %d; want none", q.stats.refused, q.stats.dropped, q.stats.wasted)
			}
		})
	}
}

// callAt spawns a client that calls q at time at with r and records its
// answer and the time it got it.
func callAt(s *sim, q *qserver, at time.Duration, r qrequest, got *qanswer, when *time.Duration) {
	s.spawn(at, func(c *client) {
		*got = q.call(c, r)
		*when = s.now
	})
}

func TestQServerCall(t *testing.T) {
	const svc = 100 * time.Millisecond
	newConst := func(s *sim, workers int, policy qpolicy, mod func(*qserverConfig)) *qserver {
		cfg := qserverConfig{workers: workers, service: svc, dist: qConst, src: pcg(1, 1)}
		if mod != nil {
			mod(&cfg)
		}
		return newQServer(s, cfg, policy)
	}
	t.Run("FIFO", func(t *testing.T) {
		s := &sim{}
		q := newConst(s, 1, nil, nil)
		var a [3]qanswer
		var w [3]time.Duration
		for i := range 3 {
			callAt(s, q, 0, qrequest{attempt: 1}, &a[i], &w[i])
		}
		s.run()
		for i := range 3 {
			if a[i] != qServed || w[i] != time.Duration(i+1)*svc {
				t.Errorf("call %d: %v at %v, want served at %v", i, a[i], w[i], time.Duration(i+1)*svc)
			}
		}
	})
	t.Run("LIFO", func(t *testing.T) {
		s := &sim{}
		q := newConst(s, 1, nil, func(c *qserverConfig) { c.lifo = true })
		var a [3]qanswer
		var w [3]time.Duration
		for i := range 3 {
			callAt(s, q, 0, qrequest{attempt: 1}, &a[i], &w[i])
		}
		s.run()
		// The first starts at once; then the newest is served first.
		want := [3]time.Duration{svc, 3 * svc, 2 * svc}
		if w != want {
			t.Errorf("answered at %v, want %v", w, want)
		}
	})
	t.Run("timeout wastes work", func(t *testing.T) {
		s := &sim{}
		q := newConst(s, 1, nil, nil)
		var a [3]qanswer
		var w [3]time.Duration
		for i := range 3 {
			callAt(s, q, 0, qrequest{attempt: 1, timeout: 150 * time.Millisecond}, &a[i], &w[i])
		}
		var backlog time.Duration
		s.at(150*time.Millisecond, func() { backlog = q.backlog() })
		s.run()
		if a[0] != qServed || w[0] != svc {
			t.Errorf("first call: %v at %v, want served at %v", a[0], w[0], svc)
		}
		for i := 1; i < 3; i++ {
			if a[i] != qTimeout || w[i] != 150*time.Millisecond {
				t.Errorf("call %d: %v at %v, want timeout at 150ms", i, a[i], w[i])
			}
		}
		// The server served the two abandoned requests all the same.
		if st := q.stats; st.served != 1 || st.wasted != 2 || st.waste != 2*svc || st.busy != 3*svc {
			t.Errorf("served %d, wasted %d (%v), busy %v; want 1, 2 (200ms), 300ms", st.served, st.wasted, st.waste, st.busy)
		}
		// At 150ms: 50ms left of the second, all of the third.
		if backlog != 150*time.Millisecond {
			t.Errorf("backlog at 150ms = %v, want 150ms", backlog)
		}
	})
	t.Run("queue limit and refusal cost", func(t *testing.T) {
		s := &sim{}
		q := newConst(s, 1, nil, func(c *qserverConfig) { c.queueLimit = 1; c.refusalCost = 0.5 })
		var a [3]qanswer
		var w [3]time.Duration
		for i := range 3 {
			callAt(s, q, 0, qrequest{attempt: 1}, &a[i], &w[i])
		}
		s.run()
		// The third is refused at once; its refusal (50ms) is done
		// before the queued second request.
		if a[2] != qRefused || w[2] != 0 {
			t.Errorf("third call: %v at %v, want refused at 0", a[2], w[2])
		}
		if a[1] != qServed || w[1] != 2*svc+svc/2 {
			t.Errorf("second call: %v at %v, want served at 250ms", a[1], w[1])
		}
		if st := q.stats; st.refused != 1 || st.refWork != svc/2 {
			t.Errorf("refused %d, refusal work %v; want 1, 50ms", st.refused, st.refWork)
		}
	})
	t.Run("policy sheds retries and old requests", func(t *testing.T) {
		s := &sim{}
		q := newConst(s, 1, testPolicy{}, nil)
		var a [4]qanswer
		var w [4]time.Duration
		callAt(s, q, 0, qrequest{attempt: 1}, &a[0], &w[0])
		callAt(s, q, 0, qrequest{attempt: 2}, &a[1], &w[1]) // a retry while the server is busy: refused
		callAt(s, q, 0, qrequest{attempt: 1}, &a[2], &w[2]) // queued 100ms by the time a worker takes it: dropped
		callAt(s, q, 50*time.Millisecond, qrequest{attempt: 1}, &a[3], &w[3])
		s.run()
		want := [4]qanswer{qServed, qRefused, qRefused, qServed}
		wantW := [4]time.Duration{svc, 0, svc, 2 * svc}
		if a != want || w != wantW {
			t.Errorf("answers %v at %v, want %v at %v", a, w, want, wantW)
		}
		if st := q.stats; st.refused != 1 || st.dropped != 1 {
			t.Errorf("refused %d, dropped %d; want 1, 1", st.refused, st.dropped)
		}
	})
	t.Run("policy reads the queue and sets a pushback", func(t *testing.T) {
		s := &sim{}
		p := &lengthPolicy{limit: 2}
		q := newConst(s, 1, p, nil)
		var a [4]qanswer
		var w [4]time.Duration
		var refused *qjob
		for i := range 3 {
			callAt(s, q, 0, qrequest{attempt: 1}, &a[i], &w[i])
		}
		s.spawn(0, func(c *client) { refused = q.callJob(c, qrequest{attempt: 1}) })
		s.run()
		// One in service, two queued: the fourth is refused with a
		// pushback of the queue's length in service times.
		if refused == nil || refused.answer != qRefused || refused.pushback != 2*svc {
			t.Errorf("fourth request: %+v, want refused with a pushback of 200ms", refused)
		}
		if p.oldest != 1 || p.newest != 2 {
			t.Errorf("at the refusal the policy saw attempts %d (oldest) and %d (newest), want the 2nd and 3rd calls", p.oldest, p.newest)
		}
	})
	t.Run("speed", func(t *testing.T) {
		s := &sim{}
		q := newConst(s, 2, nil, nil)
		q.setSpeed(0.5)
		var a [2]qanswer
		var w [2]time.Duration
		callAt(s, q, 0, qrequest{attempt: 1}, &a[0], &w[0])
		s.at(time.Millisecond, func() { q.setSpeed(1) })
		callAt(s, q, time.Millisecond, qrequest{attempt: 1}, &a[1], &w[1])
		s.run()
		if w[0] != 2*svc || w[1] != time.Millisecond+svc {
			t.Errorf("answered at %v, want [200ms 101ms]", w)
		}
	})
	t.Run("series", func(t *testing.T) {
		s := &sim{}
		q := newConst(s, 1, nil, nil)
		var a [20]qanswer
		var w [20]time.Duration
		for i := range 20 {
			callAt(s, q, 0, qrequest{attempt: 1}, &a[i], &w[i])
		}
		s.run()
		st := q.stats
		if len(st.servedPer) != 3 || st.servedPer[0] != 9 || st.servedPer[1] != 10 || st.servedPer[2] != 1 {
			t.Errorf("served per second %v, want [9 10 1]", st.servedPer)
		}
		// The queue holds 19, 18, …: over the first second 19+…+10 tenths.
		if got := st.queuePer[0]; math.Abs(got-14.5) > 1e-9 {
			t.Errorf("queue integral over the first second %v, want 14.5", got)
		}
	})
}

// testPolicy refuses retries while every worker is busy and drops a
// request that waited 100ms or more.
type testPolicy struct{ qFIFO }

func (testPolicy) admit(q *qserver, j *qjob) bool {
	return j.attempt <= 1 || q.idle() > 0
}

func (testPolicy) serve(q *qserver, j *qjob) bool {
	return q.now()-j.arrived < 100*time.Millisecond
}

// lengthPolicy refuses a request when limit requests are queued, asking
// its client to wait out the queue, and records which calls were at the
// queue's ends then (numbered by arrival, from 0).
type lengthPolicy struct {
	qFIFO
	limit          int
	arrivals       map[*qjob]int
	oldest, newest int
}

func (p *lengthPolicy) admit(q *qserver, j *qjob) bool {
	if p.arrivals == nil {
		p.arrivals = map[*qjob]int{}
	}
	p.arrivals[j] = len(p.arrivals)
	if q.queueLen() < p.limit {
		return true
	}
	p.oldest, p.newest = p.arrivals[q.oldest()], p.arrivals[q.newest()]
	j.pushback = time.Duration(q.queueLen()) * q.cfg.service
	return false
}

func TestQServerConfigPanics(t *testing.T) {
	for name, cfg := range map[string]qserverConfig{
		"no workers":  {service: time.Second, src: pcg(1, 1)},
		"no service":  {workers: 1, src: pcg(1, 1)},
		"bad limit":   {workers: 1, service: time.Second, queueLimit: -1, src: pcg(1, 1)},
		"bad refusal": {workers: 1, service: time.Second, refusalCost: 2, src: pcg(1, 1)},
		"NaN refusal": {workers: 1, service: time.Second, refusalCost: math.NaN(), src: pcg(1, 1)},
		"no source":   {workers: 1, service: time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			newQServer(&sim{}, cfg, nil)
		})
	}
}
