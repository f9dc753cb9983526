package retry

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests in this file attack Hedge as an outside reviewer would: schedules
// that break the iterator contract, functions that panic or exit, contexts
// that end at awkward instants, schedules with no end, and many calls
// sharing a Budget and a Latency.

// stuck is an fn that waits for its context to end and counts its calls.
func stuck(calls *atomic.Int32) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		n := int(calls.Add(1))
		<-ctx.Done()
		return n, ctx.Err()
	}
}

func TestHedgeScheduleMisuse(t *testing.T) {
	t.Run("yields, then panics", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			causes := make(chan error, 2)
			s := Schedule(func(yield func(time.Duration) bool) {
				if yield(10 * time.Millisecond) {
					panic("schedule")
				}
			})
			assert.PanicsWithValue(t, "schedule", func() {
				_, _ = Hedge(t.Context(), s, func(ctx context.Context) (int, error) {
					<-ctx.Done()
					causes <- context.Cause(ctx)
					return 0, ctx.Err()
				})
			})
			synctest.Wait()
			// The hedge's goroutine may find the call over and not call fn.
			assert.GreaterOrEqual(t, len(causes), 1)
			for len(causes) > 0 {
				assert.Same(t, ErrHedgeLost, <-causes)
			}
		})
	})
	t.Run("calls yield on another goroutine and waits for it", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newReplicas(replica{lat: time.Hour}, replica{lat: 10 * time.Millisecond})
			s := Schedule(func(yield func(time.Duration) bool) {
				for {
					more := make(chan bool)
					go func() { more <- yield(50 * time.Millisecond) }()
					if !<-more {
						return
					}
				}
			})
			v, err := Hedge(t.Context(), s, r.fn)
			require.NoError(t, err)
			assert.Equal(t, 2, v)
			assert.Equal(t, 60*time.Millisecond, time.Since(r.t0))
		})
	})
	t.Run("returns while its yield runs on another goroutine", func(t *testing.T) {
		// The stray yield must stop, return false and leave no state
		// behind (the race detector checks that nothing of Hedge runs
		// after it), and Hedge reports the broken contract.
		synctest.Test(t, func(t *testing.T) {
			var calls atomic.Int32
			stray := make(chan bool, 1)
			s := Schedule(func(yield func(time.Duration) bool) {
				started := make(chan struct{})
				go func() {
					close(started)
					stray <- yield(time.Hour)
				}()
				<-started
				time.Sleep(time.Millisecond) // the yield is waiting on its delay
			})
			assert.PanicsWithValue(t, "retry: Hedge: the schedule returned while its yield function was running", func() {
				_, _ = Hedge(t.Context(), s, stuck(&calls))
			})
			assert.False(t, <-stray, "the stray yield returned false")
			synctest.Wait()
			assert.Equal(t, int32(1), calls.Load())
		})
	})
	t.Run("calls yield from two goroutines at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var calls atomic.Int32
			var panics atomic.Int32
			s := Schedule(func(yield func(time.Duration) bool) {
				var wg sync.WaitGroup
				for range 2 {
					wg.Go(func() {
						defer func() {
							if recover() != nil {
								panics.Add(1)
							}
						}()
						yield(10 * time.Millisecond)
					})
				}
				wg.Wait()
			})
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			_, err := Hedge(ctx, s, stuck(&calls))
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, int32(1), panics.Load(), "one of the two calls panics")
			assert.Equal(t, int32(2), calls.Load(), "the other makes its hedge")
		})
	})
	t.Run("a negative delay counts as 0", func(t *testing.T) {
		negative := Schedule(func(yield func(time.Duration) bool) { yield(-time.Second) })
		synctest.Test(t, func(t *testing.T) {
			r := newReplicas(replica{lat: time.Hour}, replica{lat: 10 * time.Millisecond})
			v, err := Hedge(t.Context(), negative, r.fn)
			require.NoError(t, err)
			assert.Equal(t, 2, v)
			assert.Equal(t, []time.Duration{0, 0}, r.startTimes())
		})
		synctest.Test(t, func(t *testing.T) {
			clock := &recordingClock{}
			r := newReplicas(replica{lat: time.Hour}, replica{lat: 10 * time.Millisecond})
			v, err := Hedge(t.Context(), negative, r.fn, WithClock(clock))
			require.NoError(t, err)
			assert.Equal(t, 2, v)
			assert.Equal(t, []time.Duration{0}, clock.slept(), "a custom clock is asked to sleep 0")
		})
	})
}

// recordingClock is a custom Clock on the real clock (fake under synctest)
// that records the durations it is asked to sleep.
type recordingClock struct {
	mu     sync.Mutex
	sleeps []time.Duration
}

func (*recordingClock) Now() time.Time { return time.Now() }
func (c *recordingClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *recordingClock) slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sleeps)
}

func TestHedgePanicsAndExits(t *testing.T) {
	t.Run("OnRetry panics", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newReplicas(replica{lat: time.Hour})
			assert.PanicsWithValue(t, "hook", func() {
				_, _ = Hedge(t.Context(), Constant(10*time.Millisecond), r.fn, OnRetry(func(Attempt) { panic("hook") }))
			})
			synctest.Wait()
			r.mu.Lock()
			defer r.mu.Unlock()
			assert.Equal(t, map[int]error{1: ErrHedgeLost}, r.causes, "the attempt is cancelled")
		})
	})
	t.Run("a panic among the outcomes left: every value is released first", func(t *testing.T) {
		// Attempt 1 panics and attempt 2 succeeds while Hedge's goroutine
		// runs an OnRetry hook that then panics: Hedge raises the first
		// panic delivered, after releasing the success it will not return.
		synctest.Test(t, func(t *testing.T) {
			var calls atomic.Int32
			r := newReplicas()
			gate1, gate2 := make(chan struct{}), make(chan struct{})
			assert.PanicsWithValue(t, "one", func() {
				_, _ = Hedge(t.Context(), Delays(0, 0), func(ctx context.Context) (int, error) {
					switch calls.Add(1) {
					case 1:
						<-gate1
						panic("one")
					case 2:
						<-gate2
						return 2, nil
					}
					<-ctx.Done()
					return 0, ctx.Err()
				}, OnDiscard(r.release), OnRetry(func(a Attempt) {
					if a.Number == 2 {
						close(gate1)
						synctest.Wait()
						close(gate2)
						synctest.Wait()
						panic("hook")
					}
				}))
			})
			synctest.Wait()
			r.mu.Lock()
			defer r.mu.Unlock()
			assert.Equal(t, []int{2}, r.released)
		})
	})
	t.Run("runtime.Goexit in a loser", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var calls atomic.Int32
			v, err := Hedge(t.Context(), Constant(0).Take(1), func(ctx context.Context) (int, error) {
				if calls.Add(1) == 1 {
					<-ctx.Done()
					runtime.Goexit()
				}
				time.Sleep(time.Millisecond)
				return 2, nil
			})
			require.NoError(t, err)
			assert.Equal(t, 2, v)
			synctest.Wait() // the loser exits quietly
		})
	})
}

// TestHedgeLoserPanicCrashes checks the documented fate of a panic in an
// attempt after Hedge has returned: it is not recovered, and ends the
// program with the attempt's own stack, as a panic in any goroutine does
// (and as in golang.org/x/sync/errgroup). The program is this test binary,
// run again.
func TestHedgeLoserPanicCrashes(t *testing.T) {
	if os.Getenv("RETRY_HEDGE_LOSER_PANIC") == "1" {
		loserPanics()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHedgeLoserPanicCrashes$")
	cmd.Env = append(os.Environ(), "RETRY_HEDGE_LOSER_PANIC=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	assert.Equal(t, 2, exit.ExitCode())
	assert.Contains(t, string(out), "panic: the loser panics")
	assert.Contains(t, string(out), "retry.loserFn", "the stack is the attempt's own")
}

func loserPanics() {
	release := make(chan struct{})
	var calls atomic.Int32
	v, err := Hedge(context.Background(), Constant(0).Take(1), func(ctx context.Context) (int, error) {
		return loserFn(ctx, calls.Add(1), release)
	})
	if v != 2 || err != nil {
		os.Exit(3)
	}
	close(release)
	select {} // the loser's panic ends the program
}

//go:noinline
func loserFn(ctx context.Context, n int32, release chan struct{}) (int, error) {
	if n == 1 {
		<-release
		panic("the loser panics")
	}
	return 2, nil
}

func TestHedgeContextEnds(t *testing.T) {
	t.Run("in an OnRetry hook: the hedge is not made and costs nothing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			b := NewBudget(0, 1)
			var calls atomic.Int32
			_, err := Hedge(ctx, Constant(time.Millisecond).Take(1), stuck(&calls), WithBudget(b), OnRetry(func(Attempt) { cancel() }))
			assert.ErrorIs(t, err, context.Canceled)
			var e *Error
			require.ErrorAs(t, err, &e)
			synctest.Wait()
			assert.Equal(t, int32(1), calls.Load())
			assert.Equal(t, 1, e.Attempts, "Attempts counts the calls of fn")
			assert.Equal(t, 1.0, b.Tokens(), "the hedge that did not call fn was refunded")
		})
	})
	t.Run("while a failure is handled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			var calls atomic.Int32
			v, err := Hedge(ctx, Constant(time.Hour).Take(3), func(ctx context.Context) (int, error) {
				return int(calls.Add(1)), errBoom
			}, OnRetry(func(a Attempt) {
				if a.Err != nil {
					cancel()
				}
			}))
			assert.ErrorIs(t, err, context.Canceled)
			assert.ErrorIs(t, err, errBoom)
			assert.Equal(t, 1, v, "the last failure's value")
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, 1, e.Attempts)
			assert.Equal(t, int32(1), calls.Load())
		})
	})
	t.Run("a failure that comes after the end is not the last failure", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			r := newReplicas(replica{lat: 10 * time.Millisecond, err: errBoom}, replica{lat: time.Hour})
			v, err := Hedge(ctx, Constant(time.Hour).Take(3), r.fn)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Same(t, errBoom, e.Last, "not the second attempt's answer to the deadline")
			assert.Equal(t, 1, v)
			assert.Equal(t, 2, e.Attempts)
		})
		// Without synctest: whether Hedge or the attempt runs first after
		// the cancel, the attempt's answer is not the last failure.
		for i := range 200 {
			ctx, cancel := context.WithCancel(t.Context())
			var calls atomic.Int32
			v, err := Hedge(ctx, Constant(time.Hour).Take(3), func(ctx context.Context) (int, error) {
				n := int(calls.Add(1))
				if n == 1 {
					return n, errBoom
				}
				cancel()
				<-ctx.Done()
				return n, ctx.Err()
			})
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Same(t, errBoom, e.Last, "run %d", i)
			require.Equal(t, 1, v, "run %d", i)
		}
	})
	t.Run("a deadline before the first delay", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
			defer cancel()
			r := newReplicas(replica{lat: time.Hour})
			_, err := Hedge(ctx, Constant(time.Second).Take(1), r.fn)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, 30*time.Millisecond, time.Since(r.t0))
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, 1, e.Attempts)
			synctest.Wait()
			assert.Equal(t, map[int]error{1: context.DeadlineExceeded}, r.causes)
		})
	})
	t.Run("an empty schedule still runs fn on its own goroutine", func(t *testing.T) {
		// Hedge returns when ctx ends even though the only attempt
		// ignores it: no attempt runs on the caller's goroutine.
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
			defer cancel()
			r := newReplicas(replica{lat: time.Hour, deaf: true})
			_, err := Hedge(ctx, Constant(0).Take(0), r.fn, OnDiscard(r.release))
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, 30*time.Millisecond, time.Since(r.t0))
			time.Sleep(time.Hour)
			r.mu.Lock()
			defer r.mu.Unlock()
			assert.Equal(t, []int{1}, r.released, "its late success is released")
		})
	})
	t.Run("a FakeClock and an attempt that waits for its context", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			clock := NewFakeClock(epoch)
			r := newReplicas(replica{lat: time.Hour})
			_, err := Hedge(ctx, Constant(time.Millisecond).Take(5), r.fn, WithClock(clock))
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, 50*time.Millisecond, time.Since(r.t0), "Hedge waits for the attempt until ctx ends")
			assert.Equal(t, []time.Duration{0}, r.startTimes(), "and makes no other")
			assert.Nil(t, clock.Sleeps())
		})
	})
}

func TestHedgeEndlessSchedules(t *testing.T) {
	t.Run("zero delays, attempts that hang", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			var calls atomic.Int32
			done := make(chan error)
			go func() {
				_, err := Hedge(ctx, Constant(0), stuck(&calls))
				done <- err
			}()
			synctest.Wait()
			assert.Equal(t, int32(hedgeMaxOutstanding), calls.Load(), "no more than hedgeMaxOutstanding at once")
			cancel()
			assert.ErrorIs(t, <-done, context.Canceled)
		})
	})
	t.Run("short delays, attempts that hang", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			r := newReplicas(replica{lat: time.Hour})
			_, err := Hedge(ctx, Constant(time.Millisecond), r.fn)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			var want []time.Duration
			for i := range hedgeMaxOutstanding {
				want = append(want, time.Duration(i)*time.Millisecond)
			}
			assert.Equal(t, want, r.startTimes())
		})
	})
	t.Run("at the bound, a failure starts the next at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			script := make([]replica, hedgeMaxOutstanding+1)
			for i := range script {
				script[i] = replica{lat: time.Hour}
			}
			script[0] = replica{lat: 100 * time.Millisecond, err: errBoom}
			script[hedgeMaxOutstanding] = replica{lat: 5 * time.Millisecond}
			r := newReplicas(script...)
			v, err := Hedge(ctx, Constant(0), r.fn)
			require.NoError(t, err)
			assert.Equal(t, hedgeMaxOutstanding+1, v)
			assert.Equal(t, 105*time.Millisecond, time.Since(r.t0))
		})
	})
	t.Run("zero delays, attempts that fail at once", func(t *testing.T) {
		// Like Retry with such a schedule, Hedge goes on until ctx ends,
		// never with more than hedgeMaxOutstanding attempts at once.
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var running, most, calls atomic.Int32
		_, err := Hedge(ctx, Constant(0), func(ctx context.Context) (int, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			if calls.Add(1) == 10_000 {
				cancel()
			}
			return 0, errBoom
		})
		assert.ErrorIs(t, err, context.Canceled)
		assert.LessOrEqual(t, most.Load(), int32(hedgeMaxOutstanding))
		t.Logf("%d calls, at most %d at once", calls.Load(), most.Load())
	})
}

// TestHedgeSharedBudgetAndLatency runs 10 000 Hedge calls at once that
// share one Budget and one Latency: each wants one hedge, the Budget grants
// exactly its reserve, and the Latency records every attempt: the hedges
// that won, the first attempts not hedged, and each cancelled loser as the
// time it ran. Under the race detector, which allows 8 128 goroutines,
// the calls are made 2 000 at a time.
func TestHedgeSharedBudgetAndLatency(t *testing.T) {
	const calls, granted = 10_000, 3_000
	rounds := 1
	if raceEnabled {
		rounds = 5
	}
	synctest.Test(t, func(t *testing.T) {
		b := NewBudget(0, granted)
		lat := NewLatency()
		var attempts atomic.Int32
		var wg sync.WaitGroup
		for range rounds {
			for range calls / rounds {
				wg.Go(func() {
					var k atomic.Int32
					v, err := Hedge(t.Context(), Constant(10*time.Millisecond).Take(1), func(ctx context.Context) (int, error) {
						attempts.Add(1)
						lat := time.Millisecond // the hedge
						if k.Add(1) == 1 {
							lat = 15 * time.Millisecond
						}
						select {
						case <-time.After(lat):
							return 1, nil
						case <-ctx.Done():
							return 0, ctx.Err()
						}
					}, WithBudget(b), WithLatency(lat))
					if err != nil || v != 1 {
						t.Errorf("%v, %v", v, err)
					}
				})
			}
			wg.Wait()
			synctest.Wait() // the losers have returned
		}
		assert.Equal(t, int32(calls+granted), attempts.Load(), "exactly the reserve was granted")
		assert.Zero(t, b.Tokens())
		assert.Equal(t, uint64(calls+granted), lat.n.Load(), "every attempt recorded")
		var c [latBuckets]uint16
		held := lat.snapshot(&c)
		assert.Equal(t, held, uint64(c[latBucket(time.Millisecond)])+uint64(c[latBucket(15*time.Millisecond)])+uint64(c[latBucket(11*time.Millisecond)]),
			"the winners' latencies, and the losers', cancelled at 11 ms")
	})
}

// TestHedgeDiscardRaces makes every attempt of a call succeed at the same
// instant, ignoring its context, so that the winner, the values delivered
// before Hedge decided and those delivered after race each other: every
// success but the one returned is released exactly once.
func TestHedgeDiscardRaces(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 200 {
		n := 2 + r.IntN(hedgeMaxOutstanding-1)
		lats := make([]time.Duration, n)
		for k := range lats {
			lats[k] = time.Duration(r.IntN(3)) * time.Millisecond
		}
		synctest.Test(t, func(t *testing.T) {
			var calls atomic.Int32
			var mu sync.Mutex
			var released []int
			v, err := Hedge(t.Context(), Constant(0).Take(n-1), func(context.Context) (int, error) {
				k := int(calls.Add(1))
				time.Sleep(lats[k-1])
				return k, nil
			}, OnDiscard(func(k int) {
				mu.Lock()
				released = append(released, k)
				mu.Unlock()
			}))
			require.NoError(t, err, "run %d", i)
			time.Sleep(time.Second)
			var want []int
			for k := 1; k <= int(calls.Load()); k++ { // a win may come before every attempt started
				if k != v {
					want = append(want, k)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			assert.ElementsMatch(t, want, released, "run %d", i)
		})
	}
}

func TestHedgeAttemptTimeoutInterplay(t *testing.T) {
	t.Run("each attempt has its own timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newReplicas(replica{lat: time.Hour})
			_, err := Hedge(t.Context(), Constant(20*time.Millisecond).Take(2), r.fn, AttemptTimeout(50*time.Millisecond))
			assert.ErrorIs(t, err, ErrExhausted)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			// 0, 20, 40; the last times out at 90.
			assert.Equal(t, []time.Duration{0, 20 * time.Millisecond, 40 * time.Millisecond}, r.startTimes())
			assert.Equal(t, 90*time.Millisecond, time.Since(r.t0))
		})
	})
	t.Run("an attempt that ignores its timeout is raced by the hedges", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newReplicas(replica{lat: time.Hour, deaf: true}, replica{lat: 5 * time.Millisecond})
			v, err := Hedge(t.Context(), Constant(50*time.Millisecond).Take(1), r.fn, AttemptTimeout(10*time.Millisecond), OnDiscard(r.release))
			require.NoError(t, err)
			assert.Equal(t, 2, v)
			assert.Equal(t, 55*time.Millisecond, time.Since(r.t0))
			time.Sleep(time.Hour)
		})
	})
	t.Run("the caller's deadline is not an attempt's timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
			defer cancel()
			r := newReplicas(replica{lat: time.Hour})
			_, err := Hedge(ctx, Constant(time.Hour).Take(1), r.fn, AttemptTimeout(40*time.Millisecond))
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, 1, e.Attempts, "no hedge on the caller's deadline")
		})
	})
}
