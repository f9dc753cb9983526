package retry_test

import (
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBreakerOpenPeriods checks that the k-th open period in a row is the
// k-th delay of the schedule, and that finding it costs O(1): 2 000 trips
// in a row range a hand-written schedule for a number of delays linear in
// 2 000 (walking it from its start at each trip took 2 001 000 steps).
func TestBreakerOpenPeriods(t *testing.T) {
	trips := func(b *retry.Breaker, clock *retry.FakeClock, n int) []time.Duration {
		var periods []time.Duration
		for range n {
			p, err := b.Allow()
			if err != nil {
				panic(err)
			}
			p.Failure()
			d := b.Snapshot().OpenFor
			periods = append(periods, d)
			clock.Advance(d)
		}
		return periods
	}
	t.Run("hand-written", func(t *testing.T) {
		steps := 0
		linear := func(yield func(time.Duration) bool) { // 1s, 2s, 3s, …
			for i := 1; ; i++ {
				steps++
				if !yield(time.Duration(i) * time.Second) {
					return
				}
			}
		}
		clock := retry.NewFakeClock(epoch)
		b := retry.NewBreaker(retry.BreakerClock(clock), retry.BreakerMinCalls(1), retry.BreakerOpenPeriods(linear))
		const n = 2000
		periods := trips(b, clock, n)
		for k, d := range periods {
			if d != time.Duration(k+1)*time.Second {
				t.Fatalf("open period %d: %v, want %v", k+1, d, time.Duration(k+1)*time.Second)
			}
		}
		assert.LessOrEqual(t, steps, 4*n+16, "steps ranged for %d open periods", n)
		// Closing ends the streak: the next one starts from the first delay.
		p, _ := b.Allow()
		p.Success()
		require.Equal(t, retry.BreakerClosed, b.State())
		assert.Equal(t, []time.Duration{time.Second, 2 * time.Second}, trips(b, clock, 2))
	})
	t.Run("built-in", func(t *testing.T) {
		clock := retry.NewFakeClock(epoch)
		b := retry.NewBreaker(retry.BreakerClock(clock), retry.BreakerMinCalls(1),
			retry.BreakerOpenPeriods(retry.Exponential(time.Second).Take(3)))
		assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second},
			trips(b, clock, 5), "the last delay once the schedule has run out")
	})
	t.Run("none", func(t *testing.T) {
		clock := retry.NewFakeClock(epoch)
		b := retry.NewBreaker(retry.BreakerClock(clock), retry.BreakerMinCalls(1), retry.BreakerOpenPeriods(retry.Delays()))
		assert.Equal(t, []time.Duration{0, 0}, trips(b, clock, 2), "a schedule without delays half-opens at once")
	})
}
