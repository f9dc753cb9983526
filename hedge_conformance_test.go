package retry

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests in this file are other libraries' hedging tests and the
// hedging rules of gRPC's A6 proposal, translated to Hedge: same scenario,
// same expected outcome, in Hedge's terms. Where Hedge means something else
// on purpose, the test says so and checks what Hedge does.

// hedgeLog records, for one Hedge call, what the attempts saw.
type hedgeLog struct {
	mu      sync.Mutex
	t0      time.Time
	starts  []time.Duration
	causes  map[int]error // attempts that saw their context end, and why
	hooks   []Attempt
	release []int
}

func newHedgeLog() *hedgeLog { return &hedgeLog{t0: time.Now(), causes: map[int]error{}} }

// start records an attempt's start and returns its 1-based number.
func (l *hedgeLog) start() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.starts = append(l.starts, time.Since(l.t0))
	return len(l.starts)
}

// wait returns after d, or with the context's error once it ends, which it
// records for attempt n.
func (l *hedgeLog) wait(ctx context.Context, n int, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		l.causes[n] = context.Cause(ctx)
		l.mu.Unlock()
		return ctx.Err()
	}
}

func (l *hedgeLog) startTimes() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.starts)
}

func (l *hedgeLog) hookList() []Attempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.hooks)
}

func (l *hedgeLog) causesSeen() map[int]error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.causes)
}

func (l *hedgeLog) hook(a Attempt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hooks = append(l.hooks, a)
}

func (l *hedgeLog) released(v int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.release = append(l.release, v)
}

// TestHedgeFailsafeGo translates failsafe-go's hedge policy tests
// (test/hedgepolicy_test.go, v0.9.8). failsafe-go's policy takes a delay and
// a number of hedges, which is Constant(delay).Take(hedges); it treats every
// result as final unless told otherwise, where Hedge races failures on.
// hedgeCase is one scenario of a translated suite: a Hedge call on s under
// testing/synctest, whose attempts a hedgeLog records.
type hedgeCase[T any] struct {
	name    string
	timeout time.Duration // the caller's deadline, from the call's start; 0 for none
	s       Schedule
	// attempt is the body of attempt n (from 1), which the log has already
	// seen start.
	attempt func(ctx context.Context, l *hedgeLog, n int) (T, error)
	opts    func(l *hedgeLog) []Option // nil for none
	check   func(t *testing.T, l *hedgeLog, v T, err error)
}

// runHedgeCases runs each case as a subtest named for it, in a synctest
// bubble of its own.
func runHedgeCases[T any](t *testing.T, cases []hedgeCase[T]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newHedgeLog()
				ctx := t.Context()
				if tc.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.timeout)
					defer cancel()
				}
				var opts []Option
				if tc.opts != nil {
					opts = tc.opts(l)
				}
				v, err := Hedge(ctx, tc.s, func(ctx context.Context) (T, error) {
					return tc.attempt(ctx, l, l.start())
				}, opts...)
				tc.check(t, l, v, err)
			})
		})
	}
}

// hooked is the options of a case whose OnRetry hook the log records.
func hooked(l *hedgeLog) []Option { return []Option{OnRetry(l.hook)} }

// TestHedgeFailsafeGo translates failsafe-go's hedge policy tests
// (test/hedgepolicy_test.go, v0.9.8). failsafe-go's policy takes a delay and
// a number of hedges, which is Constant(delay).Take(hedges); it treats every
// result as final unless told otherwise, where Hedge races failures on.
func TestHedgeFailsafeGo(t *testing.T) {
	const ms = time.Millisecond
	runHedgeCases(t, []hedgeCase[int]{{
		name: "should not hedge when delay not exceeded",
		s:    Constant(time.Second).Take(1),
		attempt: func(ctx context.Context, l *hedgeLog, n int) (int, error) {
			return n, nil
		},
		opts: hooked,
		check: func(t *testing.T, l *hedgeLog, v int, err error) {
			require.NoError(t, err)
			assert.Equal(t, 1, v)
			assert.Len(t, l.startTimes(), 1)
			assert.Empty(t, l.hookList(), "no hedge")
		},
	}, {
		// The first attempt answers after 100 ms; the hedges, at 10 ms, fail
		// at once: each failure starts the next, and the first attempt wins.
		name: "should hedge when delay exceeded",
		s:    Constant(10 * ms).Take(2),
		attempt: func(ctx context.Context, l *hedgeLog, n int) (int, error) {
			if n > 1 {
				return n, errBoom
			}
			return n, l.wait(ctx, n, 100*ms)
		},
		opts: hooked,
		check: func(t *testing.T, l *hedgeLog, v int, err error) {
			require.NoError(t, err)
			assert.Equal(t, 1, v)
			assert.Equal(t, []time.Duration{0, 10 * ms, 10 * ms}, l.startTimes())
			assert.Len(t, l.hookList(), 2, "two hedges")
			assert.Equal(t, 100*ms, time.Since(l.t0))
		},
	}, {
		name: "all hedges used",
		s:    Constant(20 * ms).Take(2),
		attempt: func(ctx context.Context, l *hedgeLog, n int) (int, error) {
			return n, l.wait(ctx, n, 100*ms)
		},
		opts: hooked,
		check: func(t *testing.T, l *hedgeLog, v int, err error) {
			require.NoError(t, err)
			assert.Equal(t, 1, v)
			assert.Equal(t, []time.Duration{0, 20 * ms, 40 * ms}, l.startTimes())
			assert.Len(t, l.hookList(), 2)
			synctest.Wait()
			assert.Equal(t, map[int]error{2: ErrHedgeLost, 3: ErrHedgeLost}, l.causesSeen())
		},
	}, {
		// A delay of 0 starts every attempt at once; failsafe-go's test
		// cancels on a chosen result, Hedge on the first success.
		name: "backup executions",
		s:    Constant(0).Take(2),
		attempt: func(ctx context.Context, l *hedgeLog, n int) (int, error) {
			if err := l.wait(ctx, n, time.Duration(10-n)*ms); err != nil {
				return n, err
			}
			if n != 3 {
				return n, errBoom
			}
			return n, nil
		},
		check: func(t *testing.T, l *hedgeLog, v int, err error) {
			require.NoError(t, err)
			assert.Equal(t, 3, v)
			assert.Equal(t, []time.Duration{0, 0, 0}, l.startTimes())
			assert.Equal(t, 7*ms, time.Since(l.t0))
		},
	}, {
		// failsafe-go stops hedging on a negative delay; Hedge counts it as
		// 0, as Retry does.
		name: "negative delay: hedged at once, not stopped",
		s: Schedule(func(yield func(time.Duration) bool) {
			for range 2 {
				if !yield(-1) {
					return
				}
			}
		}),
		attempt: func(ctx context.Context, l *hedgeLog, n int) (int, error) {
			return n, l.wait(ctx, n, time.Duration(10-n)*ms)
		},
		check: func(t *testing.T, l *hedgeLog, v int, err error) {
			require.NoError(t, err)
			assert.Equal(t, 3, v)
			assert.Equal(t, []time.Duration{0, 0, 0}, l.startTimes())
		},
	}})
	t.Run("should not hedge with quantile during warmup", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lat := NewLatency()
			s := lat.Quantile(0.95).Take(1)
			var hooks atomic.Int32
			for range latWarmup - 1 {
				_, err := Hedge(t.Context(), s, func(ctx context.Context) (int, error) {
					time.Sleep(5 * ms)
					return 1, nil
				}, WithLatency(lat), OnRetry(func(Attempt) { hooks.Add(1) }))
				require.NoError(t, err)
			}
			assert.Zero(t, hooks.Load())
		})
	})
	t.Run("should hedge with quantile", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lat := NewLatency()
			s := lat.Quantile(0.95).Take(1)
			for range latWarmup + 25 {
				_, err := Hedge(t.Context(), s, func(ctx context.Context) (int, error) {
					time.Sleep(5 * ms)
					return 1, nil
				}, WithLatency(lat))
				require.NoError(t, err)
			}
			var calls atomic.Int32
			t0 := time.Now()
			v, err := Hedge(t.Context(), s, func(ctx context.Context) (int, error) {
				if calls.Add(1) == 2 {
					return 2, nil
				}
				select {
				case <-time.After(200 * ms):
					return 1, nil
				case <-ctx.Done():
					return 0, ctx.Err()
				}
			}, WithLatency(lat))
			require.NoError(t, err)
			assert.Equal(t, 2, v, "the hedge, started at the p95, wins")
			assert.Equal(t, latValue(latBucket(5*ms)), time.Since(t0))
		})
	})
}

// TestHedgePolly translates Polly's hedging tests
// (test/Polly.Core.Tests/Hedging/HedgingResilienceStrategyTests.cs).
// Polly's MaxHedgedAttempts n and HedgingDelay d are Constant(d).Take(n).
func TestHedgePolly(t *testing.T) {
	const sec = time.Second
	t.Run("Execute_CancellationRequested_Throws", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		calls := 0
		_, err := Hedge(ctx, Constant(sec).Take(2), func(context.Context) (string, error) { calls++; return "dummy", nil })
		assert.ErrorIs(t, err, context.Canceled)
		assert.Zero(t, calls)
	})
	runHedgeCases(t, []hedgeCase[string]{{
		name: "ExecuteAsync_EnsureHedgedTasksCancelled_Ok",
		s:    Constant(sec).Take(2),
		attempt: func(ctx context.Context, l *hedgeLog, n int) (string, error) {
			if n == 1 {
				return "Success", l.wait(ctx, n, time.Hour)
			}
			return "Failure", l.wait(ctx, n, 24*time.Hour)
		},
		check: func(t *testing.T, l *hedgeLog, v string, err error) {
			require.NoError(t, err)
			assert.Equal(t, "Success", v)
			synctest.Wait()
			assert.Equal(t, map[int]error{2: ErrHedgeLost, 3: ErrHedgeLost}, l.causesSeen())
		},
	}, {
		name: "ExecuteAsync_EnsurePrimaryTaskCancelled_Ok",
		s:    Constant(sec).Take(1),
		attempt: func(ctx context.Context, l *hedgeLog, n int) (string, error) {
			if n == 1 {
				return "primary", l.wait(ctx, n, 24*time.Hour)
			}
			return "secondary", l.wait(ctx, n, time.Hour)
		},
		check: func(t *testing.T, l *hedgeLog, v string, err error) {
			require.NoError(t, err)
			assert.Equal(t, "secondary", v)
			assert.Equal(t, sec+time.Hour, time.Since(l.t0))
			synctest.Wait()
			assert.Equal(t, map[int]error{1: ErrHedgeLost}, l.causesSeen())
		},
	}, {
		// OnHedging's HasOutcome is false when the delay triggered the
		// hedge: Attempt.Err is nil.
		name: "ExecuteAsync_EnsureOnHedgingCalled",
		s:    Constant(sec).Take(2),
		attempt: func(ctx context.Context, l *hedgeLog, n int) (string, error) {
			if n == 2 {
				return "Failure", errBoom
			}
			return "Success", l.wait(ctx, n, 24*time.Hour)
		},
		opts: hooked,
		check: func(t *testing.T, l *hedgeLog, _ string, err error) {
			require.NoError(t, err)
			assert.Equal(t, []Attempt{
				{Number: 1, Err: nil, Delay: sec, Elapsed: sec},
				{Number: 2, Err: errBoom, Delay: sec, Elapsed: sec},
			}, l.hookList())
		},
	}})
	runHedgeCases(t, []hedgeCase[int]{{
		// The primary ignores cancellation and returns a value after the
		// secondary won: that value is disposed of, the winner's is not.
		name: "ExecuteAsync_EnsureDiscardedResultDisposed",
		s:    Constant(sec).Take(1),
		attempt: func(ctx context.Context, l *hedgeLog, n int) (int, error) {
			if n == 1 {
				time.Sleep(24 * time.Hour)
			}
			return n, nil
		},
		opts: func(l *hedgeLog) []Option { return []Option{OnDiscard(l.released)} },
		check: func(t *testing.T, l *hedgeLog, v int, err error) {
			require.NoError(t, err)
			assert.Equal(t, 2, v)
			time.Sleep(48 * time.Hour)
			l.mu.Lock()
			defer l.mu.Unlock()
			assert.Equal(t, []int{1}, l.release)
		},
	}, {
		// Polly's HedgingDelay = Timeout.InfiniteTimeSpan hedges only when
		// an attempt fails: a delay that never elapses.
		name: "hedging only on failure (infinite delay)",
		s:    Constant(maxDuration).Take(2),
		attempt: func(ctx context.Context, l *hedgeLog, n int) (int, error) {
			if err := l.wait(ctx, n, time.Hour); err != nil {
				return n, err
			}
			if n < 3 {
				return n, errBoom
			}
			return n, nil
		},
		check: func(t *testing.T, l *hedgeLog, v int, err error) {
			require.NoError(t, err)
			assert.Equal(t, 3, v)
			assert.Equal(t, []time.Duration{0, time.Hour, 2 * time.Hour}, l.startTimes())
		},
	}})
	t.Run("ExecuteAsync_EveryHedgedTaskShouldHaveDifferentContexts", func(t *testing.T) {
		// Polly gives each attempt its own context; Hedge gives them one
		// context derived from the caller's (their own, with
		// AttemptTimeout), which carries the caller's values and can be
		// cancelled, which is what the test checks.
		type key struct{}
		synctest.Test(t, func(t *testing.T) {
			ctx := context.WithValue(t.Context(), key{}, "before")
			var seen sync.Map
			_, err := Hedge(ctx, Constant(sec).Take(1), func(ctx context.Context) (string, error) {
				seen.Store(ctx, ctx.Value(key{}))
				if ctx.Done() == nil {
					return "", errors.New("cannot be cancelled")
				}
				<-ctx.Done()
				return "", ctx.Err()
			}, AttemptTimeout(1500*time.Millisecond))
			assert.ErrorIs(t, err, ErrExhausted)
			n := 0
			seen.Range(func(k, v any) bool {
				n++
				assert.Equal(t, "before", v)
				return true
			})
			assert.Equal(t, 2, n, "two distinct contexts with AttemptTimeout")
		})
	})
	t.Run("MaxHedgedAttempts", func(t *testing.T) {
		for _, n := range []int{1, 2, 5} {
			synctest.Test(t, func(t *testing.T) {
				l := newHedgeLog()
				_, err := Hedge(t.Context(), Constant(sec).Take(n), func(ctx context.Context) (string, error) {
					return "", l.wait(ctx, l.start(), time.Hour)
				})
				require.NoError(t, err)
				assert.Len(t, l.startTimes(), n+1)
			})
		}
	})
}

// TestHedgeGRPCA6 checks the hedging rules of gRPC's A6 proposal
// ("gRPC Retry Design"), with maxAttempts n and hedgingDelay d as
// Constant(d).Take(n-1), nonFatalStatusCodes as If, retry throttling as a
// Budget and server pushback as RetryAfter.
func TestHedgeGRPCA6(t *testing.T) {
	const ms = time.Millisecond
	errUnavailable := errors.New("UNAVAILABLE")
	errInvalid := errors.New("INVALID_ARGUMENT")
	nonFatal := If(func(err error) bool { return errors.Is(err, errUnavailable) })
	nonFatalOnly := func(*hedgeLog) []Option { return []Option{nonFatal} }
	runHedgeCases(t, []hedgeCase[int]{{
		// "after 1ms there would be one outstanding RPC (the original),
		// after 501ms there would be two […], after 1501ms […] four."
		name:    "hedges at hedgingDelay intervals, up to maxAttempts",
		timeout: 3 * time.Second,
		s:       Constant(500 * ms).Take(3),
		attempt: func(ctx context.Context, l *hedgeLog, n int) (int, error) {
			return n, l.wait(ctx, n, time.Hour)
		},
		opts: nonFatalOnly,
		check: func(t *testing.T, l *hedgeLog, _ int, err error) {
			assert.ErrorIs(t, err, context.DeadlineExceeded, "the deadline applies to the whole chain")
			assert.Equal(t, []time.Duration{0, 500 * ms, 1000 * ms, 1500 * ms}, l.startTimes())
		},
	}, {
		name: "hedgingDelay 0 sends maxAttempts at once",
		s:    Constant(0).Take(3),
		attempt: func(ctx context.Context, l *hedgeLog, n int) (int, error) {
			return n, l.wait(ctx, n, time.Duration(n)*ms)
		},
		opts: nonFatalOnly,
		check: func(t *testing.T, l *hedgeLog, _ int, err error) {
			require.NoError(t, err)
			assert.Equal(t, []time.Duration{0, 0, 0, 0}, l.startTimes())
		},
	}, {
		name: "OK cancels previous and pending hedges",
		s:    Constant(500 * ms).Take(3),
		attempt: func(ctx context.Context, l *hedgeLog, n int) (int, error) {
			lat := time.Hour
			if n == 2 {
				lat = 100 * ms
			}
			return n, l.wait(ctx, n, lat)
		},
		opts: nonFatalOnly,
		check: func(t *testing.T, l *hedgeLog, v int, err error) {
			require.NoError(t, err)
			assert.Equal(t, 2, v)
			assert.Equal(t, 600*ms, time.Since(l.t0))
			synctest.Wait()
			assert.Equal(t, map[int]error{1: ErrHedgeLost}, l.causesSeen(), "no pending hedge is sent")
			assert.Len(t, l.startTimes(), 2)
		},
	}, {
		name:    "non-fatal: the next hedge at once, later ones at hedgingDelay from it",
		timeout: 2 * time.Second,
		s:       Constant(500 * ms).Take(3),
		attempt: func(ctx context.Context, l *hedgeLog, n int) (int, error) {
			if n == 1 {
				time.Sleep(100 * ms)
				return n, errUnavailable
			}
			return n, l.wait(ctx, n, time.Hour)
		},
		opts: nonFatalOnly,
		check: func(t *testing.T, l *hedgeLog, _ int, err error) {
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, []time.Duration{0, 100 * ms, 600 * ms, 1100 * ms}, l.startTimes())
		},
	}, {
		name: "fatal: cancel the others and return the error",
		s:    Constant(500 * ms).Take(3),
		attempt: func(ctx context.Context, l *hedgeLog, n int) (int, error) {
			if n == 2 {
				time.Sleep(100 * ms)
				return n, errInvalid
			}
			return n, l.wait(ctx, n, time.Hour)
		},
		opts: nonFatalOnly,
		check: func(t *testing.T, l *hedgeLog, v int, err error) {
			assert.Same(t, errInvalid, err)
			assert.Equal(t, 2, v)
			assert.Equal(t, 600*ms, time.Since(l.t0))
			synctest.Wait()
			assert.Equal(t, map[int]error{1: ErrHedgeLost}, l.causesSeen())
		},
	}, {
		name: "throttled: no more hedges, the outstanding RPCs go on",
		s:    Constant(100 * ms).Take(3),
		attempt: func(ctx context.Context, l *hedgeLog, n int) (int, error) {
			return n, l.wait(ctx, n, 350*ms)
		},
		opts: func(*hedgeLog) []Option { return []Option{WithBudget(NewBudget(0, 1))} },
		check: func(t *testing.T, l *hedgeLog, v int, err error) {
			require.NoError(t, err)
			assert.Equal(t, 1, v)
			assert.Equal(t, []time.Duration{0, 100 * ms}, l.startTimes())
		},
	}, {
		name:    "pushback: retry in n ms: the next hedge after n, later ones at n + hedgingDelay",
		timeout: 2 * time.Second,
		s:       Constant(500 * ms).Take(3),
		attempt: func(ctx context.Context, l *hedgeLog, n int) (int, error) {
			if n == 2 {
				time.Sleep(100 * ms)
				return n, RetryAfter(errUnavailable, 200*ms)
			}
			return n, l.wait(ctx, n, time.Hour)
		},
		opts: func(l *hedgeLog) []Option { return []Option{nonFatal, OnRetry(l.hook)} },
		check: func(t *testing.T, l *hedgeLog, _ int, err error) {
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			// 2 fails at 600 ms asking for 200 ms: 3 at 800, 4 at 1300.
			assert.Equal(t, []time.Duration{0, 500 * ms, 800 * ms, 1300 * ms}, l.startTimes())
			require.Len(t, l.hookList(), 3)
			assert.Equal(t, Attempt{Number: 2, Err: errUnavailable, Delay: 200 * ms, Elapsed: 800 * ms}, l.hookList()[1])
		},
	}, {
		name: "pushback is bounded by MaxPushback",
		s:    Constant(time.Hour).Take(1),
		attempt: func(ctx context.Context, l *hedgeLog, n int) (int, error) {
			if n == 1 {
				return n, RetryAfter(errUnavailable, time.Hour)
			}
			return n, nil
		},
		opts: func(*hedgeLog) []Option { return []Option{MaxPushback(50 * ms)} },
		check: func(t *testing.T, l *hedgeLog, v int, err error) {
			require.NoError(t, err)
			assert.Equal(t, 2, v)
			assert.Equal(t, []time.Duration{0, 50 * ms}, l.startTimes())
		},
	}, {
		name: "a success during the pushback wins",
		s:    Constant(100 * ms).Take(3),
		attempt: func(ctx context.Context, l *hedgeLog, n int) (int, error) {
			if n == 2 {
				return n, RetryAt(errUnavailable, l.t0.Add(time.Hour))
			}
			return n, l.wait(ctx, n, 300*ms)
		},
		check: func(t *testing.T, l *hedgeLog, v int, err error) {
			require.NoError(t, err)
			assert.Equal(t, 1, v)
			assert.Equal(t, []time.Duration{0, 100 * ms}, l.startTimes())
			assert.Equal(t, 300*ms, time.Since(l.t0))
		},
	}})
	t.Run("all fail with non-fatal codes: the last status", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			errs := []error{errors.New("UNAVAILABLE 1"), errors.New("UNAVAILABLE 2"), errors.New("UNAVAILABLE 3")}
			lats := []time.Duration{400 * ms, 100 * ms, 150 * ms} // they end at 400, 110 and 170 ms
			l := newHedgeLog()
			v, err := Hedge(t.Context(), Constant(10*ms).Take(2), func(ctx context.Context) (int, error) {
				n := l.start()
				time.Sleep(lats[n-1])
				return n, errs[n-1]
			})
			assert.ErrorIs(t, err, ErrExhausted)
			assert.ErrorIs(t, err, errs[0], "the attempt that failed last")
			assert.Equal(t, 1, v)
			assert.Equal(t, 400*ms, time.Since(l.t0))
		})
	})
	t.Run("pushback: do not retry: no more hedges, the outstanding RPCs go on", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newHedgeLog()
			v, err := Hedge(t.Context(), Constant(100*ms).Take(3), func(ctx context.Context) (int, error) {
				n := l.start()
				if n == 2 {
					time.Sleep(10 * ms)
					return n, RetryAfter(errUnavailable, -1)
				}
				return n, l.wait(ctx, n, 300*ms)
			}, nonFatal)
			require.NoError(t, err)
			assert.Equal(t, 1, v, "the original RPC still wins")
			assert.Equal(t, []time.Duration{0, 100 * ms}, l.startTimes())
		})
		synctest.Test(t, func(t *testing.T) {
			l := newHedgeLog()
			errStop := fmt.Errorf("%w, do not retry", errUnavailable)
			v, err := Hedge(t.Context(), Constant(100*ms).Take(3), func(ctx context.Context) (int, error) {
				n := l.start()
				if n == 2 {
					time.Sleep(10 * ms)
					return n, RetryAfter(errStop, -1)
				}
				time.Sleep(300 * ms)
				return n, errUnavailable
			}, nonFatal)
			assert.Same(t, errStop, err, "once all have failed, the refusal, as it is")
			assert.Equal(t, 2, v)
			assert.Equal(t, 300*ms, time.Since(l.t0))
		})
	})
}
