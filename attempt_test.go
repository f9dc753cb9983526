package retry

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	errBoom = errors.New("boom")
	epoch   = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

// script returns an fn whose i-th call returns errs[i] (nil once they run
// out) and the call's 1-based number as its value.
func script(calls *int, errs ...error) func(context.Context) (int, error) {
	return func(context.Context) (int, error) {
		*calls++
		if i := *calls - 1; i < len(errs) {
			return *calls, errs[i]
		}
		return *calls, nil
	}
}

func repeat(err error, n int) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

func TestRetryOutcomes(t *testing.T) {
	sched := Exponential(100 * ms).Cap(2 * s1).Take(4)
	tests := []struct {
		name       string
		errs       []error
		opts       []Option
		wantCalls  int
		wantValue  int
		wantSleeps []time.Duration
		wantErr    func(t *testing.T, err error)
	}{
		{
			name:      "success at once",
			wantCalls: 1, wantValue: 1,
			wantErr: func(t *testing.T, err error) { assert.NoError(t, err) },
		},
		{
			name:      "two failures then success",
			errs:      repeat(errBoom, 2),
			wantCalls: 3, wantValue: 3, wantSleeps: []time.Duration{100 * ms, 200 * ms},
			wantErr: func(t *testing.T, err error) { assert.NoError(t, err) },
		},
		{
			name:      "exhausted returns the last value and error",
			errs:      repeat(errBoom, 10),
			wantCalls: 5, wantValue: 5, wantSleeps: []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms},
			wantErr: func(t *testing.T, err error) {
				assert.ErrorIs(t, err, ErrExhausted)
				assert.ErrorIs(t, err, errBoom)
				var re *Error
				require.ErrorAs(t, err, &re)
				assert.Equal(t, 5, re.Attempts)
				assert.Equal(t, errBoom, re.Last)
				assert.Equal(t, "retry: gave up after 5 attempts: schedule exhausted: last error: boom", err.Error())
			},
		},
		{
			name:      "permanent stops at once and drops the marker",
			errs:      []error{errBoom, Permanent(errBoom)},
			wantCalls: 2, wantValue: 2, wantSleeps: []time.Duration{100 * ms},
			wantErr: func(t *testing.T, err error) { assert.Same(t, errBoom, err) },
		},
		{
			name:      "wrapped permanent stops and keeps the wrapping",
			errs:      []error{fmt.Errorf("query: %w", Permanent(errBoom))},
			wantCalls: 1, wantValue: 1,
			wantErr: func(t *testing.T, err error) {
				assert.EqualError(t, err, "query: boom")
				assert.ErrorIs(t, err, errBoom)
				var re *Error
				assert.False(t, errors.As(err, &re))
			},
		},
		{
			name:      "permanent inside a join",
			errs:      []error{errors.Join(errors.New("a"), Permanent(errBoom))},
			wantCalls: 1, wantValue: 1,
			wantErr: func(t *testing.T, err error) { assert.ErrorIs(t, err, errBoom) },
		},
		{
			name:      "If rejects: returned as it is",
			errs:      []error{errBoom, context.Canceled},
			opts:      []Option{If(func(err error) bool { return errors.Is(err, errBoom) })},
			wantCalls: 2, wantValue: 2, wantSleeps: []time.Duration{100 * ms},
			wantErr: func(t *testing.T, err error) { assert.Same(t, context.Canceled, err) },
		},
		{
			name: "every If must accept",
			errs: repeat(errBoom, 3),
			opts: []Option{
				If(func(error) bool { return true }),
				If(func(error) bool { return false }),
			},
			wantCalls: 1, wantValue: 1,
			wantErr: func(t *testing.T, err error) { assert.Same(t, errBoom, err) },
		},
		{
			name:      "If sees the error without the marker",
			errs:      []error{RetryAfter(errBoom, s1), errBoom},
			opts:      []Option{If(func(err error) bool { return err == errBoom })},
			wantCalls: 3, wantValue: 3, wantSleeps: []time.Duration{s1, 200 * ms},
			wantErr: func(t *testing.T, err error) { assert.NoError(t, err) },
		},
		{
			name:      "Permanent beats If",
			errs:      []error{Permanent(errBoom)},
			opts:      []Option{If(func(error) bool { return true })},
			wantCalls: 1, wantValue: 1,
			wantErr: func(t *testing.T, err error) { assert.Same(t, errBoom, err) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := NewFakeClock(epoch)
			calls := 0
			v, err := Retry(t.Context(), sched, script(&calls, tt.errs...), append(tt.opts, WithClock(clock))...)
			assert.Equal(t, tt.wantCalls, calls)
			assert.Equal(t, tt.wantValue, v)
			assert.Equal(t, tt.wantSleeps, clock.Sleeps())
			tt.wantErr(t, err)
		})
	}
}

func TestDo(t *testing.T) {
	clock := NewFakeClock(epoch)
	calls := 0
	err := Do(t.Context(), Constant(ms).Take(2), func(context.Context) error {
		calls++
		return errBoom
	}, WithClock(clock))
	assert.ErrorIs(t, err, ErrExhausted)
	assert.ErrorIs(t, err, errBoom)
	assert.Equal(t, 3, calls)
	assert.Equal(t, []time.Duration{ms, ms}, clock.Sleeps())

	calls = 0
	assert.NoError(t, Do(t.Context(), Constant(ms), func(context.Context) error {
		if calls++; calls < 3 {
			return errBoom
		}
		return nil
	}, WithClock(clock)))
	assert.Equal(t, 3, calls)
}

func TestEmptyScheduleMakesOneAttempt(t *testing.T) {
	calls := 0
	_, err := Retry(t.Context(), Delays(), script(&calls, errBoom))
	assert.Equal(t, 1, calls)
	assert.ErrorIs(t, err, ErrExhausted)
	assert.EqualError(t, err, "retry: gave up after 1 attempt: schedule exhausted: last error: boom")
}

func TestContext(t *testing.T) {
	t.Run("done before the first attempt", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		calls := 0
		v, err := Retry(ctx, Constant(ms), script(&calls))
		assert.Zero(t, calls)
		assert.Zero(t, v)
		assert.ErrorIs(t, err, context.Canceled)
		var re *Error
		require.ErrorAs(t, err, &re)
		assert.Zero(t, re.Attempts)
		assert.Nil(t, re.Last)
		assert.Equal(t, "retry: gave up after 0 attempts: context canceled", err.Error())
		assert.ErrorIs(t, Do(ctx, Constant(ms), func(context.Context) error { calls++; return nil }), context.Canceled)
		assert.Zero(t, calls)
	})
	t.Run("cancelled during an attempt: no further attempt", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		calls := 0
		_, err := Retry(ctx, Constant(ms), func(context.Context) (int, error) {
			calls++
			cancel()
			return 0, errBoom
		}, If(IsTransientForTest))
		assert.Equal(t, 1, calls)
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, errBoom)
	})
	t.Run("cause is reported", func(t *testing.T) {
		errShutdown := errors.New("shutting down")
		ctx, cancel := context.WithCancelCause(t.Context())
		calls := 0
		_, err := Retry(ctx, Constant(ms), func(context.Context) (int, error) {
			calls++
			cancel(errShutdown)
			return 0, errBoom
		})
		assert.ErrorIs(t, err, errShutdown)
		assert.ErrorIs(t, err, errBoom)
	})
	t.Run("a wait past the deadline is not started", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		clock := NewFakeClock(epoch)
		calls := 0
		_, err := Retry(ctx, Constant(2*time.Hour), script(&calls, repeat(errBoom, 5)...), WithClock(clock))
		assert.Equal(t, 1, calls)
		assert.Empty(t, clock.Sleeps())
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, errBoom)
		assert.NoError(t, ctx.Err(), "gave up long before the deadline")
	})
	t.Run("the deadline is tracked on a fake clock", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		clock := NewFakeClock(epoch)
		calls := 0
		_, err := Retry(ctx, Constant(25*time.Minute), script(&calls, repeat(errBoom, 9)...), WithClock(clock))
		assert.Equal(t, 3, calls, "attempts at 0, 25 and 50 minutes; the next would start after the hour")
		assert.Equal(t, []time.Duration{25 * time.Minute, 25 * time.Minute}, clock.Sleeps())
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("the deadline with the real clock", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*s1)
			defer cancel()
			start := time.Now()
			calls := 0
			_, err := Retry(ctx, Exponential(s1), script(&calls, repeat(errBoom, 9)...))
			assert.Equal(t, 4, calls, "attempts at 0, 1, 3 and 7 s; the next wait of 8 s would end at 15 s")
			assert.Equal(t, 7*s1, time.Since(start))
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.ErrorIs(t, err, errBoom)
		})
	})
	t.Run("a custom clock that fails its sleep", func(t *testing.T) {
		errClock := errors.New("clock broke")
		calls := 0
		_, err := Retry(t.Context(), Constant(ms), script(&calls, repeat(errBoom, 3)...), WithClock(brokenClock{errClock}))
		assert.Equal(t, 1, calls)
		assert.ErrorIs(t, err, errClock)
		assert.ErrorIs(t, err, errBoom)
	})
}

// IsTransientForTest accepts everything: it stands in for a classifier that
// would retry, to show that a done context wins.
func IsTransientForTest(error) bool { return true }

type brokenClock struct{ err error }

func (brokenClock) Now() time.Time                                     { return epoch }
func (c brokenClock) Sleep(ctx context.Context, _ time.Duration) error { return c.err }

func TestRealClock(t *testing.T) {
	t.Run("Exponential(1s).Take(3) takes 7 s of bubble time", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			calls := 0
			var at []time.Duration
			_, err := Retry(t.Context(), Exponential(s1).Take(3), func(context.Context) (int, error) {
				calls++
				at = append(at, time.Since(start))
				return 0, errBoom
			})
			assert.Equal(t, 7*s1, time.Since(start))
			assert.Equal(t, []time.Duration{0, s1, 3 * s1, 7 * s1}, at)
			assert.Equal(t, 4, calls)
			assert.ErrorIs(t, err, ErrExhausted)
		})
	})
	t.Run("cancel during a wait returns at once and leaves nothing running", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(1500*ms, cancel)
			start := time.Now()
			calls := 0
			_, err := Retry(ctx, Constant(time.Hour), script(&calls, repeat(errBoom, 9)...))
			assert.Equal(t, 1500*ms, time.Since(start))
			assert.Equal(t, 1, calls)
			assert.ErrorIs(t, err, context.Canceled)
			// synctest.Test fails if a goroutine or timer is left blocked in the
			// bubble; Wait also proves nothing else is running.
			synctest.Wait()
		})
	})
	t.Run("zero delays do not touch the timer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			calls := 0
			_, err := Retry(t.Context(), Constant(0).Take(5), script(&calls, repeat(errBoom, 9)...))
			assert.Equal(t, 6, calls)
			assert.Zero(t, time.Since(start))
			assert.ErrorIs(t, err, ErrExhausted)
		})
	})
	t.Run("a panic in fn propagates", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			calls := 0
			assert.PanicsWithValue(t, "kaboom", func() {
				_, _ = Retry(t.Context(), Constant(s1), func(context.Context) (int, error) {
					if calls++; calls == 3 {
						panic("kaboom")
					}
					return 0, errBoom
				})
			})
			assert.Equal(t, 3, calls)
		})
	})
}

func TestOnRetry(t *testing.T) {
	clock := NewFakeClock(epoch)
	var got []Attempt
	var order []string
	calls := 0
	errs := []error{errBoom, RetryAfter(errBoom, 5*s1), errBoom}
	_, err := Retry(t.Context(), Constant(s1).Take(2), func(ctx context.Context) (int, error) {
		clock.Advance(100 * ms) // each attempt takes 100 ms
		calls++
		return 0, errs[calls-1]
	}, WithClock(clock),
		OnRetry(func(a Attempt) { got = append(got, a); order = append(order, "first") }),
		OnRetry(func(Attempt) { order = append(order, "second") }))
	assert.ErrorIs(t, err, ErrExhausted)
	assert.Equal(t, 3, calls)
	assert.Equal(t, []Attempt{
		{Number: 1, Err: errBoom, Delay: s1, Elapsed: 100 * ms},
		{Number: 2, Err: errBoom, Delay: 5 * s1, Elapsed: 1200 * ms},
	}, got, "never after the final attempt; Err without the marker; Delay is the wait used")
	assert.Equal(t, []string{"first", "second", "first", "second"}, order)
}

func TestOptionsCompose(t *testing.T) {
	t.Run("a later WithClock replaces an earlier one", func(t *testing.T) {
		a, b := NewFakeClock(epoch), NewFakeClock(epoch)
		calls := 0
		_, _ = Retry(t.Context(), Constant(ms).Take(1), script(&calls, errBoom), WithClock(a), WithClock(b))
		assert.Empty(t, a.Sleeps())
		assert.Equal(t, []time.Duration{ms}, b.Sleeps())
	})
	t.Run("the zero Option does nothing", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		calls := 0
		_, _ = Retry(t.Context(), Constant(ms).Take(1), script(&calls, errBoom), WithClock(clock), Option{})
		assert.Equal(t, []time.Duration{ms}, clock.Sleeps())
	})
	t.Run("WithClock(nil) is the real clock", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			calls := 0
			_, _ = Retry(t.Context(), Constant(s1).Take(1), script(&calls, errBoom), WithClock(NewFakeClock(epoch)), WithClock(nil))
			assert.Equal(t, s1, time.Since(start))
		})
	})
}

func TestAttemptTimeout(t *testing.T) {
	t.Run("an attempt's own timeout is retried, even past If", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			calls := 0
			var ctxs []context.Context
			v, err := Retry(t.Context(), Constant(s1), func(ctx context.Context) (string, error) {
				calls++
				ctxs = append(ctxs, ctx)
				if calls < 3 {
					<-ctx.Done() // hang until the attempt times out
					return "", ctx.Err()
				}
				return "ok", nil
			}, AttemptTimeout(2*s1), If(func(error) bool { return false }))
			require.NoError(t, err)
			assert.Equal(t, "ok", v)
			assert.Equal(t, 3, calls)
			for _, ctx := range ctxs {
				assert.Error(t, ctx.Err(), "each attempt's context is released when fn returns")
			}
		})
	})
	t.Run("the deadline is d after the attempt starts", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var left []time.Duration
			calls := 0
			_, _ = Retry(t.Context(), Constant(s1).Take(1), func(ctx context.Context) (int, error) {
				calls++
				dl, ok := ctx.Deadline()
				require.True(t, ok)
				left = append(left, time.Until(dl))
				return 0, errBoom
			}, AttemptTimeout(3*s1))
			assert.Equal(t, []time.Duration{3 * s1, 3 * s1}, left)
		})
	})
	t.Run("a done parent is never retried", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*s1)
			defer cancel()
			calls := 0
			_, err := Retry(ctx, Constant(0), func(ctx context.Context) (int, error) {
				calls++
				<-ctx.Done()
				return 0, ctx.Err()
			}, AttemptTimeout(5*s1))
			assert.Equal(t, 1, calls)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
		})
	})
	t.Run("Permanent still wins", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			calls := 0
			_, err := Retry(t.Context(), Constant(0), func(ctx context.Context) (int, error) {
				calls++
				<-ctx.Done()
				return 0, Permanent(ctx.Err())
			}, AttemptTimeout(s1))
			assert.Equal(t, 1, calls)
			assert.Equal(t, context.DeadlineExceeded, err)
		})
	})
	t.Run("Do too", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			calls := 0
			err := Do(t.Context(), Constant(0).Take(2), func(ctx context.Context) error {
				calls++
				<-ctx.Done()
				return ctx.Err()
			}, AttemptTimeout(s1))
			assert.Equal(t, 3, calls)
			assert.ErrorIs(t, err, ErrExhausted)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
		})
	})
}

// countingClock is a Clock that records nothing, so that memory and
// allocation tests measure Retry alone.
type countingClock struct{ sleeps atomic.Int64 }

func (*countingClock) Now() time.Time { return epoch }
func (c *countingClock) Sleep(ctx context.Context, _ time.Duration) error {
	c.sleeps.Add(1)
	return ctx.Err()
}

// TestMemoryStaysFlat makes a million attempts, each failing with a fresh
// 1 KiB error, and checks that the heap does not grow: Retry keeps only the
// last error.
func TestMemoryStaysFlat(t *testing.T) {
	n := 1_000_000
	if testing.Short() || raceEnabled {
		n = 100_000
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var early, late uint64
	calls := 0
	_, err := Retry(t.Context(), Constant(0).Take(n), func(context.Context) (int, error) {
		calls++
		switch calls {
		case 1000:
			early = heap()
		case n:
			late = heap()
		}
		return 0, &bigError{payload: make([]byte, 1024)}
	}, WithClock(&countingClock{}), OnRetry(func(Attempt) {}))
	assert.ErrorIs(t, err, ErrExhausted)
	assert.Equal(t, n+1, calls)
	assert.Less(t, int64(late)-int64(early), int64(256<<10), "heap grew from %d to %d bytes", early, late)
}

type bigError struct{ payload []byte }

func (e *bigError) Error() string { return fmt.Sprintf("big error of %d bytes", len(e.payload)) }

func TestErrorUnwrap(t *testing.T) {
	calls := 0
	_, err := Retry(t.Context(), Delays(), script(&calls, errBoom))
	var re *Error
	require.ErrorAs(t, err, &re)
	assert.Equal(t, []error{ErrExhausted, errBoom}, re.Unwrap())
	t.Run("an Error made by hand unwraps to Last", func(t *testing.T) {
		assert.ErrorIs(t, &Error{Attempts: 2, Last: errBoom}, errBoom)
		assert.Nil(t, (&Error{}).Unwrap())
	})
	t.Run("no attempt: only the reason", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := Retry(ctx, Delays(), script(&calls))
		require.ErrorAs(t, err, &re)
		assert.Equal(t, []error{context.Canceled}, re.Unwrap())
	})
}

// countingNow is a Clock that counts its readings.
type countingNow struct {
	countingClock
	reads int
}

func (c *countingNow) Now() time.Time { c.reads++; return epoch }

func TestRetryAfterReadsNoClock(t *testing.T) {
	clock := &countingNow{}
	calls := 0
	_, _ = Retry(t.Context(), Constant(0).Take(1), script(&calls, RetryAfter(errBoom, s1), errBoom), WithClock(clock))
	assert.Equal(t, 2, calls)
	assert.Zero(t, clock.reads, "a relative pushback needs no clock reading")
	calls = 0
	_, _ = Retry(t.Context(), Constant(0).Take(1), script(&calls, RetryAt(errBoom, epoch.Add(s1)), errBoom), WithClock(clock))
	assert.Equal(t, 2, calls)
	assert.Equal(t, 1, clock.reads, "RetryAt reads the clock once")
}
