package retry

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// timed returns an fn that records when, since clock's epoch, each call
// started, takes took on clock and fails with errs in turn (nil once they
// run out).
func timed(clock *FakeClock, took time.Duration, at *[]time.Duration, errs ...error) func(context.Context) (int, error) {
	return func(context.Context) (int, error) {
		*at = append(*at, clock.Now().Sub(epoch))
		clock.Advance(took)
		if i := len(*at) - 1; i < len(errs) {
			return 0, errs[i]
		}
		return 0, nil
	}
}

func TestMaxElapsed(t *testing.T) {
	t.Run("a wait that ends at the limit is made, one past it is not", func(t *testing.T) {
		for _, limit := range []time.Duration{3 * s1, 3*s1 - 1} {
			clock := NewFakeClock(epoch)
			var at []time.Duration
			_, err := Retry(t.Context(), Constant(s1), timed(clock, 0, &at, repeat(errBoom, 9)...),
				WithClock(clock), MaxElapsed(limit))
			want := []time.Duration{0, s1, 2 * s1, 3 * s1}
			if limit < 3*s1 {
				want = want[:3]
			}
			assert.Equal(t, want, at, "limit %v", limit)
			var re *Error
			require.ErrorAs(t, err, &re)
			assert.ErrorIs(t, err, ErrMaxElapsed)
			assert.ErrorIs(t, err, errBoom)
			assert.Equal(t, len(want), re.Attempts)
			assert.Equal(t, want[len(want)-1], clock.Now().Sub(epoch), "gives up at once, without the wait")
		}
	})
	t.Run("attempts use up the limit too", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		var at []time.Duration
		_, err := Retry(t.Context(), Constant(s1), timed(clock, 2*s1, &at, repeat(errBoom, 9)...),
			WithClock(clock), MaxElapsed(7*s1))
		assert.Equal(t, []time.Duration{0, 3 * s1, 6 * s1}, at, "the third ends at 8s, past the limit; the wait after it is not made")
		assert.Equal(t, 8*s1, clock.Now().Sub(epoch))
		assert.ErrorIs(t, err, ErrMaxElapsed)
		assert.Equal(t, "retry: gave up after 3 attempts: max elapsed time reached: last error: boom", err.Error())
	})
	t.Run("the attempt in flight is not cut short", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		var at []time.Duration
		v, err := Retry(t.Context(), Constant(s1), func(ctx context.Context) (int, error) {
			at = append(at, 0)
			clock.Advance(time.Hour)
			return 42, ctx.Err()
		}, WithClock(clock), MaxElapsed(s1))
		require.NoError(t, err, "an attempt longer than the limit still succeeds")
		assert.Equal(t, 42, v)

		at = nil
		_, err = Retry(t.Context(), Constant(0), timed(clock, time.Hour, &at, repeat(errBoom, 9)...),
			WithClock(clock), MaxElapsed(s1))
		assert.Len(t, at, 1, "no retry once the limit is used, even after a delay of 0")
		assert.ErrorIs(t, err, ErrMaxElapsed)
	})
	t.Run("a pushback's wait counts", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		var at []time.Duration
		_, err := Retry(t.Context(), Constant(s1), timed(clock, 0, &at, RetryAfter(errBoom, 10*s1)),
			WithClock(clock), MaxElapsed(5*s1))
		assert.Len(t, at, 1)
		assert.ErrorIs(t, err, ErrMaxElapsed)
		assert.ErrorIs(t, err, errBoom)
	})
	t.Run("the context's deadline is reported first", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 2*s1)
		defer cancel()
		clock := NewFakeClock(epoch)
		var at []time.Duration
		_, err := Retry(ctx, Constant(5*s1), timed(clock, 0, &at, repeat(errBoom, 9)...),
			WithClock(clock), MaxElapsed(3*s1))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotErrorIs(t, err, ErrMaxElapsed)
	})
	t.Run("a retry it stops costs no budget token", func(t *testing.T) {
		b := NewBudget(0, 5)
		clock := NewFakeClock(epoch)
		var at []time.Duration
		_, err := Retry(t.Context(), Constant(10*s1), timed(clock, 0, &at, repeat(errBoom, 9)...),
			WithClock(clock), WithBudget(b), MaxElapsed(s1))
		assert.ErrorIs(t, err, ErrMaxElapsed)
		assert.Equal(t, 5.0, b.Tokens())
	})
	t.Run("a later MaxElapsed replaces an earlier one", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		var at []time.Duration
		_, _ = Retry(t.Context(), Constant(s1), timed(clock, 0, &at, repeat(errBoom, 9)...),
			WithClock(clock), MaxElapsed(time.Hour), MaxElapsed(s1))
		assert.Len(t, at, 2)
	})
	t.Run("the real clock, under synctest", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			var at []time.Duration
			err := Do(t.Context(), Exponential(s1), func(context.Context) error {
				at = append(at, time.Since(start))
				return errBoom
			}, MaxElapsed(7*s1))
			assert.Equal(t, []time.Duration{0, s1, 3 * s1, 7 * s1}, at)
			assert.Equal(t, 7*s1, time.Since(start))
			assert.ErrorIs(t, err, ErrMaxElapsed)
		})
	})
	t.Run("invalid limits panic", func(t *testing.T) {
		assert.PanicsWithValue(t, "retry: MaxElapsed: limit 0s is not positive", func() { MaxElapsed(0) })
		assert.PanicsWithValue(t, "retry: MaxElapsed: limit -1s is not positive", func() { MaxElapsed(-s1) })
	})
}

var errLimited = errors.New("rate limited")

func isLimited(err error) bool { return errors.Is(err, errLimited) }

func TestMaxRetriesIf(t *testing.T) {
	t.Run("at most n retries after matching errors, the schedule for the others", func(t *testing.T) {
		calls := 0
		errs := []error{errLimited, errBoom, errLimited, errBoom, errBoom, errLimited, nil}
		_, err := Retry(t.Context(), Constant(s1), script(&calls, errs...),
			WithClock(NewFakeClock(epoch)), MaxRetriesIf(2, isLimited))
		assert.Equal(t, 6, calls, "the third rate-limit error ends the call")
		var re *Error
		require.ErrorAs(t, err, &re)
		assert.ErrorIs(t, err, ErrExhausted)
		assert.Equal(t, errLimited, re.Last)

		calls = 0
		_, err = Retry(t.Context(), Constant(s1), script(&calls, repeat(errBoom, 20)...),
			WithClock(NewFakeClock(epoch)), MaxRetriesIf(2, isLimited))
		require.NoError(t, err)
		assert.Equal(t, 21, calls)
	})
	t.Run("n = 0: the first matching failure ends the call, as an *Error", func(t *testing.T) {
		calls := 0
		_, err := Retry(t.Context(), Constant(s1), script(&calls, errBoom, errLimited),
			WithClock(NewFakeClock(epoch)), MaxRetriesIf(0, isLimited))
		assert.Equal(t, 2, calls)
		assert.ErrorIs(t, err, ErrExhausted)
	})
	t.Run("the schedule still bounds", func(t *testing.T) {
		calls := 0
		_, err := Retry(t.Context(), Constant(s1).Take(1), script(&calls, repeat(errLimited, 9)...),
			WithClock(NewFakeClock(epoch)), MaxRetriesIf(5, isLimited))
		assert.Equal(t, 2, calls)
		assert.ErrorIs(t, err, ErrExhausted)
	})
	t.Run("several limits count separately", func(t *testing.T) {
		calls := 0
		errs := []error{errLimited, errBoom, errLimited, errBoom}
		_, err := Retry(t.Context(), Constant(s1), script(&calls, errs...),
			WithClock(NewFakeClock(epoch)), MaxRetriesIf(1, isLimited),
			MaxRetriesIf(5, func(err error) bool { return errors.Is(err, errBoom) }))
		assert.Equal(t, 3, calls)
		assert.ErrorIs(t, err, errLimited)
	})
	t.Run("match sees retried errors only, without markers", func(t *testing.T) {
		var asked []error
		match := MaxRetriesIf(9, func(err error) bool { asked = append(asked, err); return false })
		calls := 0
		_, _ = Retry(t.Context(), Constant(s1), script(&calls, RetryAfter(errLimited, s1), Permanent(errBoom)),
			WithClock(NewFakeClock(epoch)), match)
		calls = 0
		_, _ = Retry(t.Context(), Constant(s1), script(&calls, errBoom),
			WithClock(NewFakeClock(epoch)), If(func(error) bool { return false }), match)
		assert.Equal(t, []error{errLimited}, asked)
	})
	t.Run("a done context is the reason, not the limit", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		_, err := Retry(ctx, Constant(s1), func(context.Context) (int, error) {
			cancel()
			return 0, errLimited
		}, WithClock(NewFakeClock(epoch)), MaxRetriesIf(0, isLimited))
		assert.ErrorIs(t, err, context.Canceled)
		assert.NotErrorIs(t, err, ErrExhausted)
	})
	t.Run("counts belong to the call", func(t *testing.T) {
		shared := MaxRetriesIf(2, isLimited)
		var wg sync.WaitGroup
		attempts := make([]int, 8)
		for i := range attempts {
			wg.Go(func() {
				_, err := Retry(t.Context(), Constant(s1), script(&attempts[i], repeat(errLimited, 9)...),
					WithClock(NewFakeClock(epoch)), shared)
				assert.ErrorIs(t, err, ErrExhausted)
			})
		}
		wg.Wait()
		for _, n := range attempts {
			assert.Equal(t, 3, n)
		}
	})
	t.Run("Do", func(t *testing.T) {
		calls := 0
		err := Do(t.Context(), Constant(s1), func(context.Context) error {
			calls++
			return errLimited
		}, WithClock(NewFakeClock(epoch)), MaxRetriesIf(1, isLimited))
		assert.Equal(t, 2, calls)
		assert.ErrorIs(t, err, ErrExhausted)
	})
	t.Run("invalid arguments panic", func(t *testing.T) {
		assert.PanicsWithValue(t, "retry: MaxRetriesIf: negative count -1", func() { MaxRetriesIf(-1, isLimited) })
		assert.PanicsWithValue(t, "retry: MaxRetriesIf: nil function", func() { MaxRetriesIf(1, nil) })
	})
}

func TestHedgeMaxElapsed(t *testing.T) {
	const ms = time.Millisecond
	t.Run("no attempt starts past the limit; those in flight finish", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newReplicas(replica{lat: time.Hour})
			v, err := Hedge(t.Context(), Constant(30*ms).Take(5), r.fn, MaxElapsed(70*ms))
			require.NoError(t, err)
			assert.Equal(t, 1, v, "the first attempt, not cut short, wins")
			synctest.Wait()
			r.mu.Lock()
			defer r.mu.Unlock()
			assert.Equal(t, []time.Duration{0, 30 * ms, 60 * ms}, r.starts, "the hedge due at 90ms is not started")
		})
	})
	t.Run("a failure before the limit starts the next attempt; after it, the call gives up", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newReplicas(replica{lat: 50 * ms, err: errBoom})
			_, err := Hedge(t.Context(), Constant(time.Hour).Take(5), r.fn, MaxElapsed(120*ms))
			var re *Error
			require.ErrorAs(t, err, &re)
			assert.ErrorIs(t, err, ErrMaxElapsed)
			assert.ErrorIs(t, err, errBoom)
			assert.Equal(t, 3, re.Attempts)
			assert.Equal(t, 150*ms, time.Since(r.t0), "gives up when the last attempt fails")
			synctest.Wait()
			r.mu.Lock()
			defer r.mu.Unlock()
			assert.Equal(t, []time.Duration{0, 50 * ms, 100 * ms}, r.starts)
		})
	})
	t.Run("a pushback that would end past the limit, with nothing in flight, gives up at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newReplicas(replica{lat: 10 * ms, err: RetryAfter(errBoom, time.Second)})
			var reason error
			_, err := Hedge(t.Context(), Constant(time.Hour).Take(5), r.fn, MaxElapsed(500*ms),
				OnDone(func(o Outcome) { reason = o.Reason }))
			assert.ErrorIs(t, err, ErrMaxElapsed)
			assert.Equal(t, ErrMaxElapsed, reason)
			assert.Equal(t, 10*ms, time.Since(r.t0))
		})
	})
	t.Run("on a FakeClock, as Retry", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		var at []time.Duration
		_, err := Hedge(t.Context(), Constant(time.Hour).Take(5), timed(clock, s1, &at, repeat(errBoom, 9)...),
			WithClock(clock), MaxElapsed(5*s1/2))
		assert.Equal(t, []time.Duration{0, s1, 2 * s1}, at, "the fourth would start at 3s")
		assert.ErrorIs(t, err, ErrMaxElapsed)
		assert.ErrorIs(t, err, errBoom)
	})
	t.Run("without it, the schedule's end is the reason", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newReplicas(replica{lat: 50 * ms, err: errBoom})
			_, err := Hedge(t.Context(), Constant(time.Hour).Take(2), r.fn)
			assert.ErrorIs(t, err, ErrExhausted)
			assert.NotErrorIs(t, err, ErrMaxElapsed)
		})
	})
}

func TestHedgeMaxRetriesIf(t *testing.T) {
	const ms = time.Millisecond
	t.Run("the (n+1)-th matching failure ends the call", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newReplicas(replica{lat: 10 * ms, err: errBoom}, replica{lat: 10 * ms, err: errLimited})
			_, err := Hedge(t.Context(), Constant(time.Hour).Take(5), r.fn, MaxRetriesIf(2, isLimited))
			var re *Error
			require.ErrorAs(t, err, &re)
			assert.ErrorIs(t, err, ErrExhausted)
			assert.Equal(t, errLimited, re.Last)
			assert.Equal(t, 4, re.Attempts, "one other failure, then three rate-limit errors")
		})
	})
	t.Run("as an If would, it cancels the attempts in flight", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newReplicas(replica{lat: time.Hour}, replica{lat: 10 * ms, err: errLimited})
			_, err := Hedge(t.Context(), Constant(5*ms).Take(3), r.fn, MaxRetriesIf(0, isLimited))
			assert.ErrorIs(t, err, ErrExhausted)
			assert.ErrorIs(t, err, errLimited)
			synctest.Wait()
			r.mu.Lock()
			defer r.mu.Unlock()
			assert.Equal(t, ErrHedgeLost, r.causes[1])
		})
	})
	t.Run("counts belong to the call", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			shared := MaxRetriesIf(1, isLimited)
			for range 3 {
				r := newReplicas(replica{lat: 10 * ms, err: errLimited}, replica{lat: 10 * ms})
				_, err := Hedge(t.Context(), Constant(time.Hour).Take(5), r.fn, shared)
				require.NoError(t, err)
			}
		})
	})
}
