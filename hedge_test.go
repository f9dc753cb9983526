package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
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

// A replica is how one attempt behaves: after lat it returns its 1-based
// number and err (nil: a success). It returns at once with its context's
// error when the context ends first, unless it is deaf.
type replica struct {
	lat  time.Duration
	err  error
	deaf bool
}

// replicas records what the attempts of one Hedge call did.
type replicas struct {
	t0       time.Time
	script   []replica // attempt i behaves as script[i]; the last one repeats
	mu       sync.Mutex
	starts   []time.Duration // by attempt, since t0
	causes   map[int]error   // context.Cause of the attempts that saw their context end
	released []int           // values passed to OnDiscard
	calls    atomic.Int32
}

func newReplicas(script ...replica) *replicas {
	return &replicas{t0: time.Now(), script: script, causes: map[int]error{}}
}

func (r *replicas) fn(ctx context.Context) (int, error) {
	k := int(r.calls.Add(1))
	// Hedge checks its context and whether it has decided before it calls
	// fn, under its lock, and counts the call then; it cancels the losers
	// after releasing that lock. So an attempt counted just before Hedge
	// decided can find its context cancelled, with ErrHedgeLost, by the
	// time fn's first line runs: it is a loser cancelled at once. Any other
	// done context at this point is a bug.
	if ctx.Err() != nil && !errors.Is(context.Cause(ctx), ErrHedgeLost) {
		panic(fmt.Sprintf("fn called with a done context: %v", context.Cause(ctx)))
	}
	r.mu.Lock()
	r.starts = append(r.starts, time.Since(r.t0))
	r.mu.Unlock()
	rep := r.script[min(k, len(r.script))-1]
	if rep.deaf {
		time.Sleep(rep.lat)
		return k, rep.err
	}
	timer := time.NewTimer(rep.lat)
	defer timer.Stop()
	select {
	case <-timer.C:
		return k, rep.err
	case <-ctx.Done():
		r.mu.Lock()
		r.causes[k] = context.Cause(ctx)
		r.mu.Unlock()
		return k, ctx.Err()
	}
}

// startTimes returns when the attempts started so far started.
func (r *replicas) startTimes() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.starts)
}

func (r *replicas) release(v int) {
	r.mu.Lock()
	r.released = append(r.released, v)
	r.mu.Unlock()
}

var errRejected = errors.New("rejected")

func TestHedgeTiming(t *testing.T) {
	const ms = time.Millisecond
	slow := replica{lat: time.Hour}
	fast := func(lat time.Duration) replica { return replica{lat: lat} }
	fail := func(lat time.Duration) replica { return replica{lat: lat, err: errBoom} }
	issueExample := Constant(50 * ms).Take(2)
	tests := []struct {
		name       string
		s          Schedule
		script     []replica
		opts       []Option
		deadline   time.Duration // of the caller's context, if any
		wantStarts []time.Duration
		wantAt     time.Duration // when Hedge returns
		wantV      int
		wantErr    func(t *testing.T, err error)
		wantLost   []int // attempts cancelled with ErrHedgeLost
	}{
		{
			name: "first attempt answers before the first delay", s: issueExample,
			script:     []replica{fast(10 * ms)},
			wantStarts: []time.Duration{0}, wantAt: 10 * ms, wantV: 1,
		},
		{
			name: "a hedge wins", s: issueExample,
			script:     []replica{slow, fast(20 * ms)},
			wantStarts: []time.Duration{0, 50 * ms}, wantAt: 70 * ms, wantV: 2,
			wantLost: []int{1},
		},
		{
			name: "the third attempt wins", s: issueExample,
			script:     []replica{slow, slow, fast(5 * ms)},
			wantStarts: []time.Duration{0, 50 * ms, 100 * ms}, wantAt: 105 * ms, wantV: 3,
			wantLost: []int{1, 2},
		},
		{
			name: "the schedule runs out: wait for those outstanding", s: issueExample,
			script:     []replica{fast(300 * ms), fast(400 * ms), fast(500 * ms)},
			wantStarts: []time.Duration{0, 50 * ms, 100 * ms}, wantAt: 300 * ms, wantV: 1,
			wantLost: []int{2, 3},
		},
		{
			name: "a failure starts the next attempt at once", s: issueExample,
			script:     []replica{fail(10 * ms), fast(20 * ms)},
			wantStarts: []time.Duration{0, 10 * ms}, wantAt: 30 * ms, wantV: 2,
		},
		{
			name: "a failure uses up a delay: the next one counts from the new attempt", s: Delays(50*ms, 30*ms),
			script:     []replica{fail(10 * ms), slow, fast(1 * ms)},
			wantStarts: []time.Duration{0, 10 * ms, 40 * ms}, wantAt: 41 * ms, wantV: 3,
			wantLost: []int{2},
		},
		{
			name: "every attempt fails", s: issueExample,
			script:     []replica{fail(10 * ms)},
			wantStarts: []time.Duration{0, 10 * ms, 20 * ms}, wantAt: 30 * ms, wantV: 3,
			wantErr: func(t *testing.T, err error) {
				assert.ErrorIs(t, err, ErrExhausted)
				assert.ErrorIs(t, err, errBoom)
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, 3, e.Attempts)
				assert.EqualError(t, err, "retry: gave up after 3 attempts: schedule exhausted: last error: boom")
			},
		},
		{
			name: "failures and a slow success", s: issueExample,
			script:     []replica{fast(200 * ms), fail(10 * ms), fail(10 * ms)},
			wantStarts: []time.Duration{0, 50 * ms, 60 * ms}, wantAt: 200 * ms, wantV: 1,
		},
		{
			name: "a permanent failure ends the call", s: issueExample,
			script:     []replica{slow, {lat: 10 * ms, err: Permanent(errRejected)}},
			wantStarts: []time.Duration{0, 50 * ms}, wantAt: 60 * ms, wantV: 2,
			wantErr: func(t *testing.T, err error) {
				assert.Same(t, errRejected, err)
			},
			wantLost: []int{1},
		},
		{
			name: "an error If rejects ends the call", s: issueExample,
			script:     []replica{fail(10 * ms)},
			opts:       []Option{If(func(err error) bool { return !errors.Is(err, errBoom) })},
			wantStarts: []time.Duration{0}, wantAt: 10 * ms, wantV: 1,
			wantErr: func(t *testing.T, err error) {
				assert.Same(t, errBoom, err)
			},
		},
		{
			name: "a negative RetryAfter: no more attempts, and no other is outstanding", s: issueExample,
			script:     []replica{{lat: 10 * ms, err: RetryAfter(errRejected, -1)}},
			wantStarts: []time.Duration{0}, wantAt: 10 * ms, wantV: 1,
			wantErr: func(t *testing.T, err error) {
				assert.Same(t, errRejected, err)
			},
		},
		{
			name: "a positive RetryAfter delays the next attempt, up to MaxPushback", s: issueExample,
			script:     []replica{{lat: 10 * ms, err: RetryAfter(errBoom, time.Hour)}, fast(1 * ms)},
			wantStarts: []time.Duration{0, 10*ms + time.Minute}, wantAt: 11*ms + time.Minute, wantV: 2,
		},
		{
			name: "the caller's deadline", s: issueExample,
			script:     []replica{slow},
			deadline:   120 * ms,
			wantStarts: []time.Duration{0, 50 * ms, 100 * ms}, wantAt: 120 * ms, wantV: 0,
			wantErr: func(t *testing.T, err error) {
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, 3, e.Attempts)
				assert.Nil(t, e.Last)
			},
		},
		{
			name: "the caller's deadline after a failure", s: Constant(time.Hour),
			script:     []replica{fail(10 * ms), slow},
			deadline:   120 * ms,
			wantStarts: []time.Duration{0, 10 * ms}, wantAt: 120 * ms, wantV: 1,
			wantErr: func(t *testing.T, err error) {
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				assert.ErrorIs(t, err, errBoom)
			},
		},
		{
			name: "an empty schedule makes one attempt", s: Constant(0).Take(0),
			script:     []replica{fail(10 * ms)},
			wantStarts: []time.Duration{0}, wantAt: 10 * ms, wantV: 1,
			wantErr: func(t *testing.T, err error) {
				assert.ErrorIs(t, err, ErrExhausted)
			},
		},
		{
			name: "zero delays duplicate at once", s: Constant(0).Take(2),
			script:     []replica{fast(30 * ms), fast(10 * ms), fast(20 * ms)},
			wantStarts: []time.Duration{0, 0, 0}, wantAt: 10 * ms, wantV: 2,
			wantLost: []int{1, 3},
		},
		{
			name: "AttemptTimeout: a timed-out attempt is a retryable failure", s: Constant(time.Hour).Take(1),
			script:     []replica{slow, fast(5 * ms)},
			opts:       []Option{AttemptTimeout(30 * ms), If(func(error) bool { return false })},
			wantStarts: []time.Duration{0, 30 * ms}, wantAt: 35 * ms, wantV: 2,
		},
		{
			name: "a budget refusal stops the hedges, not the attempts", s: Constant(10 * ms).Take(5),
			script:     []replica{fast(100 * ms)},
			opts:       []Option{WithBudget(NewBudget(0, 2))},
			wantStarts: []time.Duration{0, 10 * ms, 20 * ms}, wantAt: 100 * ms, wantV: 1,
			wantLost: []int{2, 3},
		},
		{
			name: "a budget refusal after failures", s: Constant(10 * ms).Take(5),
			script:     []replica{fail(5 * ms)},
			opts:       []Option{WithBudget(NewBudget(0, 1))},
			wantStarts: []time.Duration{0, 5 * ms}, wantAt: 10 * ms, wantV: 2,
			wantErr: func(t *testing.T, err error) {
				assert.ErrorIs(t, err, ErrBudgetExhausted)
				assert.ErrorIs(t, err, errBoom)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				if tt.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.deadline)
					defer cancel()
				}
				r := newReplicas(tt.script...)
				v, err := Hedge(ctx, tt.s, r.fn, tt.opts...)
				at := time.Since(r.t0)
				if tt.wantErr == nil {
					assert.NoError(t, err)
				} else {
					tt.wantErr(t, err)
				}
				assert.Equal(t, tt.wantV, v, "value")
				assert.Equal(t, tt.wantAt, at, "when Hedge returned")
				synctest.Wait() // the losers that listen to their context return
				r.mu.Lock()
				defer r.mu.Unlock()
				assert.Equal(t, tt.wantStarts, r.starts, "when the attempts started")
				var lost []int
				for k, cause := range r.causes {
					if errors.Is(cause, ErrHedgeLost) {
						lost = append(lost, k)
					}
				}
				assert.ElementsMatch(t, tt.wantLost, lost, "attempts told they lost")
			})
		})
	}
}

// TestHedgeDeafLoser checks that Hedge returns as soon as a hedge wins while
// the first attempt ignores its context, and that the loser's late success
// is released and nothing is left once it returns.
func TestHedgeDeafLoser(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newReplicas(replica{lat: time.Second, deaf: true}, replica{lat: 10 * time.Millisecond})
		v, err := Hedge(t.Context(), Constant(50*time.Millisecond).Take(1), r.fn, OnDiscard(r.release))
		require.NoError(t, err)
		assert.Equal(t, 2, v)
		assert.Equal(t, 60*time.Millisecond, time.Since(r.t0))
		time.Sleep(time.Second)
		synctest.Wait()
		r.mu.Lock()
		defer r.mu.Unlock()
		assert.Equal(t, []int{1}, r.released, "the loser's success is released, the winner's value is not")
	})
}

func TestHedgeDiscard(t *testing.T) {
	t.Run("only the values of successes that lost", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// Attempts at 0, 0, 0; the second wins at 10 ms, the first
			// succeeds at 20 ms regardless, the third fails at 30 ms.
			r := newReplicas(replica{lat: 20 * time.Millisecond, deaf: true}, replica{lat: 10 * time.Millisecond},
				replica{lat: 30 * time.Millisecond, deaf: true, err: errBoom})
			var again []int
			v, err := Hedge(t.Context(), Constant(0).Take(2), r.fn, OnDiscard(r.release), OnDiscard(func(v int) {
				r.mu.Lock()
				again = append(again, v)
				r.mu.Unlock()
			}))
			require.NoError(t, err)
			assert.Equal(t, 2, v)
			time.Sleep(time.Second)
			r.mu.Lock()
			defer r.mu.Unlock()
			assert.Equal(t, []int{1}, r.released)
			assert.Equal(t, []int{1}, again, "every OnDiscard runs, one after the other")
		})
	})
	t.Run("a success that comes after Hedge gave up", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newReplicas(replica{lat: 20 * time.Millisecond, deaf: true}, replica{lat: 10 * time.Millisecond, err: Permanent(errRejected)})
			_, err := Hedge(t.Context(), Constant(0).Take(1), r.fn, OnDiscard(r.release))
			assert.Same(t, errRejected, err)
			time.Sleep(time.Second)
			r.mu.Lock()
			defer r.mu.Unlock()
			assert.Equal(t, []int{1}, r.released)
		})
	})
	t.Run("the wrong type panics at the call", func(t *testing.T) {
		calls := 0
		assert.PanicsWithValue(t, "retry: Hedge: OnDiscard's function is a func(string), not a func(int)", func() {
			_, _ = Hedge(t.Context(), Constant(0), func(context.Context) (int, error) { calls++; return 0, nil }, OnDiscard(func(string) {}))
		})
		assert.Zero(t, calls)
		assert.PanicsWithValue(t, "retry: OnDiscard: nil function", func() { OnDiscard[int](nil) })
	})
}

func TestHedgeOnRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []Attempt
		r := newReplicas(replica{lat: time.Hour}, replica{lat: 10 * time.Millisecond, err: errBoom}, replica{lat: time.Millisecond})
		v, err := Hedge(t.Context(), Delays(50*time.Millisecond, 40*time.Millisecond), r.fn,
			OnRetry(func(a Attempt) { got = append(got, a) }))
		require.NoError(t, err)
		assert.Equal(t, 3, v)
		assert.Equal(t, []Attempt{
			{Number: 1, Err: nil, Delay: 50 * time.Millisecond, Elapsed: 50 * time.Millisecond},
			{Number: 2, Err: errBoom, Delay: 40 * time.Millisecond, Elapsed: 60 * time.Millisecond},
		}, got)
	})
}

func TestHedgeObserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lat := NewLatency()
		// The first fails at 10 ms and the second starts at once; it is
		// slow and loses to the third, started 50 ms later, which wins
		// after 30 ms, at 90 ms: the loser is cancelled having run 80 ms.
		r := newReplicas(replica{lat: 10 * time.Millisecond, err: errBoom}, replica{lat: time.Hour}, replica{lat: 30 * time.Millisecond})
		_, err := Hedge(t.Context(), Delays(time.Hour, 50*time.Millisecond), r.fn, WithLatency(lat))
		require.NoError(t, err)
		synctest.Wait()
		var c [latBuckets]uint16
		assert.Equal(t, uint64(3), lat.snapshot(&c), "the failure, the winner and the cancelled loser")
		assert.Equal(t, uint16(1), c[latBucket(10*time.Millisecond)])
		assert.Equal(t, uint16(1), c[latBucket(30*time.Millisecond)])
		assert.Equal(t, uint16(1), c[latBucket(80*time.Millisecond)], "the loser, as the time it ran")
	})
	t.Run("a loser returning after the caller's context ended", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lat := NewLatency()
			// The loser returns 5 ms after it was cancelled, by which
			// time the caller has cancelled its own context, as a
			// deferred cancel does: Hedge cancelled it first, so it is
			// recorded all the same.
			ctx, cancel := context.WithCancel(t.Context())
			var calls atomic.Int32
			fn := func(ctx context.Context) (int, error) {
				if calls.Add(1) == 2 {
					time.Sleep(20 * time.Millisecond)
					return 2, nil
				}
				<-ctx.Done()
				time.Sleep(5 * time.Millisecond)
				return 1, ctx.Err()
			}
			v, err := Hedge(ctx, Constant(10*time.Millisecond).Take(1), fn, WithLatency(lat))
			require.NoError(t, err)
			assert.Equal(t, 2, v)
			cancel()
			time.Sleep(time.Second) // the loser returns meanwhile
			var c [latBuckets]uint16
			assert.Equal(t, uint64(2), lat.snapshot(&c))
			assert.Equal(t, uint16(1), c[latBucket(20*time.Millisecond)])
			assert.Equal(t, uint16(1), c[latBucket(35*time.Millisecond)], "the loser: cancelled at 30 ms, returned at 35 ms")
		})
	})
	t.Run("an attempt the caller's context ended", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lat := NewLatency()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
			defer cancel()
			r := newReplicas(replica{lat: time.Hour})
			_, err := Hedge(ctx, Constant(10*time.Millisecond).Take(1), r.fn, WithLatency(lat))
			require.ErrorIs(t, err, context.DeadlineExceeded)
			synctest.Wait()
			var c [latBuckets]uint16
			assert.Zero(t, lat.snapshot(&c), "its duration says nothing about the dependency")
		})
	})
}

// TestHedgeFakeClock checks the documented behaviour under a FakeClock:
// attempts one at a time, never a sleep, whatever the scheduling.
func TestHedgeFakeClock(t *testing.T) {
	for range 20 {
		clock := NewFakeClock(epoch)
		var calls atomic.Int32
		var hooks []Attempt
		v, err := Hedge(t.Context(), Constant(time.Second).Take(3), func(ctx context.Context) (int, error) {
			n := int(calls.Add(1))
			if n < 3 {
				return n, errBoom
			}
			return n, nil
		}, WithClock(clock), OnRetry(func(a Attempt) { hooks = append(hooks, a) }))
		require.NoError(t, err)
		assert.Equal(t, 3, v)
		assert.Nil(t, clock.Sleeps())
		assert.Equal(t, []Attempt{{Number: 1, Err: errBoom, Delay: time.Second}, {Number: 2, Err: errBoom, Delay: time.Second}}, hooks)
	}
	t.Run("a pushback is slept on the clock", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		var calls atomic.Int32
		v, err := Hedge(t.Context(), Constant(time.Second).Take(3), func(ctx context.Context) (int, error) {
			if n := int(calls.Add(1)); n < 3 {
				return n, RetryAfter(errBoom, time.Duration(n)*time.Minute)
			}
			return 3, nil
		}, WithClock(clock), MaxPushback(90*time.Second))
		require.NoError(t, err)
		assert.Equal(t, 3, v)
		assert.Equal(t, []time.Duration{time.Minute, 90 * time.Second}, clock.Sleeps())
	})
	t.Run("a slow attempt is awaited", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		var calls atomic.Int32
		v, err := Hedge(t.Context(), Constant(0).Take(3), func(ctx context.Context) (int, error) {
			n := int(calls.Add(1))
			time.Sleep(time.Millisecond) // real time: longer than any fake delay
			return n, nil
		}, WithClock(clock))
		require.NoError(t, err)
		assert.Equal(t, 1, v)
		assert.Equal(t, int32(1), calls.Load())
	})
}

// sleepingClock is a Clock other than FakeClock that sleeps on the real
// clock (fake under synctest), with a Now of its own.
type sleepingClock struct{ sleeps atomic.Int32 }

func (*sleepingClock) Now() time.Time { return time.Now() }
func (c *sleepingClock) Sleep(ctx context.Context, d time.Duration) error {
	c.sleeps.Add(1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func TestHedgeCustomClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := &sleepingClock{}
		r := newReplicas(replica{lat: time.Hour}, replica{lat: 10 * time.Millisecond, err: errBoom}, replica{lat: 5 * time.Millisecond})
		v, err := Hedge(t.Context(), Constant(50*time.Millisecond).Take(3), r.fn, WithClock(clock))
		require.NoError(t, err)
		assert.Equal(t, 3, v)
		assert.Equal(t, 65*time.Millisecond, time.Since(r.t0))
		assert.Equal(t, []time.Duration{0, 50 * time.Millisecond, 60 * time.Millisecond}, r.startTimes())
		assert.Equal(t, int32(3), clock.sleeps.Load(), "the third sleep is interrupted by the win")
	})
	t.Run("a failing Sleep ends the call", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			errClock := errors.New("clock broke")
			r := newReplicas(replica{lat: time.Hour})
			_, err := Hedge(t.Context(), Constant(time.Second), r.fn, WithClock(brokenClock{errClock}))
			assert.ErrorIs(t, err, errClock)
			assert.Equal(t, time.Duration(0), time.Since(r.t0))
		})
	})
}

func TestHedgeContext(t *testing.T) {
	t.Run("done before the first attempt", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(t.Context())
		cancel(errRejected)
		calls := 0
		v, err := Hedge(ctx, Constant(0), func(context.Context) (int, error) { calls++; return 1, nil })
		assert.Zero(t, calls)
		assert.Zero(t, v)
		assert.ErrorIs(t, err, errRejected)
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Zero(t, e.Attempts)
	})
	t.Run("cancelled: the attempts see the caller's cause", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(t.Context())
			time.AfterFunc(70*time.Millisecond, func() { cancel(errRejected) })
			r := newReplicas(replica{lat: time.Hour})
			_, err := Hedge(ctx, Constant(50*time.Millisecond), r.fn)
			assert.ErrorIs(t, err, errRejected)
			assert.Equal(t, 70*time.Millisecond, time.Since(r.t0))
			synctest.Wait()
			assert.Equal(t, map[int]error{1: errRejected, 2: errRejected}, r.causes)
		})
	})
	t.Run("the attempts get values of the caller's context", func(t *testing.T) {
		type key struct{}
		ctx := context.WithValue(t.Context(), key{}, "v")
		v, err := Hedge(ctx, Constant(0), func(ctx context.Context) (any, error) { return ctx.Value(key{}), nil })
		require.NoError(t, err)
		assert.Equal(t, "v", v)
	})
}

func TestHedgePanics(t *testing.T) {
	ok := func(context.Context) (int, error) { return 1, nil }
	assert.PanicsWithValue(t, "retry: Hedge of a nil Schedule", func() { _, _ = Hedge(t.Context(), nil, ok) })
	assert.PanicsWithValue(t, "retry: Hedge: nil function", func() { _, _ = Hedge[int](t.Context(), Constant(0), nil) })

	t.Run("a panic in fn reaches the caller", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var calls atomic.Int32
			lost := make(chan error, 1)
			assert.PanicsWithValue(t, "boom", func() {
				_, _ = Hedge(t.Context(), Constant(10*time.Millisecond), func(ctx context.Context) (int, error) {
					if calls.Add(1) == 1 {
						<-ctx.Done()
						lost <- context.Cause(ctx)
						return 0, ctx.Err()
					}
					panic("boom")
				})
			})
			assert.ErrorIs(t, <-lost, ErrHedgeLost, "the other attempts are cancelled")
			assert.Equal(t, int32(2), calls.Load())
		})
	})
	t.Run("runtime.Goexit in fn reaches the caller", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			exited := make(chan bool)
			go func() {
				defer func() { exited <- recover() == nil }()
				_, _ = Hedge(t.Context(), Constant(time.Hour), func(context.Context) (int, error) {
					runtime.Goexit()
					return 0, nil
				})
				t.Error("Hedge returned")
			}()
			assert.True(t, <-exited)
		})
	})
	t.Run("a stale yield panics and touches nothing", func(t *testing.T) {
		var kept func(time.Duration) bool
		s := Schedule(func(yield func(time.Duration) bool) { kept = yield })
		v, err := Hedge(t.Context(), s, ok)
		require.NoError(t, err)
		assert.Equal(t, 1, v)
		assert.PanicsWithValue(t, "retry: Hedge: the schedule called yield after it returned false, after it returned, or concurrently", func() { kept(0) })
		// From another goroutine, while another Hedge runs: no effect on
		// it, and nothing for the race detector.
		panicked := make(chan any)
		calls := 0
		v, err = Hedge(t.Context(), Delays(time.Hour), func(context.Context) (int, error) {
			go func() {
				defer func() { panicked <- recover() }()
				kept(0)
			}()
			<-panicked
			calls++
			return 7, nil
		})
		require.NoError(t, err)
		assert.Equal(t, 7, v)
		assert.Equal(t, 1, calls)
	})
	t.Run("a yield called after it returned false panics", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := Schedule(func(yield func(time.Duration) bool) {
				if !yield(time.Hour) {
					yield(time.Hour)
				}
			})
			assert.Panics(t, func() { _, _ = Hedge(t.Context(), s, ok) })
		})
	})
}

// hedgeModel is what Hedge must do with a schedule of delays, attempts that
// behave as script and a caller's deadline (0: none), worked out by a plain
// event simulation: when each attempt starts, when Hedge returns and with
// which attempt's value (0: none) and which kind of result. It reports
// false when two events fall on the same instant, whose order Hedge does
// not define.
func hedgeModel(delays []time.Duration, script []replica, deadline time.Duration) (m hedgeOutcome, ok bool) {
	const never = time.Duration(math.MaxInt64)
	rep := func(k int) replica { return script[min(k, len(script))-1] }
	var t time.Duration
	next := 0 // index of the next delay
	timer := never
	outstanding := map[int]bool{}
	launch := func() {
		m.starts = append(m.starts, t)
		outstanding[len(m.starts)] = true
		timer = never
		if next < len(delays) {
			timer = t + delays[next]
		}
	}
	launch()
	for {
		// The earliest event; a tie makes the scenario undefined.
		at, what, ties := never, 0, 0
		consider := func(when time.Duration, w int) {
			switch {
			case when < at:
				at, what, ties = when, w, 0
			case when == at:
				ties++
			}
		}
		for k := range outstanding {
			consider(m.starts[k-1]+rep(k).lat, k)
		}
		consider(timer, -1)
		if deadline > 0 {
			consider(deadline, -2)
		}
		if ties > 0 || at == never {
			return m, false
		}
		t = at
		switch what {
		case -2:
			m.at, m.kind = t, "deadline"
			return m, true
		case -1:
			next++
			launch()
			continue
		}
		delete(outstanding, what)
		switch err := rep(what).err; {
		case err == nil:
			m.at, m.v, m.kind = t, what, "success"
			return m, true
		case errors.Is(err, errRejected):
			m.at, m.v, m.kind = t, what, "permanent"
			return m, true
		}
		m.lastFailed = what
		if next < len(delays) {
			next++
			launch()
		} else if len(outstanding) == 0 {
			m.at, m.v, m.kind = t, what, "exhausted"
			return m, true
		}
	}
}

type hedgeOutcome struct {
	starts     []time.Duration
	at         time.Duration
	v          int
	kind       string
	lastFailed int
}

// TestHedgeProperty runs Hedge on random scripts of successes, retryable
// and permanent failures, attempts that ignore their context, random
// delays and deadlines, in a synctest bubble, and checks it against
// hedgeModel: the same attempts at the same instants, the same result at
// the same instant, never a loser's value, every success that lost passed
// to OnDiscard exactly once, and nothing left running (synctest.Test fails
// if a goroutine of the bubble is stuck; goleak checks the rest).
func TestHedgeProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	ran, skipped, kinds := 0, 0, map[string]int{}
	defer func() { t.Logf("%d scenarios (%v), %d skipped for a tie", ran, kinds, skipped) }()
	for ran < 400 {
		var delays []time.Duration
		for range r.IntN(5) {
			delays = append(delays, time.Duration(r.IntN(60))*time.Millisecond)
		}
		script := make([]replica, 1+r.IntN(6))
		for i := range script {
			// Latencies with distinct microseconds, so that ties are rare.
			script[i].lat = time.Duration(1+r.IntN(150))*time.Millisecond + time.Duration(1+r.IntN(999))*time.Microsecond
			switch r.IntN(6) {
			case 0, 1:
				script[i].err = errBoom
			case 2:
				script[i].err = Permanent(errRejected)
			}
			script[i].deaf = r.IntN(4) == 0
		}
		var deadline time.Duration
		if r.IntN(3) == 0 {
			deadline = time.Duration(1+r.IntN(300))*time.Millisecond + 500*time.Nanosecond
		}
		want, ok := hedgeModel(delays, script, deadline)
		if !ok {
			skipped++
			continue
		}
		ran++
		kinds[want.kind]++
		name := fmt.Sprintf("%d: delays %v, deadline %v, script %+v", ran, delays, deadline, script)
		synctest.Test(t, func(t *testing.T) {
			ctx := t.Context()
			if deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, deadline)
				defer cancel()
			}
			rs := newReplicas(script...)
			v, err := Hedge(ctx, Delays(delays...), rs.fn, OnDiscard(rs.release))
			at := time.Since(rs.t0)
			assert.Equal(t, want.at, at, "%s: when Hedge returned", name)
			switch want.kind {
			case "success":
				assert.NoError(t, err, name)
				assert.Equal(t, want.v, v, "%s: the winner's value", name)
			case "permanent":
				assert.Same(t, errRejected, err, name)
				assert.Equal(t, want.v, v, name)
			case "exhausted":
				assert.ErrorIs(t, err, ErrExhausted, name)
				assert.ErrorIs(t, err, errBoom, name)
				assert.Equal(t, want.v, v, name)
			case "deadline":
				assert.ErrorIs(t, err, context.DeadlineExceeded, name)
				assert.Equal(t, want.lastFailed, v, "%s: the last failure's value", name)
			}
			time.Sleep(time.Hour) // every attempt that ignores its context returns
			rs.mu.Lock()
			defer rs.mu.Unlock()
			assert.Equal(t, want.starts, rs.starts, "%s: when the attempts started", name)
			var wantReleased []int
			for k := 1; k <= len(want.starts); k++ {
				rep := script[min(k, len(script))-1]
				if k != want.v && rep.err == nil && rep.deaf {
					wantReleased = append(wantReleased, k)
				}
			}
			assert.ElementsMatch(t, wantReleased, rs.released, "%s: the values released", name)
			assert.NotContains(t, rs.released, v, "%s: the value returned is never released", name)
		})
		if t.Failed() {
			return
		}
	}
}

// The tests from TestHedgeScheduleMisuse to TestHedgeAttemptTimeoutInterplay
// attack Hedge as an outside reviewer would: schedules that break the
// iterator contract, functions that panic or exit, contexts that end at
// awkward instants, schedules with no end, and many calls sharing a Budget
// and a Latency.

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
