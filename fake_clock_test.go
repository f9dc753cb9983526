package retry

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestFakeClockZero checks that the zero FakeClock works as
// NewFakeClock(time.Time{}) does, as its doc promises.
func TestFakeClockZero(t *testing.T) {
	t.Run("time and sleeps", func(t *testing.T) {
		var c FakeClock
		assert.True(t, c.Now().IsZero())
		assert.Nil(t, c.Sleeps())
		assert.NoError(t, c.Sleep(t.Context(), time.Second))
		assert.NoError(t, c.Sleep(t.Context(), -time.Second))
		c.Advance(time.Minute)
		assert.Equal(t, time.Time{}.Add(time.Minute+time.Second), c.Now())
		assert.Equal(t, []time.Duration{time.Second, -time.Second}, c.Sleeps())
		assert.Equal(t, NewFakeClock(time.Time{}).Now(), new(FakeClock).Now())
	})
	t.Run("retry on it", func(t *testing.T) {
		var c FakeClock
		calls := 0
		err := Do(t.Context(), Constant(time.Hour).Take(2), func(context.Context) error { calls++; return errBoom },
			WithClock(&c))
		assert.ErrorIs(t, err, ErrExhausted)
		assert.Equal(t, 3, calls)
		assert.Equal(t, []time.Duration{time.Hour, time.Hour}, c.Sleeps())
		assert.Equal(t, time.Time{}.Add(2*time.Hour), c.Now())
	})
	t.Run("the deadline is tracked on it", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		var c FakeClock
		calls := 0
		err := Do(ctx, Constant(25*time.Minute), func(context.Context) error { calls++; return errBoom }, WithClock(&c))
		assert.Equal(t, 3, calls, "attempts at 0, 25 and 50 minutes; the next would start after the hour")
		assert.Equal(t, []time.Duration{25 * time.Minute, 25 * time.Minute}, c.Sleeps())
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("concurrent use", func(t *testing.T) {
		var c FakeClock
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 100 {
					_ = c.Sleep(context.Background(), time.Millisecond)
					_ = c.Now()
				}
			})
		}
		wg.Wait()
		assert.Len(t, c.Sleeps(), 400)
		assert.Equal(t, time.Time{}.Add(400*time.Millisecond), c.Now())
	})
}

// TestFakeClockSharedTime pins what FakeClock's doc says of concurrent
// users: one call's sleeps move the clock for another, whose deadline is
// then spent sooner.
func TestFakeClockSharedTime(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
	defer cancel()
	for _, shared := range []bool{false, true} {
		clock, other := NewFakeClock(epoch), NewFakeClock(epoch)
		if shared {
			other = clock
		}
		calls := 0
		err := Do(ctx, Constant(25*time.Minute), func(context.Context) error {
			if calls++; calls == 2 {
				// Another call on the other clock waits 25 minutes while
				// this one runs.
				_ = Do(t.Context(), Delays(25*time.Minute), func(context.Context) error { return errBoom }, WithClock(other))
			}
			return errBoom
		}, WithClock(clock))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		if shared {
			assert.Equal(t, 2, calls, "the other call's 25 minutes count against this call's hour")
		} else {
			assert.Equal(t, 3, calls, "attempts at 0, 25 and 50 minutes")
		}
	}
}

// TestFakeClockSharedByManyCalls: one FakeClock serves 200 concurrent Retry
// calls without a deadline; every call makes exactly its waits, and the
// clock's time is the sum of all of them.
func TestFakeClockSharedByManyCalls(t *testing.T) {
	clock := NewFakeClock(epoch)
	const calls = 200
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			n := 0
			err := Do(context.Background(), Constant(time.Second).Take(3), func(context.Context) error {
				n++
				return errBoom
			}, WithClock(clock))
			assert.ErrorIs(t, err, ErrExhausted)
			assert.Equal(t, 4, n)
		})
	}
	wg.Wait()
	assert.Len(t, clock.Sleeps(), 3*calls)
	assert.Equal(t, epoch.Add(3*calls*time.Second), clock.Now())
}
