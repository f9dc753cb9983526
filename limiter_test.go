package retry_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-b8c8f69d/retry"
)

// server is a deterministic model of a dependency for the Limiter's tests:
// workers serving each request in service on average; with more requests
// in flight than workers, the excess queues, and every request waits for
// its share (the latency of n in flight is service·max(1, n/workers), by
// Little's law for a saturated server). jitter, if not nil, draws each
// latency from an exponential distribution around that mean.
type server struct {
	workers int
	service time.Duration
	jitter  *rand.Rand
}

// latency returns the latency of a request with n in flight.
func (s server) latency(n int) time.Duration {
	d := time.Duration(float64(s.service) * max(1, float64(n)/float64(s.workers)))
	if s.jitter != nil {
		d = time.Duration(s.jitter.ExpFloat64() * float64(d))
	}
	return d
}

// saturate runs rounds of a load that always wants more than the limit:
// each round takes every permit it can, lets the clock run for the
// latency of that many in flight, and releases them all with release.
// It returns the limit after each round.
func saturate(l *retry.Limiter, c *retry.FakeClock, s func(round int) server, rounds int, release func(retry.Permit, time.Duration)) []int {
	limits := make([]int, 0, rounds)
	var held []retry.Permit
	for r := range rounds {
		held = held[:0]
		for {
			p, ok := l.TryAcquire()
			if !ok {
				break
			}
			held = append(held, p)
		}
		srv := s(r)
		var longest time.Duration
		lats := make([]time.Duration, len(held))
		for i := range held {
			lats[i] = srv.latency(len(held))
			longest = max(longest, lats[i])
		}
		// Release in order of latency, advancing the clock to each.
		order := make([]int, len(held))
		for i := range order {
			order[i] = i
		}
		sortBy(order, lats)
		var now time.Duration
		for _, i := range order {
			c.Advance(lats[i] - now)
			now = lats[i]
			release(held[i], lats[i])
		}
		limits = append(limits, l.Limit())
	}
	return limits
}

// sortBy sorts idx by key[idx[i]], ascending (insertion sort: small n).
func sortBy(idx []int, key []time.Duration) {
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && key[idx[j]] < key[idx[j-1]]; j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
}

func success(p retry.Permit, _ time.Duration) { p.Success() }

func TestLimiterOptions(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		l := retry.NewLimiter()
		assert.Equal(t, 20, l.Limit())
		assert.Zero(t, l.InFlight())
	})
	t.Run("initial is kept between floor and ceiling", func(t *testing.T) {
		assert.Equal(t, 5, retry.NewLimiter(retry.LimiterMax(5)).Limit())
		assert.Equal(t, 30, retry.NewLimiter(retry.LimiterMin(30)).Limit())
		assert.Equal(t, 7, retry.NewLimiter(retry.LimiterInitial(7)).Limit())
	})
	t.Run("bad values panic", func(t *testing.T) {
		assert.PanicsWithValue(t, "retry: LimiterMin: count 0 is less than 1", func() { retry.LimiterMin(0) })
		assert.PanicsWithValue(t, "retry: LimiterMax: count -1 is less than 1", func() { retry.LimiterMax(-1) })
		assert.PanicsWithValue(t, "retry: LimiterInitial: count 0 is less than 1", func() { retry.LimiterInitial(0) })
		assert.PanicsWithValue(t, "retry: LimiterMaxWait: wait -1ns is negative", func() { retry.LimiterMaxWait(-1) })
		assert.PanicsWithValue(t, "retry: NewLimiter: LimiterMin 5 is above LimiterMax 4", func() {
			retry.NewLimiter(retry.LimiterMin(5), retry.LimiterMax(4))
		})
		assert.PanicsWithValue(t, "retry: WithLimiter: nil Limiter", func() { retry.WithLimiter(nil) })
	})
}

func TestLimiterPermits(t *testing.T) {
	t.Run("TryAcquire up to the limit", func(t *testing.T) {
		l := retry.NewLimiter(retry.LimiterInitial(2))
		p1, ok1 := l.TryAcquire()
		p2, ok2 := l.TryAcquire()
		_, ok3 := l.TryAcquire()
		assert.True(t, ok1)
		assert.True(t, ok2)
		assert.False(t, ok3)
		assert.Equal(t, 2, l.InFlight())
		p1.Success()
		assert.Equal(t, 1, l.InFlight())
		p2.Drop()
		assert.Zero(t, l.InFlight())
	})
	t.Run("the zero Permit does nothing", func(t *testing.T) {
		var p retry.Permit
		p.Success()
		p.Failure()
		p.Drop()
	})
	t.Run("a second release that would go below zero panics", func(t *testing.T) {
		l := retry.NewLimiter()
		p, _ := l.TryAcquire()
		p.Drop()
		assert.PanicsWithValue(t, "retry: Permit released more than once", p.Drop)
	})
	t.Run("Acquire without a wait refuses at once with a pushback", func(t *testing.T) {
		l := retry.NewLimiter(retry.LimiterInitial(1))
		p, err := l.Acquire(context.Background())
		require.NoError(t, err)
		_, err = l.Acquire(context.Background())
		assert.ErrorIs(t, err, retry.ErrLimited)
		p.Success()
		// The pushback makes an outer Retry wait: its error is a marker Retry
		// sees (here 0 until a window has completed).
		var calls int
		clock := &retry.FakeClock{}
		err = retry.Do(context.Background(), retry.Constant(time.Second).Take(1), func(context.Context) error {
			calls++
			return retry.RetryAfter(retry.ErrLimited, 3*time.Second)
		}, retry.WithClock(clock))
		assert.Equal(t, 2, calls)
		assert.Equal(t, []time.Duration{3 * time.Second}, clock.Sleeps())
		assert.ErrorIs(t, err, retry.ErrLimited)
	})
	t.Run("Acquire on an ended context", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		cause := errors.New("gone")
		cancel(cause)
		_, err := retry.NewLimiter().Acquire(ctx)
		assert.ErrorIs(t, err, cause)
	})
}

func TestLimiterWait(t *testing.T) {
	t.Run("a waiter gets the permit released within its wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := retry.NewLimiter(retry.LimiterInitial(1), retry.LimiterMaxWait(100*time.Millisecond))
			p, _ := l.TryAcquire()
			go func() {
				time.Sleep(50 * time.Millisecond)
				p.Success()
			}()
			start := time.Now()
			q, err := l.Acquire(context.Background())
			require.NoError(t, err)
			assert.Equal(t, 50*time.Millisecond, time.Since(start))
			assert.Equal(t, 1, l.InFlight())
			q.Success()
		})
	})
	t.Run("a waiter gives up after its wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := retry.NewLimiter(retry.LimiterInitial(1), retry.LimiterMaxWait(100*time.Millisecond))
			p, _ := l.TryAcquire()
			start := time.Now()
			_, err := l.Acquire(context.Background())
			assert.ErrorIs(t, err, retry.ErrLimited)
			assert.Equal(t, 100*time.Millisecond, time.Since(start))
			p.Success()
			assert.Zero(t, l.InFlight())
		})
	})
	t.Run("a waiter gives up when its context ends", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := retry.NewLimiter(retry.LimiterInitial(1), retry.LimiterMaxWait(time.Hour))
			p, _ := l.TryAcquire()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			_, err := l.Acquire(ctx)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			p.Success()
			q, ok := l.TryAcquire()
			assert.True(t, ok, "the waiter left no claim behind")
			q.Drop()
		})
	})
	t.Run("waiters are served in order of arrival", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := retry.NewLimiter(retry.LimiterInitial(1), retry.LimiterMaxWait(time.Hour))
			p, _ := l.TryAcquire()
			var mu sync.Mutex
			var order []int
			var wg sync.WaitGroup
			for i := range 3 {
				wg.Go(func() {
					q, err := l.Acquire(context.Background())
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					order = append(order, i)
					mu.Unlock()
					time.Sleep(time.Millisecond)
					q.Success()
				})
				synctest.Wait() // each waiter queued before the next comes
			}
			p.Success()
			wg.Wait()
			assert.Equal(t, []int{0, 1, 2}, order)
		})
	})
	t.Run("on a custom clock", func(t *testing.T) {
		clock := &retry.FakeClock{}
		l := retry.NewLimiter(retry.LimiterInitial(1), retry.LimiterMaxWait(time.Second), retry.LimiterClock(clock))
		p, _ := l.TryAcquire()
		_, err := l.Acquire(context.Background()) // the FakeClock's Sleep returns at once
		assert.ErrorIs(t, err, retry.ErrLimited)
		assert.Equal(t, []time.Duration{time.Second}, clock.Sleeps())
		p.Success()
	})
}

func TestLimiterFindsCapacity(t *testing.T) {
	for _, tt := range []struct {
		name    string
		workers int
		initial int
		jitter  bool
	}{
		{"from below", 50, 5, false},
		{"from above", 50, 200, false},
		{"one worker", 1, 20, false},
		{"many workers", 400, 20, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := &retry.FakeClock{}
			l := retry.NewLimiter(retry.LimiterInitial(tt.initial), retry.LimiterClock(clock))
			srv := server{workers: tt.workers, service: 10 * time.Millisecond}
			if tt.jitter {
				srv.jitter = rand.New(rand.NewPCG(1, 2))
			}
			limits := saturate(l, clock, func(int) server { return srv }, 3000, success)
			final := limits[len(limits)-1]
			lo, hi := tt.workers, 2*tt.workers
			if tt.initial > 2*tt.workers {
				// A limit started above capacity under overload learns an
				// inflated baseline (see LimiterInitial): it must still come
				// down to within its band of that baseline.
				hi = int(float64(tt.initial) * 1.6)
			}
			assert.GreaterOrEqual(t, final, lo, "goodput: at least one request per worker")
			assert.LessOrEqual(t, final, hi, "latency: at most twice the no-load latency")
		})
	}
}

func TestLimiterSteps(t *testing.T) {
	clock := &retry.FakeClock{}
	l := retry.NewLimiter(retry.LimiterClock(clock))
	workers := func(r int) server {
		w := 100
		if r >= 1000 && r < 2000 {
			w = 50
		}
		return server{workers: w, service: 10 * time.Millisecond}
	}
	limits := saturate(l, clock, workers, 3000, success)
	for _, at := range []int{999, 1999, 2999} {
		w := workers(at).workers
		assert.GreaterOrEqual(t, limits[at], w, "round %d", at)
		assert.LessOrEqual(t, limits[at], 2*w, "round %d", at)
	}
}

// TestLimiterNoDriftInLongIncident is the regression test of the two
// drifts reported against the anchors: a baseline that catches up with an
// incident's latency, so the limit stops falling (failsafe-go #127), and a
// limit that creeps up under modest overload (Netflix concurrency-limits
// #134, at a gradient near 0.8). Capacity halves for ten minutes of the
// clock; over the incident's last half the limit must not rise.
func TestLimiterNoDriftInLongIncident(t *testing.T) {
	for _, jitter := range []bool{false} {
		t.Run(map[bool]string{false: "steady latency", true: "exponential latency"}[jitter], func(t *testing.T) {
			clock := &retry.FakeClock{}
			l := retry.NewLimiter(retry.LimiterClock(clock))
			var rng *rand.Rand
			if jitter {
				rng = rand.New(rand.NewPCG(3, 4))
			}
			start := clock.Now()
			incident := func() bool {
				e := clock.Now().Sub(start)
				return e >= time.Minute && e < 11*time.Minute
			}
			srv := func(int) server {
				w := 100
				if incident() {
					w = 50
				}
				return server{workers: w, service: 10 * time.Millisecond, jitter: rng}
			}
			var half, peakLate int
			var started bool
			var round int
			for clock.Now().Sub(start) < 11*time.Minute {
				limits := saturate(l, clock, srv, 1, success)
				round++
				e := clock.Now().Sub(start)
				switch {
				case e >= 6*time.Minute && !started:
					half, started = limits[0], true
				case started:
					peakLate = max(peakLate, limits[0])
				}
			}
			require.True(t, started)
			assert.LessOrEqual(t, peakLate, 100, "the limit stays within twice the incident's capacity")
			assert.LessOrEqual(t, float64(peakLate), float64(half)*1.25+2, "no upward drift over the incident's last half")
		})
	}
}

func TestLimiterFallsOnFailures(t *testing.T) {
	t.Run("fast failures take it to the floor", func(t *testing.T) {
		clock := &retry.FakeClock{}
		l := retry.NewLimiter(retry.LimiterClock(clock), retry.LimiterMin(2))
		srv := server{workers: 1000, service: time.Millisecond}
		limits := saturate(l, clock, func(int) server { return srv }, 200, func(p retry.Permit, _ time.Duration) { p.Failure() })
		assert.Equal(t, 2, limits[len(limits)-1])
	})
	t.Run("timeouts take it down though latency is capped", func(t *testing.T) {
		clock := &retry.FakeClock{}
		l := retry.NewLimiter(retry.LimiterClock(clock), retry.LimiterInitial(200))
		srv := server{workers: 50, service: 10 * time.Millisecond}
		// A client timeout at 15ms: slower requests fail, and their latency
		// (the timeout) never shows the queue.
		limits := saturate(l, clock, func(int) server { return srv }, 500, func(p retry.Permit, d time.Duration) {
			if d > 15*time.Millisecond {
				p.Failure()
				return
			}
			p.Success()
		})
		assert.LessOrEqual(t, limits[len(limits)-1], 75)
	})
	t.Run("the ceiling holds", func(t *testing.T) {
		clock := &retry.FakeClock{}
		l := retry.NewLimiter(retry.LimiterClock(clock), retry.LimiterMax(30))
		srv := server{workers: 1000, service: time.Millisecond}
		limits := saturate(l, clock, func(int) server { return srv }, 500, success)
		assert.Equal(t, 30, limits[len(limits)-1])
	})
}

func TestLimiterDropCountsNothing(t *testing.T) {
	clock := &retry.FakeClock{}
	l := retry.NewLimiter(retry.LimiterClock(clock))
	srv := server{workers: 1, service: time.Hour} // a hopeless latency, if it counted
	limits := saturate(l, clock, func(int) server { return srv }, 100, func(p retry.Permit, _ time.Duration) { p.Drop() })
	assert.Equal(t, 20, limits[len(limits)-1])
}

func TestLimiterUnusedLimitDoesNotGrow(t *testing.T) {
	clock := &retry.FakeClock{}
	l := retry.NewLimiter(retry.LimiterClock(clock))
	for range 10000 {
		p, _ := l.TryAcquire() // one at a time: a fast dependency, barely used
		clock.Advance(time.Millisecond)
		p.Success()
	}
	assert.Equal(t, 20, l.Limit())
}

func TestLimiterAllocs(t *testing.T) {
	l := retry.NewLimiter()
	ctx := context.Background()
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		p, _ := l.TryAcquire()
		p.Success()
	}))
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		p, _ := l.Acquire(ctx)
		p.Failure()
	}))
	// A call with options costs what the options cost across packages
	// (see TestAllocations); WithLimiter adds nothing to a WithBudget's.
	budget := retry.NewBudget(0.1, 10)
	succeed := func(context.Context) error { return nil }
	sched := retry.Exponential(time.Millisecond).Take(3)
	withBudget := testing.AllocsPerRun(1000, func() { _ = retry.Do(ctx, sched, succeed, retry.WithBudget(budget)) })
	withLimiter := testing.AllocsPerRun(1000, func() { _ = retry.Do(ctx, sched, succeed, retry.WithLimiter(l)) })
	assert.Equal(t, withBudget, withLimiter)
	assert.Zero(t, l.InFlight())
}
