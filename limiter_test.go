package retry_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-b8c8f69d/retry"
)

// queue is a model of a dependency for the Limiter's tests: workers (a
// number that may change with the time) serving requests first come, first
// served, each for a service time drawn by service, with a queue in front
// of them. Driven by a load that always wants more than the limit, it is
// the case a Limiter exists for: everything it lets through either finds a
// worker or waits in the queue.
type queue struct {
	workers func(now time.Duration) int
	service func() time.Duration
	// release ends a permit; the default is Success.
	release func(p retry.Permit, latency time.Duration)

	now     time.Duration
	busy    []job // sorted by finish
	waiting []job
}

type job struct {
	p              retry.Permit
	arrive, finish time.Duration
}

// fixed returns a service time of d, always.
func fixed(d time.Duration) func() time.Duration { return func() time.Duration { return d } }

// exponential returns service times drawn from an exponential
// distribution of mean d, seeded.
func exponential(d time.Duration, seed uint64) func() time.Duration {
	r := rand.New(rand.NewPCG(seed, seed+1))
	return func() time.Duration { return time.Duration(r.ExpFloat64() * float64(d)) }
}

// run drives l for d on clock, taking every permit it can, and calls
// sample with the time, the limit and the latency after each completion.
func (q *queue) run(l *retry.Limiter, clock *retry.FakeClock, d time.Duration, sample func(now time.Duration, limit int, latency time.Duration)) {
	end := q.now + d
	for q.now < end {
		for {
			p, ok := l.TryAcquire()
			if !ok {
				break
			}
			q.waiting = append(q.waiting, job{p: p, arrive: q.now})
		}
		q.start()
		if len(q.busy) == 0 {
			clock.Advance(time.Millisecond) // nothing let through: time passes
			q.now += time.Millisecond
			continue
		}
		j := q.busy[0]
		q.busy = q.busy[1:]
		clock.Advance(j.finish - q.now)
		q.now = j.finish
		if q.release != nil {
			q.release(j.p, j.finish-j.arrive)
		} else {
			j.p.Success()
		}
		if sample != nil {
			sample(q.now, l.Limit(), j.finish-j.arrive)
		}
	}
}

// start starts waiting jobs on free workers.
func (q *queue) start() {
	for len(q.waiting) > 0 && len(q.busy) < q.workers(q.now) {
		j := q.waiting[0]
		q.waiting = q.waiting[1:]
		j.finish = q.now + q.service()
		i := sort.Search(len(q.busy), func(i int) bool { return q.busy[i].finish > j.finish })
		q.busy = slices.Insert(q.busy, i, j)
	}
}

// constant returns a number of workers that never changes.
func constant(n int) func(time.Duration) int { return func(time.Duration) int { return n } }

// skipUnderRace skips a simulation under the race detector (see
// raceDetector).
func skipUnderRace(t *testing.T) {
	if raceDetector {
		t.Skip("a single-goroutine simulation of millions of events: minutes under -race, and nothing to race")
	}
}

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

type limitSample struct {
	at      time.Duration
	limit   int
	latency time.Duration
}

func record(samples *[]limitSample) func(time.Duration, int, time.Duration) {
	return func(at time.Duration, limit int, latency time.Duration) {
		*samples = append(*samples, limitSample{at, limit, latency})
	}
}

// served returns the goodput from from to to, as a share of capacity
// (workers per service time), and the mean latency of the requests served.
func served(samples []limitSample, from, to time.Duration, workers int, service time.Duration) (goodput float64, latency time.Duration) {
	var n int
	var sum time.Duration
	for _, x := range samples {
		if x.at >= from && x.at < to {
			n, sum = n+1, sum+x.latency
		}
	}
	capacity := float64(workers) * (to - from).Seconds() / service.Seconds()
	return float64(n) / capacity, sum / time.Duration(max(n, 1))
}

// TestLimiterFindsCapacity checks the two sides of the ideal limit, on a
// load that always wants more than it: the dependency serves at least 95 %
// of its capacity (a limit too low leaves workers idle), and the latency
// of what it serves stays within twice its service time (a limit too high
// queues).
func TestLimiterFindsCapacity(t *testing.T) {
	skipUnderRace(t)
	const S = 10 * time.Millisecond
	for _, tt := range []struct {
		name    string
		workers int
		initial int
		service func() time.Duration
	}{
		{"from below", 50, 5, fixed(S)},
		{"from above", 50, 60, fixed(S)},
		{"one worker", 1, 20, fixed(S)},
		{"many workers", 200, 20, fixed(S)},
		{"exponential service", 50, 20, exponential(S, 1)},
		{"exponential service, few workers", 4, 20, exponential(S, 5)},
		{"exponential service, many workers", 200, 20, exponential(S, 2)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := &retry.FakeClock{}
			l := retry.NewLimiter(retry.LimiterInitial(tt.initial), retry.LimiterClock(clock))
			q := &queue{workers: constant(tt.workers), service: tt.service}
			var samples []limitSample
			q.run(l, clock, 40*time.Second, record(&samples))
			goodput, latency := served(samples, 5*time.Second, 40*time.Second, tt.workers, S)
			assert.GreaterOrEqual(t, goodput, 0.95, "goodput")
			assert.LessOrEqual(t, latency, 2*S, "latency")
		})
	}
}

// TestLimiterSteps halves the workers, then restores them: within 5 s of
// each step, the dependency serves 95 % of its capacity at no more than
// twice its service time.
func TestLimiterSteps(t *testing.T) {
	skipUnderRace(t)
	const S = 10 * time.Millisecond
	for _, tt := range []struct {
		name    string
		service func() time.Duration
	}{
		{"fixed service", fixed(S)},
		{"exponential service", exponential(S, 3)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := &retry.FakeClock{}
			l := retry.NewLimiter(retry.LimiterClock(clock))
			workers := func(now time.Duration) int {
				if now >= 30*time.Second && now < time.Minute {
					return 20
				}
				return 40
			}
			q := &queue{workers: workers, service: tt.service}
			var samples []limitSample
			q.run(l, clock, 90*time.Second, record(&samples))
			for _, step := range []time.Duration{0, 30 * time.Second, time.Minute} {
				goodput, latency := served(samples, step+5*time.Second, step+30*time.Second, workers(step), S)
				assert.GreaterOrEqual(t, goodput, 0.95, "goodput after the step at %v", step)
				assert.LessOrEqual(t, latency, 2*S, "latency after the step at %v", step)
			}
		})
	}
}

// TestLimiterSlowdown doubles the service time (the capacity halves, the
// ideal concurrency stays), then restores it: the baseline must follow
// both ways, within 5 s of each step.
func TestLimiterSlowdown(t *testing.T) {
	skipUnderRace(t)
	const S = 10 * time.Millisecond
	for _, tt := range []struct {
		name string
		draw func() time.Duration
	}{
		{"fixed service", fixed(S)},
		{"exponential service", exponential(S, 6)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := &retry.FakeClock{}
			l := retry.NewLimiter(retry.LimiterClock(clock))
			slow := func(now time.Duration) bool { return now >= 30*time.Second && now < time.Minute }
			q := &queue{workers: constant(40)}
			q.service = func() time.Duration {
				if slow(q.now) {
					return 2 * tt.draw()
				}
				return tt.draw()
			}
			var samples []limitSample
			q.run(l, clock, 90*time.Second, record(&samples))
			for _, step := range []time.Duration{30 * time.Second, time.Minute} {
				service := S
				if slow(step) {
					service = 2 * S
				}
				goodput, latency := served(samples, step+5*time.Second, step+30*time.Second, 40, service)
				assert.GreaterOrEqual(t, goodput, 0.95, "goodput after the step at %v", step)
				assert.LessOrEqual(t, latency, 2*service, "latency after the step at %v", step)
			}
		})
	}
}

// TestLimiterNoDriftInLongIncident is the regression test of the two
// drifts reported against the anchors: a baseline that catches up with an
// incident's latency, so the limit stops falling (failsafe-go #127), and a
// limit that creeps up under modest overload (Netflix concurrency-limits
// #134, at a gradient near 0.8). Capacity halves for ten minutes of the
// clock; over the incident's last half the limit must not rise.
func TestLimiterNoDriftInLongIncident(t *testing.T) {
	skipUnderRace(t)
	for _, tt := range []struct {
		name    string
		service func() time.Duration
	}{
		{"fixed service", fixed(10 * time.Millisecond)},
		{"exponential service", exponential(10*time.Millisecond, 4)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := &retry.FakeClock{}
			l := retry.NewLimiter(retry.LimiterClock(clock))
			workers := func(now time.Duration) int {
				if now >= time.Minute {
					return 20
				}
				return 40
			}
			q := &queue{workers: workers, service: tt.service}
			var samples []limitSample
			q.run(l, clock, 11*time.Minute, record(&samples))
			// The mean limit (probes left out) over each minute of the
			// incident's second half.
			var means []float64
			for m := 6; m < 11; m++ {
				var sum, n float64
				for _, x := range samples {
					if x.at >= time.Duration(m)*time.Minute && x.at < time.Duration(m+1)*time.Minute && x.limit > 8 {
						sum, n = sum+float64(x.limit), n+1
					}
				}
				means = append(means, sum/n)
			}
			goodput, latency := served(samples, 6*time.Minute, 11*time.Minute, 20, 10*time.Millisecond)
			assert.GreaterOrEqual(t, goodput, 0.95, "goodput")
			assert.LessOrEqual(t, latency, 20*time.Millisecond, "latency")
			assert.LessOrEqual(t, means[len(means)-1], means[0]*1.05, "no upward drift over the incident's last half: %v", means)
		})
	}
}

func TestLimiterFallsOnFailures(t *testing.T) {
	skipUnderRace(t)
	t.Run("fast failures take it to the floor", func(t *testing.T) {
		clock := &retry.FakeClock{}
		l := retry.NewLimiter(retry.LimiterClock(clock), retry.LimiterMin(2))
		q := &queue{workers: constant(1000), service: fixed(time.Millisecond),
			release: func(p retry.Permit, _ time.Duration) { p.Failure() }}
		q.run(l, clock, 10*time.Second, nil)
		assert.Equal(t, 2, l.Limit())
	})
	t.Run("timeouts take it down though latency is capped", func(t *testing.T) {
		clock := &retry.FakeClock{}
		l := retry.NewLimiter(retry.LimiterClock(clock), retry.LimiterInitial(200))
		// A client timeout at 15ms: slower requests fail, and their latency
		// (the timeout) never shows the queue.
		q := &queue{workers: constant(50), service: fixed(10 * time.Millisecond),
			release: func(p retry.Permit, d time.Duration) {
				if d > 15*time.Millisecond {
					p.Failure()
					return
				}
				p.Success()
			}}
		q.run(l, clock, time.Minute, nil)
		assert.LessOrEqual(t, l.Limit(), 75)
	})
	t.Run("the ceiling holds", func(t *testing.T) {
		clock := &retry.FakeClock{}
		l := retry.NewLimiter(retry.LimiterClock(clock), retry.LimiterMax(30))
		q := &queue{workers: constant(1000), service: fixed(time.Millisecond)}
		q.run(l, clock, 10*time.Second, nil)
		assert.Equal(t, 30, l.Limit())
	})
}

func TestLimiterDropCountsNothing(t *testing.T) {
	clock := &retry.FakeClock{}
	l := retry.NewLimiter(retry.LimiterClock(clock))
	// A hopeless latency, if it counted.
	q := &queue{workers: constant(1), service: fixed(time.Hour), release: func(p retry.Permit, _ time.Duration) { p.Drop() }}
	q.run(l, clock, 100*time.Hour, nil)
	assert.Equal(t, 20, l.Limit())
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

// TestWithLimiter checks that every attempt of Retry, Do and Hedge holds a
// permit while in flight, and that the permits all come back.
func TestWithLimiter(t *testing.T) {
	ctx := context.Background()
	errBoom := errors.New("boom")
	t.Run("each attempt of Do holds a permit", func(t *testing.T) {
		l := retry.NewLimiter(retry.LimiterInitial(3))
		var seen []int
		err := retry.Do(ctx, retry.Constant(0).Take(2), func(context.Context) error {
			seen = append(seen, l.InFlight())
			return errBoom
		}, retry.WithLimiter(l))
		assert.ErrorIs(t, err, retry.ErrExhausted)
		assert.Equal(t, []int{1, 1, 1}, seen)
		assert.Zero(t, l.InFlight())
	})
	t.Run("a call without a permit is refused with ErrLimited and its pushback", func(t *testing.T) {
		l := retry.NewLimiter(retry.LimiterInitial(1))
		p, _ := l.TryAcquire()
		calls := 0
		_, err := retry.Retry(ctx, retry.Constant(0).Take(2), func(context.Context) (int, error) {
			calls++
			return 1, nil
		}, retry.WithLimiter(l))
		assert.ErrorIs(t, err, retry.ErrLimited)
		var e *retry.Error
		require.ErrorAs(t, err, &e)
		assert.Zero(t, e.Attempts)
		assert.Zero(t, calls)
		p.Success()
		assert.Zero(t, l.InFlight())
	})
	t.Run("a retry without a permit ends the call and refunds its budget token", func(t *testing.T) {
		l := retry.NewLimiter(retry.LimiterInitial(1))
		budget := retry.NewBudget(0, 5)
		var other retry.Permit
		calls := 0
		err := retry.Do(ctx, retry.Constant(0).Take(3), func(context.Context) error {
			calls++
			return errBoom
		}, retry.WithLimiter(l), retry.WithBudget(budget), retry.OnRetry(func(retry.Attempt) {
			other, _ = l.TryAcquire() // someone else takes the permit the attempt gave back
		}))
		assert.ErrorIs(t, err, retry.ErrLimited)
		assert.ErrorIs(t, err, errBoom)
		assert.Equal(t, 1, calls)
		assert.Equal(t, 5.0, budget.Tokens(), "the refused retry's token came back")
		other.Success()
		assert.Zero(t, l.InFlight())
	})
	t.Run("a retry waits for a permit within LimiterMaxWait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := retry.NewLimiter(retry.LimiterInitial(1), retry.LimiterMaxWait(time.Second))
			calls := 0
			err := retry.Do(ctx, retry.Constant(0).Take(1), func(context.Context) error {
				calls++
				if calls == 1 {
					other, _ := l.Acquire(ctx) // none: the attempt holds it
					assert.Equal(t, retry.Permit{}, other)
					go func() {
						q, err := l.Acquire(ctx) // waits for this attempt's permit
						if err == nil {
							time.Sleep(100 * time.Millisecond)
							q.Success()
						}
					}()
					synctest.Wait()
					return errBoom
				}
				return nil
			}, retry.WithLimiter(l))
			assert.NoError(t, err)
			assert.Equal(t, 2, calls)
			synctest.Wait()
			assert.Zero(t, l.InFlight())
		})
	})
	t.Run("outcomes: a context ended by the caller counts nothing", func(t *testing.T) {
		l := retry.NewLimiter(retry.LimiterInitial(1))
		cctx, cancel := context.WithCancel(ctx)
		err := retry.Do(cctx, retry.Constant(0).Take(3), func(context.Context) error {
			cancel()
			return context.Canceled
		}, retry.WithLimiter(l))
		assert.ErrorIs(t, err, context.Canceled)
		assert.Zero(t, l.InFlight())
	})
	t.Run("a panic in fn gives the permit back", func(t *testing.T) {
		l := retry.NewLimiter(retry.LimiterInitial(1))
		assert.Panics(t, func() {
			_ = retry.Do(ctx, retry.Constant(0).Take(1), func(context.Context) error { panic("x") }, retry.WithLimiter(l))
		})
		assert.Zero(t, l.InFlight())
	})
}

func TestHedgeWithLimiter(t *testing.T) {
	ctx := context.Background()
	t.Run("each hedge holds a permit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := retry.NewLimiter(retry.LimiterInitial(5))
			var mu sync.Mutex
			var seen []int
			v, err := retry.Hedge(ctx, retry.Constant(10*time.Millisecond).Take(2), func(ctx context.Context) (int, error) {
				mu.Lock()
				seen = append(seen, l.InFlight())
				mu.Unlock()
				select {
				case <-time.After(100 * time.Millisecond):
					return 1, nil
				case <-ctx.Done():
					return 0, ctx.Err()
				}
			}, retry.WithLimiter(l))
			require.NoError(t, err)
			assert.Equal(t, 1, v)
			synctest.Wait() // the losers have returned
			mu.Lock()
			assert.Equal(t, []int{1, 2, 3}, seen)
			mu.Unlock()
			assert.Zero(t, l.InFlight())
		})
	})
	t.Run("a hedge without a permit is not sent, and the call goes on", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := retry.NewLimiter(retry.LimiterInitial(1))
			var calls atomic.Int32
			v, err := retry.Hedge(ctx, retry.Constant(10*time.Millisecond).Take(3), func(ctx context.Context) (int, error) {
				calls.Add(1)
				time.Sleep(100 * time.Millisecond)
				return 7, nil
			}, retry.WithLimiter(l))
			require.NoError(t, err)
			assert.Equal(t, 7, v)
			assert.Equal(t, int32(1), calls.Load(), "the hedges found no permit")
			synctest.Wait()
			assert.Zero(t, l.InFlight())
		})
	})
	t.Run("a first attempt without a permit is refused", func(t *testing.T) {
		l := retry.NewLimiter(retry.LimiterInitial(1))
		p, _ := l.TryAcquire()
		_, err := retry.Hedge(ctx, retry.Constant(time.Millisecond).Take(3), func(context.Context) (int, error) { return 1, nil }, retry.WithLimiter(l))
		assert.ErrorIs(t, err, retry.ErrLimited)
		p.Success()
	})
	t.Run("a retry after a failure with nothing in flight takes the freed permit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := retry.NewLimiter(retry.LimiterInitial(1))
			calls := 0
			v, err := retry.Hedge(ctx, retry.Constant(time.Second).Take(3), func(ctx context.Context) (int, error) {
				calls++
				if calls == 1 {
					return 0, errors.New("transient")
				}
				return 2, nil
			}, retry.WithLimiter(l))
			require.NoError(t, err)
			assert.Equal(t, 2, v)
			assert.Equal(t, 2, calls)
			assert.Zero(t, l.InFlight())
		})
	})
}
