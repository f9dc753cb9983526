package retry_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBreakerSlowCall checks BreakerSlowCall: a dependency that answers
// every call, but most of them too slowly, opens the Breaker within one
// window; a healthy one, whose calls are now and then slow, never does in
// 30 minutes. Calls take their time on a FakeClock.
func TestBreakerSlowCall(t *testing.T) {
	const limit = 500 * time.Millisecond
	run := func(t *testing.T, d time.Duration, latency func(r *rand.Rand) time.Duration) (calls int, opened time.Duration) {
		clock := retry.NewFakeClock(epoch)
		// A minute's window: at about two calls a second, the default 5 s
		// window never holds BreakerMinCalls' 20 calls.
		b := retry.NewBreaker(retry.BreakerClock(clock), retry.BreakerWindow(time.Minute), retry.BreakerSlowCall(limit))
		r := rand.New(rand.NewPCG(1, 2))
		for clock.Now().Sub(epoch) < d {
			err := retry.Do(context.Background(), retry.Delays(), func(context.Context) error {
				calls++
				clock.Advance(latency(r))
				return nil
			}, retry.WithBreaker(b), retry.WithClock(clock))
			if errors.Is(err, retry.ErrBreakerOpen) {
				return calls, clock.Now().Sub(epoch)
			}
			require.NoError(t, err)
			clock.Advance(100 * time.Millisecond)
		}
		return calls, -1
	}
	t.Run("most calls slow, no error: opens within one window", func(t *testing.T) {
		calls, opened := run(t, 10*time.Minute, func(r *rand.Rand) time.Duration {
			if r.Float64() < 0.7 {
				return limit + time.Millisecond
			}
			return 10 * time.Millisecond
		})
		require.Positive(t, opened, "never opened in 10 minutes, %d calls", calls)
		assert.Less(t, opened, time.Minute, "opened after %v, %d calls", opened, calls)
	})
	t.Run("healthy: 30 minutes without a trip", func(t *testing.T) {
		calls, opened := run(t, 30*time.Minute, func(r *rand.Rand) time.Duration {
			if r.Float64() < 0.05 {
				return 2 * limit // now and then a slow call
			}
			return time.Duration(r.Int64N(int64(limit)))
		})
		assert.Equal(t, time.Duration(-1), opened, "opened after %d calls", calls)
		assert.Greater(t, calls, 3000)
	})
	t.Run("a slow probe reopens", func(t *testing.T) {
		clock := retry.NewFakeClock(epoch)
		b := retry.NewBreaker(retry.BreakerClock(clock), retry.BreakerSlowCall(limit), retry.BreakerMinCalls(1),
			retry.BreakerOpenPeriods(retry.Constant(time.Second)))
		p, _ := b.Allow()
		clock.Advance(limit + 1)
		p.Success()
		assert.Equal(t, retry.BreakerOpen, b.State(), "one slow call of one")
		clock.Advance(time.Second)
		p, err := b.Allow()
		require.NoError(t, err)
		clock.Advance(limit + 1)
		p.Success()
		assert.Equal(t, retry.BreakerOpen, b.State())
		clock.Advance(time.Second)
		p, _ = b.Allow()
		clock.Advance(limit) // not slower than the limit
		p.Success()
		assert.Equal(t, retry.BreakerClosed, b.State())
	})
}

// TestBreakerZero checks that a Breaker not made by NewBreaker is refused
// with a retry: message, where it is first used.
func TestBreakerZero(t *testing.T) {
	var b retry.Breaker
	assert.PanicsWithValue(t, "retry: WithBreaker: Breaker not made by NewBreaker", func() { retry.WithBreaker(&b) })
	assert.PanicsWithValue(t, "retry: Breaker.State: Breaker not made by NewBreaker", func() { b.State() })
	assert.PanicsWithValue(t, "retry: Breaker.Allow: Breaker not made by NewBreaker", func() { _, _ = b.Allow() })
	assert.PanicsWithValue(t, "retry: Breaker.Snapshot: Breaker not made by NewBreaker", func() { b.Snapshot() })
	assert.PanicsWithValue(t, "retry: BreakerSlowCall: duration 0s is not positive", func() { retry.BreakerSlowCall(0) })
}
