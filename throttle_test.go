package retry

import (
	"context"

	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// throttled runs n calls of one attempt each through th, each failing with
// err (nil: succeeding), and returns how many reached fn.
func throttled(t *testing.T, th *Throttle, clock Clock, n int, err error) int {
	t.Helper()
	reached := 0
	for range n {
		_ = Do(t.Context(), Delays(), func(context.Context) error { reached++; return err }, WithThrottle(th), WithClock(clock))
	}
	return reached
}

func TestThrottleProbability(t *testing.T) {
	clock := NewFakeClock(epoch)
	th := NewThrottle(ThrottleClock(clock), ThrottleRand(rand.NewPCG(1, 2)))
	assert.Zero(t, th.Probability())
	// 10 successes: 10 requests, 10 accepts.
	require.Equal(t, 10, throttled(t, th, clock, 10, nil))
	assert.Zero(t, th.Probability())
	// Permanent errors and errors If rejects are the dependency's answers.
	_ = Do(t.Context(), Constant(0), func(context.Context) error { return Permanent(errBoom) }, WithThrottle(th), WithClock(clock))
	_ = Do(t.Context(), Constant(0), func(context.Context) error { return errBoom }, WithThrottle(th), WithClock(clock),
		If(func(error) bool { return false }))
	assert.Zero(t, th.Probability())
	// 12 requests, 12 accepts: 12 more requests without accepts make
	// (24 − 2·12)/25 = 0, the 13th (25 − 24)/26.
	reached := throttled(t, th, clock, 12, errBoom)
	require.Equal(t, 12, reached)
	assert.Zero(t, th.Probability())
	throttled(t, th, clock, 1, errBoom)
	assert.InDelta(t, 1.0/26, th.Probability(), 1e-12)
}

func TestThrottleRejects(t *testing.T) {
	clock := NewFakeClock(epoch)
	th := NewThrottle(ThrottleClock(clock), ThrottleRand(rand.NewPCG(1, 2)))
	throttled(t, th, clock, 100, errBoom)
	// No accepts: p = R/(R+1) with R = 100 requests, rejected ones included.
	assert.InDelta(t, 100.0/101, th.Probability(), 1e-12)
	calls := 0
	err := Do(t.Context(), Constant(0).Take(3), func(context.Context) error { calls++; return errBoom },
		WithThrottle(th), WithClock(clock))
	var e *Error
	for calls == 1 { // the 1% that went through: try again
		calls = 0
		err = Do(t.Context(), Constant(0).Take(3), func(context.Context) error { calls++; return errBoom },
			WithThrottle(th), WithClock(clock))
	}
	require.ErrorAs(t, err, &e)
	assert.ErrorIs(t, err, ErrThrottled)
	assert.Zero(t, e.Attempts)
	assert.Zero(t, calls)
	assert.Empty(t, clock.Sleeps(), "a rejected call does not wait")

	t.Run("the window slides", func(t *testing.T) {
		clock.Advance(2 * time.Minute)
		assert.Zero(t, th.Probability())
		assert.Equal(t, 5, throttled(t, th, clock, 5, nil))
	})
}

func TestThrottleBadInput(t *testing.T) {
	for _, tt := range []struct {
		name, want string
		f          func()
	}{
		{"K below 1", "retry: ThrottleK: K 0.5 is not between 1 and 1e+09", func() { ThrottleK(0.5) }},
		{"K NaN", "retry: ThrottleK: K NaN is not between 1 and 1e+09", func() { ThrottleK(nan()) }},
		{"window 0", "retry: ThrottleWindow: window 0s is not positive", func() { ThrottleWindow(0) }},
		{"window negative", "retry: ThrottleWindow: window -1s is not positive", func() { ThrottleWindow(-time.Second) }},
		{"nil Throttle", "retry: WithThrottle: nil Throttle", func() { WithThrottle(nil) }},
	} {
		t.Run(tt.name, func(t *testing.T) { assert.PanicsWithValue(t, tt.want, tt.f) })
	}
}

func nan() float64 { z := 0.0; return z / z }
