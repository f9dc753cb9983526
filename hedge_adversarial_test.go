package retry

import (
	"context"
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
				}, Discard(r.release), OnRetry(func(a Attempt) {
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
