package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-b8c8f69d/retry"
)

// The essential behaviour tests of the other retry libraries' own suites,
// translated to this package's API: cenkalti/backoff v5 (backoff_test.go,
// exponential_test.go, retry_test.go), avast/retry-go v4 and v5
// (retry_test.go), sethvargo/go-retry (backoff_*_test.go), failsafe-go
// (test/retrypolicy_test.go) and k8s.io/apimachinery's wait.Backoff. Where
// this package behaves differently on purpose, the test pins our behaviour
// and says what the peer does; docs/MIGRATING.md lists these differences.
//
// Every wait is on a FakeClock and every random draw comes from a seeded
// PCG, so nothing here depends on the wall clock or on luck.

var errPeer = errors.New("peer test error")

// peerEpoch is the FakeClock's start in these tests.
var peerEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// take returns the first n delays of s.
func take(s retry.Schedule, n int) []time.Duration {
	return slices.Collect(s.Take(n).Seq())
}

// failing returns a Do function that fails with err and counts its calls.
func failing(calls *int, err error) func(context.Context) error {
	return func(context.Context) error { *calls++; return err }
}

func TestPeerCenkalti(t *testing.T) {
	// TestBackOff: 500 ms doubling, capped at 5 s, ±10% jitter. cenkalti's
	// MaxInterval caps the interval before randomization, so its delays
	// exceed the cap by up to the factor: Cap then Jitter here.
	t.Run("growth with jitter after the cap", func(t *testing.T) {
		want := []time.Duration{500, 1000, 2000, 4000, 5000, 5000, 5000, 5000, 5000, 5000}
		s := retry.Exponential(500*time.Millisecond).Cap(5*time.Second).Jitter(0.1, rand.NewPCG(1, 2))
		for run := range 100 {
			got := take(s, len(want))
			require.Len(t, got, len(want))
			for i, d := range got {
				e := want[i] * time.Millisecond
				assert.GreaterOrEqual(t, d, e-e/10, "run %d, delay %d", run, i)
				assert.LessOrEqual(t, d, e+e/10, "run %d, delay %d", run, i)
			}
		}
	})
	// TestBackOffOverflow: MaxInt64/2 times 2.1 saturates at the largest
	// Duration instead of wrapping.
	t.Run("overflow saturates", func(t *testing.T) {
		got := take(retry.ExponentialFactor(math.MaxInt64/2, 2.1), 3)
		assert.Equal(t, []time.Duration{math.MaxInt64 / 2, math.MaxInt64, math.MaxInt64}, got)
	})
	// TestRetry, TestRetryWithData: success on the third call.
	t.Run("success on the third call", func(t *testing.T) {
		clock := retry.NewFakeClock(peerEpoch)
		calls := 0
		v, err := retry.Retry(t.Context(), retry.Exponential(500*time.Millisecond).Take(10),
			func(context.Context) (int, error) {
				calls++
				if calls == 3 {
					return 42, nil
				}
				return 1, errPeer
			}, retry.WithClock(clock))
		require.NoError(t, err)
		assert.Equal(t, 42, v)
		assert.Equal(t, 3, calls)
		assert.Equal(t, []time.Duration{500 * time.Millisecond, time.Second}, clock.Sleeps())
	})
	// TestRetryContext: fn cancels the context with a cause on its third
	// call; Retry stops there and reports the cause.
	t.Run("cancelled with a cause", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(t.Context())
		defer cancel(nil)
		cause := errors.New("custom error")
		calls := 0
		_, err := retry.Retry(ctx, retry.Constant(time.Millisecond), func(context.Context) (bool, error) {
			calls++
			if calls == 3 {
				cancel(cause)
			}
			return false, fmt.Errorf("error (%d)", calls)
		}, retry.WithClock(retry.NewFakeClock(peerEpoch)))
		assert.ErrorIs(t, err, cause)
		assert.Equal(t, 3, calls)
		// Unlike cenkalti, which returns only the cause, the last error is
		// kept too.
		var re *retry.Error
		require.ErrorAs(t, err, &re)
		assert.EqualError(t, re.Last, "error (3)")
	})
	// TestRetryPermanent: a Permanent error, bare or wrapped, is not
	// retried, and the value of that attempt is returned.
	t.Run("permanent", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			fn      func() (int, error)
			retried bool
			v       int
		}{
			{"nil", func() (int, error) { return 1, nil }, false, 1},
			{"io.EOF", func() (int, error) { return 2, io.EOF }, true, -1},
			{"Permanent(io.EOF)", func() (int, error) { return 3, retry.Permanent(io.EOF) }, false, 3},
			{"wrapped Permanent(io.EOF)", func() (int, error) {
				return 4, fmt.Errorf("Wrapped error: %w", retry.Permanent(io.EOF))
			}, false, 4},
		} {
			t.Run(tc.name, func(t *testing.T) {
				retries := -1
				v, _ := retry.Retry(t.Context(), retry.Exponential(time.Millisecond), func(context.Context) (int, error) {
					retries++
					if retries >= 1 {
						return -1, retry.Permanent(errors.New("forced"))
					}
					return tc.fn()
				}, retry.WithClock(retry.NewFakeClock(peerEpoch)))
				assert.Equal(t, tc.retried, retries > 0)
				assert.Equal(t, tc.v, v)
			})
		}
	})
	// TestPermanent: the marker unwraps to the error, errors.Is sees
	// through it, and Permanent(nil) is nil.
	t.Run("Permanent unwraps", func(t *testing.T) {
		want, other := errors.New("foo"), errors.New("bar")
		err := retry.Permanent(want)
		assert.Same(t, want, errors.Unwrap(err))
		assert.ErrorIs(t, err, want)
		assert.NotErrorIs(t, err, other)
		assert.ErrorIs(t, fmt.Errorf("wrapped: %w", err), want)
		assert.NoError(t, retry.Permanent(nil))
		// What Retry returns is the error without the marker.
		got := retry.Do(t.Context(), retry.Constant(0), func(context.Context) error { return err })
		assert.Same(t, want, got)
	})
	// TestMaxTriesZero (cenkalti issue 80): no retries means one call.
	t.Run("no retries is one call", func(t *testing.T) {
		calls := 0
		err := retry.Do(t.Context(), retry.Constant(0).Take(0), failing(&calls, errPeer))
		assert.ErrorIs(t, err, retry.ErrExhausted)
		assert.ErrorIs(t, err, errPeer)
		assert.Equal(t, 1, calls)
	})
	// cenkalti's RetryAfter replaces the next delay, even with a shorter
	// one. Here a pushback only ever lengthens the schedule's delay.
	t.Run("a short RetryAfter does not shorten the schedule", func(t *testing.T) {
		clock := retry.NewFakeClock(peerEpoch)
		calls := 0
		err := retry.Do(t.Context(), retry.Constant(5*time.Second).Take(2), func(context.Context) error {
			calls++
			return retry.RetryAfter(errPeer, time.Second)
		}, retry.WithClock(clock))
		assert.ErrorIs(t, err, retry.ErrExhausted)
		assert.Equal(t, []time.Duration{5 * time.Second, 5 * time.Second}, clock.Sleeps())
	})
	// WithMaxElapsedTime: stop when the elapsed time plus the next delay
	// would pass the limit. A context deadline does that here; a wait that
	// would end exactly at the deadline is not started either, since the
	// context is done by then.
	t.Run("max elapsed time is a deadline", func(t *testing.T) {
		for _, tc := range []struct {
			limit time.Duration
			calls int
		}{{3500 * time.Millisecond, 4}, {3 * time.Second, 3}} {
			t.Run(tc.limit.String(), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), tc.limit)
				defer cancel()
				calls := 0
				err := retry.Do(ctx, retry.Constant(time.Second), failing(&calls, errPeer),
					retry.WithClock(retry.NewFakeClock(peerEpoch)))
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				assert.ErrorIs(t, err, errPeer)
				assert.Equal(t, tc.calls, calls)
			})
		}
	})
	// WithMaxElapsedTime itself: MaxElapsed stops before a wait that would
	// end past the limit, timed from the first attempt, attempts included;
	// a wait that ends exactly at the limit is made, as in cenkalti.
	t.Run("max elapsed time", func(t *testing.T) {
		for _, tc := range []struct {
			limit time.Duration
			calls int
		}{{3 * time.Second, 4}, {3500 * time.Millisecond, 4}, {2999 * time.Millisecond, 3}} {
			t.Run(tc.limit.String(), func(t *testing.T) {
				calls := 0
				err := retry.Do(t.Context(), retry.Constant(time.Second), failing(&calls, errPeer),
					retry.WithClock(retry.NewFakeClock(peerEpoch)), retry.MaxElapsed(tc.limit))
				assert.ErrorIs(t, err, retry.ErrMaxElapsed)
				assert.ErrorIs(t, err, errPeer)
				assert.Equal(t, tc.calls, calls)
			})
		}
	})
}

func TestPeerAvast(t *testing.T) {
	// TestDoWithDataAllFailed: 10 attempts, OnRetry numbers 1..9. avast
	// returns the zero value and every error; Retry returns the last
	// attempt's value and only the last error.
	t.Run("all failed", func(t *testing.T) {
		var sum int
		v, err := retry.Retry(t.Context(), retry.Constant(time.Nanosecond).Take(9),
			func(context.Context) (int, error) { return 7, errors.New("test") },
			retry.OnRetry(func(a retry.Attempt) { sum += a.Number }),
			retry.WithClock(retry.NewFakeClock(peerEpoch)))
		assert.Equal(t, 7, v)
		var re *retry.Error
		require.ErrorAs(t, err, &re)
		assert.Equal(t, 10, re.Attempts)
		assert.Equal(t, 45, sum)
		assert.Equal(t, "retry: gave up after 10 attempts: schedule exhausted: last error: test", err.Error())
	})
	// TestAttemptsForError: at most 3 attempts for one error, within a
	// schedule that allows 5.
	t.Run("attempts for an error", func(t *testing.T) {
		calls := 0
		err := retry.Do(t.Context(), retry.Constant(0).Take(4), failing(&calls, os.ErrInvalid),
			retry.MaxRetriesIf(2, func(err error) bool { return errors.Is(err, os.ErrInvalid) }))
		assert.ErrorIs(t, err, retry.ErrExhausted)
		assert.ErrorIs(t, err, os.ErrInvalid)
		assert.Equal(t, 3, calls)
	})
	// TestDoFirstOk: no OnRetry call when the first attempt succeeds.
	t.Run("first ok", func(t *testing.T) {
		hooks := 0
		v, err := retry.Retry(t.Context(), retry.Constant(0),
			func(context.Context) (int, error) { return 1, nil },
			retry.OnRetry(func(retry.Attempt) { hooks++ }))
		require.NoError(t, err)
		assert.Equal(t, 1, v)
		assert.Zero(t, hooks)
	})
	// TestRetryIf: an error the predicate rejects ends the retries and is
	// returned as it is; OnRetry ran before each of the two retries.
	t.Run("retry if", func(t *testing.T) {
		calls, hooks := 0, 0
		special := errors.New("special")
		err := retry.Do(t.Context(), retry.Constant(time.Nanosecond).Take(9), func(context.Context) error {
			calls++
			if calls > 2 {
				return special
			}
			return errors.New("test")
		}, retry.OnRetry(func(retry.Attempt) { hooks++ }),
			retry.If(func(err error) bool { return err.Error() != "special" }),
			retry.WithClock(retry.NewFakeClock(peerEpoch)))
		assert.Same(t, special, err)
		assert.Equal(t, 3, calls)
		assert.Equal(t, 2, hooks)
	})
	// TestZeroAttemptsWithError: an unbounded schedule retries until
	// success.
	t.Run("unbounded until success", func(t *testing.T) {
		calls := 0
		err := retry.Do(t.Context(), retry.Constant(time.Nanosecond), func(context.Context) error {
			if calls < 999 {
				calls++
				return errors.New("test")
			}
			return nil
		}, retry.WithClock(retry.NewFakeClock(peerEpoch)))
		require.NoError(t, err)
		assert.Equal(t, 999, calls)
	})
	// TestUnrecoverableError: one attempt, the error itself.
	t.Run("unrecoverable", func(t *testing.T) {
		calls := 0
		err := retry.Do(t.Context(), retry.Constant(0).Take(1), failing(&calls, retry.Permanent(errPeer)))
		assert.Same(t, errPeer, err)
		assert.Equal(t, 1, calls)
	})
	// TestBackOffDelay: avast clamps the shift so 1<<n never overflows, and
	// treats a non-positive delay as 1 ns. Here Exponential saturates at the
	// largest Duration, a zero base stays 0, and a negative base panics at
	// construction.
	t.Run("backoff delay", func(t *testing.T) {
		got := take(retry.Exponential(time.Second), 70)
		assert.Equal(t, time.Second, got[0])
		assert.Equal(t, time.Second<<33, got[33])
		for i := 34; i < 70; i++ {
			assert.Equal(t, time.Duration(math.MaxInt64), got[i], "delay %d", i)
		}
		assert.Equal(t, time.Duration(1<<62), take(retry.Exponential(1), 65)[62])
		assert.Equal(t, time.Duration(math.MaxInt64), take(retry.Exponential(1), 65)[64])
		assert.Equal(t, []time.Duration{0, 0, 0}, take(retry.Exponential(0), 3))
		assert.PanicsWithValue(t, "retry: Exponential: negative base -1ns", func() { retry.Exponential(-1) })
	})
	// TestCombineDelay: the sum of delays saturates instead of wrapping.
	// Then concatenates rather than adds, so the saturating sum here is
	// Within's running total.
	t.Run("combined delays saturate", func(t *testing.T) {
		s := retry.Delays(math.MaxInt64, time.Second, time.Millisecond).Within(math.MaxInt64)
		assert.Equal(t, []time.Duration{math.MaxInt64}, take(s, 10))
		s = retry.Delays(math.MaxInt64-time.Second, time.Second, time.Nanosecond).Within(math.MaxInt64)
		assert.Equal(t, []time.Duration{math.MaxInt64 - time.Second, time.Second}, take(s, 10))
	})
	// TestContext: cancelled before the first attempt, fn is never called;
	// cancelled from OnRetry, the wait is not made and Retry reports the
	// cancellation and the last error.
	t.Run("cancelled before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		calls, hooks := 0, 0
		err := retry.Do(ctx, retry.Constant(100*time.Millisecond), failing(&calls, errPeer),
			retry.OnRetry(func(retry.Attempt) { hooks++ }))
		assert.ErrorIs(t, err, context.Canceled)
		assert.Zero(t, calls)
		assert.Zero(t, hooks)
	})
	t.Run("cancelled from OnRetry", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		clock := retry.NewFakeClock(peerEpoch)
		calls, hooks := 0, 0
		err := retry.Do(ctx, retry.Constant(100*time.Millisecond), failing(&calls, errPeer),
			retry.OnRetry(func(retry.Attempt) {
				if hooks++; hooks > 1 {
					cancel()
				}
			}), retry.WithClock(clock))
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, errPeer)
		assert.Equal(t, 2, calls)
		assert.Equal(t, 2, hooks)
		assert.Equal(t, []time.Duration{100 * time.Millisecond}, clock.Sleeps())
	})
	// TestFullJitterBackoffDelay: full jitter of a capped exponential stays
	// in [0, min(base·2ⁿ, cap)]; a zero base gives 0.
	t.Run("full jitter bounds", func(t *testing.T) {
		base, ceiling := 50*time.Millisecond, 500*time.Millisecond
		s := retry.Exponential(base).Cap(ceiling).FullJitter(rand.NewPCG(3, 4))
		for range 100 {
			for n, d := range take(s, 11) {
				bound := min(base<<n, ceiling)
				assert.GreaterOrEqual(t, d, time.Duration(0))
				assert.LessOrEqual(t, d, bound, "delay %d", n)
			}
		}
		assert.Equal(t, []time.Duration{0, 0}, take(retry.Exponential(0).Cap(ceiling).FullJitter(nil), 2))
		for n, d := range take(retry.Exponential(1).Cap(100).FullJitter(rand.NewPCG(5, 6)), 10) {
			assert.LessOrEqual(t, d, min(time.Duration(1)<<n, 100))
		}
	})
}

func TestPeerSethvargo(t *testing.T) {
	// TestExponentialBackoff_Next: doubling from 1 ns, and from 100 000 h
	// up to saturation, also when many goroutines share one schedule
	// (sethvargo's shared Backoff hands each goroutine the next value;
	// here each range is its own run, so every goroutine gets the whole
	// sequence).
	t.Run("exponential", func(t *testing.T) {
		want := make([]time.Duration, 14)
		for i := range want {
			want[i] = time.Duration(1) << i
		}
		assert.Equal(t, want, take(retry.Exponential(1), 14))
		assert.Equal(t, []time.Duration{
			100_000 * time.Hour, 200_000 * time.Hour, 400_000 * time.Hour, 800_000 * time.Hour,
			1_600_000 * time.Hour, math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxInt64,
		}, take(retry.Exponential(100_000*time.Hour), 10))
	})
	t.Run("exponential shared by goroutines", func(t *testing.T) {
		s := retry.Exponential(100_000 * time.Hour)
		want := take(s, 100)
		var wg sync.WaitGroup
		got := make([][]time.Duration, 100)
		for g := range got {
			wg.Go(func() { got[g] = take(s, 100) })
		}
		wg.Wait()
		for g := range got {
			assert.Equal(t, want, got[g], "goroutine %d", g)
		}
	})
	t.Run("fibonacci", func(t *testing.T) {
		assert.Equal(t, []time.Duration{1, 1, 2, 3, 5, 8, 13, 21, 34, 55}, take(retry.Fibonacci(1), 10))
		got := take(retry.Fibonacci(100_000*time.Hour), 100)
		for i := 2; i < len(got); i++ {
			assert.GreaterOrEqual(t, got[i], got[i-1], "delay %d", i)
		}
		assert.Equal(t, time.Duration(math.MaxInt64), got[99])
	})
	t.Run("constant", func(t *testing.T) {
		assert.Equal(t, []time.Duration{time.Second, time.Second, time.Second}, take(retry.Constant(time.Second), 3))
		assert.Equal(t, []time.Duration{0, 0}, take(retry.Constant(0), 2))
	})
	// TestWithJitter, TestWithJitterPercent, TestWithFullJitter: bounds,
	// also at the largest Duration; a negative input delay jitters as 0
	// (sethvargo's full jitter passes it through unchanged).
	t.Run("jitter bounds", func(t *testing.T) {
		src := rand.NewPCG(7, 8)
		for _, tc := range []struct {
			name   string
			s      retry.Schedule
			lo, hi time.Duration
		}{
			{"±25%", retry.Constant(time.Second).Jitter(0.25, src), 750 * time.Millisecond, 1250 * time.Millisecond},
			{"±5%", retry.Constant(time.Second).Jitter(0.05, src), 950 * time.Millisecond, 1050 * time.Millisecond},
			{"±0%", retry.Constant(time.Second).Jitter(0, src), time.Second, time.Second},
			{"±100% of the largest", retry.Constant(math.MaxInt64).Jitter(1, src), 0, math.MaxInt64},
			{"±1% of the largest", retry.Constant(math.MaxInt64).Jitter(0.01, src), math.MaxInt64 - math.MaxInt64/100 - 1, math.MaxInt64},
			{"full", retry.Constant(time.Second).FullJitter(src), 0, time.Second},
			{"full of 0", retry.Constant(0).FullJitter(src), 0, 0},
			{"full of the largest", retry.Constant(math.MaxInt64).FullJitter(src), 0, math.MaxInt64},
			{"equal of the largest", retry.Constant(math.MaxInt64).EqualJitter(src), math.MaxInt64 / 2, math.MaxInt64},
			{"full of a negative", negative(-5 * time.Second).FullJitter(src), 0, 0},
			{"±100% of the smallest", negative(math.MinInt64).Jitter(1, src), 0, 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for _, d := range take(tc.s, 10_000) {
					if d < tc.lo || d > tc.hi {
						t.Fatalf("%v outside [%v, %v]", d, tc.lo, tc.hi)
					}
				}
			})
		}
	})
	// TestWithMaxRetries: n delays, then stop; zero means none.
	t.Run("max retries", func(t *testing.T) {
		assert.Equal(t, []time.Duration{time.Second, time.Second, time.Second}, take(retry.Constant(time.Second).Take(3), 10))
		assert.Empty(t, take(retry.Constant(time.Second).Take(0), 10))
	})
	// TestWithCappedDuration.
	t.Run("capped", func(t *testing.T) {
		assert.Equal(t, []time.Duration{3 * time.Second}, take(retry.Constant(5*time.Second).Cap(3*time.Second), 1))
		assert.Equal(t, []time.Duration{0}, take(retry.Constant(0).Cap(5*time.Second), 1))
		assert.Equal(t, []time.Duration{0}, take(retry.Constant(0).FullJitter(nil).Cap(5*time.Second), 1))
	})
	// TestWithMaxDuration: sethvargo's limit is wall-clock time since the
	// Backoff was made, and its last delay is cut to what is left. Within
	// counts the schedule's own delays and stops before the delay that
	// would pass the total instead of shortening it.
	t.Run("max duration", func(t *testing.T) {
		assert.Empty(t, take(retry.Constant(time.Second).Within(250*time.Millisecond), 10))
		assert.Equal(t, []time.Duration{0, 0, 0}, take(retry.Constant(0).Within(10*time.Second), 3))
		assert.Equal(t, []time.Duration{time.Second, time.Second}, take(retry.Constant(time.Second).Within(2500*time.Millisecond), 10))
	})
	// TestDo: sethvargo retries only errors marked RetryableError; here
	// every error is retried unless it is Permanent or an If rejects it.
	t.Run("do", func(t *testing.T) {
		calls := 0
		err := retry.Do(t.Context(), retry.Exponential(1), func(context.Context) error {
			if calls++; calls < 3 {
				return errPeer
			}
			return nil
		}, retry.WithClock(retry.NewFakeClock(peerEpoch)))
		require.NoError(t, err)
		assert.Equal(t, 3, calls)
	})
}

// negative is a hand-written Schedule that yields d forever, for the
// combinators' treatment of negative delays.
func negative(d time.Duration) retry.Schedule {
	return func(yield func(time.Duration) bool) {
		for yield(d) {
		}
	}
}

func TestPeerFailsafe(t *testing.T) {
	// "with backoff delay": 1 ms doubling up to 10 ms, 6 retries.
	t.Run("backoff delay", func(t *testing.T) {
		clock := retry.NewFakeClock(peerEpoch)
		calls := 0
		err := retry.Do(t.Context(), retry.Exponential(time.Millisecond).Cap(10*time.Millisecond).Take(6),
			failing(&calls, errPeer), retry.WithClock(clock))
		assert.ErrorIs(t, err, retry.ErrExhausted)
		assert.Equal(t, 7, calls)
		assert.Equal(t, []time.Duration{
			time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 8 * time.Millisecond,
			10 * time.Millisecond, 10 * time.Millisecond,
		}, clock.Sleeps())
	})
	// "should retry on failure" with the defaults: 3 attempts.
	t.Run("three attempts", func(t *testing.T) {
		calls := 0
		err := retry.Do(t.Context(), retry.Constant(0).Take(2), failing(&calls, errPeer))
		var re *retry.Error
		require.ErrorAs(t, err, &re)
		assert.Equal(t, 3, re.Attempts)
		assert.Same(t, errPeer, re.Last)
		assert.Equal(t, 3, calls)
	})
	// "should fail when max duration exceeded": the second attempt takes
	// 120 ms against a 100 ms limit, which counts the attempts' own time.
	t.Run("max duration counts the attempts", func(t *testing.T) {
		clock := retry.NewFakeClock(peerEpoch)
		calls := 0
		err := retry.Do(t.Context(), retry.Constant(0), func(context.Context) error {
			if calls++; calls == 2 {
				clock.Advance(120 * time.Millisecond)
			}
			return errPeer
		}, retry.WithClock(clock), retry.MaxElapsed(100*time.Millisecond))
		assert.ErrorIs(t, err, retry.ErrMaxElapsed)
		assert.Equal(t, 2, calls)
	})
	// "should return ExceededError with wrapped results": a result handled
	// as a failure (HandleResult) is IfValue here; giving up, the *Error
	// has no last error and the value comes back.
	t.Run("retry on a value", func(t *testing.T) {
		calls := 0
		v, err := retry.Retry(t.Context(), retry.Constant(0).Take(2), func(context.Context) (bool, error) {
			calls++
			return false, nil
		}, retry.IfValue(func(ok bool) bool { return !ok }))
		assert.False(t, v)
		assert.ErrorIs(t, err, retry.ErrExhausted)
		var re *retry.Error
		require.ErrorAs(t, err, &re)
		assert.NoError(t, re.Last)
		assert.Equal(t, 3, calls)
	})
	// "should not retry on non-retriable failure": retry while the value is
	// 500, unboundedly.
	t.Run("retry while a value", func(t *testing.T) {
		calls := 0
		v, err := retry.Retry(t.Context(), retry.Constant(0), func(context.Context) (int, error) {
			if calls++; calls <= 2 {
				return 500, nil
			}
			return 0, nil
		}, retry.IfValue(func(v int) bool { return v == 500 }))
		require.NoError(t, err)
		assert.Zero(t, v)
		assert.Equal(t, 3, calls)
	})
	// "unlimited attempts".
	t.Run("unlimited", func(t *testing.T) {
		calls := 0
		v, err := retry.Retry(t.Context(), retry.Constant(0), func(context.Context) (bool, error) {
			if calls++; calls <= 5 {
				return false, errPeer
			}
			return true, nil
		})
		require.NoError(t, err)
		assert.True(t, v)
		assert.Equal(t, 6, calls)
	})
}

func TestPeerK8sWaitBackoff(t *testing.T) {
	// wait.Backoff{Duration: 10ms, Factor: 2, Steps: 5} sleeps 10, 20, 40
	// and 80 ms between its 5 attempts.
	t.Run("steps", func(t *testing.T) {
		clock := retry.NewFakeClock(peerEpoch)
		calls := 0
		err := retry.Do(t.Context(), retry.ExponentialFactor(10*time.Millisecond, 2).Take(4),
			failing(&calls, errPeer), retry.WithClock(clock))
		assert.ErrorIs(t, err, retry.ErrExhausted)
		assert.Equal(t, 5, calls)
		assert.Equal(t, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond},
			clock.Sleeps())
	})
	// With Cap: 50ms, reaching the cap sets Steps to 0 in wait.Backoff, so
	// ExponentialBackoff stops (after sleeping the 40 ms step in vain). Cap
	// here only bounds the delays; Take bounds the attempts.
	t.Run("cap bounds delays, not attempts", func(t *testing.T) {
		assert.Equal(t, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 50 * time.Millisecond},
			take(retry.ExponentialFactor(10*time.Millisecond, 2).Cap(50*time.Millisecond), 4))
	})
	// wait.Jitter(d, j) is d + uniform[0, j·d): it only lengthens, and it is
	// applied after the cap. Jitter(f) here is symmetric, d·(1±f).
	t.Run("jitter is symmetric", func(t *testing.T) {
		lower := false
		for _, d := range take(retry.Constant(time.Second).Jitter(0.5, rand.NewPCG(9, 10)), 100) {
			assert.GreaterOrEqual(t, d, 500*time.Millisecond)
			assert.LessOrEqual(t, d, 1500*time.Millisecond)
			lower = lower || d < time.Second
		}
		assert.True(t, lower)
	})
	// Factor 0 or 1: a constant schedule.
	t.Run("factor 1", func(t *testing.T) {
		assert.Equal(t, []time.Duration{time.Second, time.Second, time.Second}, take(retry.ExponentialFactor(time.Second, 1), 3))
		assert.Panics(t, func() { retry.ExponentialFactor(time.Second, 0) })
	})
}

// TestPeerSharedPolicy: the libraries whose backoff object holds state
// (cenkalti, sethvargo) race or miscount when one policy serves concurrent
// calls. One Schedule here serves 100 concurrent Retry calls, each of which
// sees the whole sequence.
func TestPeerSharedPolicy(t *testing.T) {
	policy := retry.Exponential(time.Millisecond).Cap(time.Second).Jitter(0.2, rand.NewPCG(11, 12)).Take(5)
	var wg sync.WaitGroup
	clocks := make([]*retry.FakeClock, 100)
	calls := make([]int, 100)
	for g := range clocks {
		clocks[g] = retry.NewFakeClock(peerEpoch)
		wg.Go(func() {
			err := retry.Do(t.Context(), policy, failing(&calls[g], errPeer), retry.WithClock(clocks[g]))
			assert.ErrorIs(t, err, retry.ErrExhausted)
		})
	}
	wg.Wait()
	for g, c := range clocks {
		assert.Equal(t, 6, calls[g])
		sleeps := c.Sleeps()
		require.Len(t, sleeps, 5)
		for i, d := range sleeps {
			e := time.Millisecond << i
			assert.GreaterOrEqual(t, d, e-e/5, "call %d, wait %d", g, i)
			assert.LessOrEqual(t, d, e+e/5, "call %d, wait %d", g, i)
		}
	}
}
