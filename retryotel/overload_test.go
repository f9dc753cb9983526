package retryotel_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryotel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestThrottle(t *testing.T) {
	clock := retry.NewFakeClock(t0)
	th := retry.NewThrottle(retry.ThrottleClock(clock), retry.ThrottleRand(rand.NewPCG(1, 2)))
	r := newRig(t, retryotel.WithThrottle(th))
	assert.Equal(t, map[string]point{"retry.dependency=db": {Value: 0}}, r.metrics(t)[retryotel.MetricThrottle])
	opts := append(r.tel.Options(), retry.WithClock(clock), retry.WithThrottle(th))
	throttled, exhausted := 0, 0
	for range 50 {
		clock.Advance(100 * time.Millisecond) // the probability changes once per step of the window (5s/16)
		err := retry.Do(context.Background(), retry.Constant(0).Take(0), func(context.Context) error { return errFlaky }, opts...)
		switch {
		case errors.Is(err, retry.ErrThrottled):
			throttled++
		case errors.Is(err, retry.ErrExhausted):
			exhausted++
		default:
			t.Fatalf("unexpected %v", err)
		}
	}
	require.Positive(t, throttled, "the dependency failing, the throttle rejects")
	m := r.metrics(t)
	assert.Equal(t, map[string]point{
		"retry.dependency=db,retry.reason=throttled":                   {Value: float64(throttled)},
		"error.type=_OTHER,retry.dependency=db,retry.reason=exhausted": {Value: float64(exhausted)},
	}, m[retryotel.MetricCalls])
	p := th.Probability()
	assert.Greater(t, p, 0.5)
	assert.Equal(t, map[string]point{"retry.dependency=db": {Value: p}}, m[retryotel.MetricThrottle])
	assert.Equal(t, float64(exhausted), sum(m[retryotel.MetricAttempts]), "a rejected attempt is not made")
}

func TestBreaker(t *testing.T) {
	clock := retry.NewFakeClock(t0)
	b := retry.NewBreaker(retry.BreakerClock(clock), retry.BreakerMinCalls(4))
	r := newRig(t, retryotel.WithBreaker(b))
	assert.Equal(t, map[string]point{
		"retry.breaker.state=closed,retry.dependency=db":    {Value: 1},
		"retry.breaker.state=open,retry.dependency=db":      {Value: 0},
		"retry.breaker.state=half_open,retry.dependency=db": {Value: 0},
	}, r.metrics(t)[retryotel.MetricBreakerState])
	opts := append(r.tel.Options(), retry.WithClock(clock), retry.WithBreaker(b))
	open := 0
	for range 10 {
		err := retry.Do(context.Background(), retry.Constant(0).Take(0), func(context.Context) error { return errFlaky }, opts...)
		if errors.Is(err, retry.ErrBreakerOpen) {
			open++
		}
	}
	require.Positive(t, open)
	require.Equal(t, retry.BreakerOpen, b.State())
	m := r.metrics(t)
	assert.Equal(t, map[string]point{
		"retry.breaker.state=closed,retry.dependency=db":    {Value: 0},
		"retry.breaker.state=open,retry.dependency=db":      {Value: 1},
		"retry.breaker.state=half_open,retry.dependency=db": {Value: 0},
	}, m[retryotel.MetricBreakerState])
	assert.Equal(t, point{Value: float64(open)}, m[retryotel.MetricCalls]["retry.dependency=db,retry.reason=open"])
}

// TestLimiterRefusal: a call that a Limiter refuses counts under its own
// reason, limited, not as a cancellation.
func TestLimiterRefusal(t *testing.T) {
	clock := retry.NewFakeClock(t0)
	limiter := retry.NewLimiter(retry.LimiterMax(1), retry.LimiterInitial(1), retry.LimiterClock(clock))
	p, ok := limiter.TryAcquire() // the only permit: the call finds none
	require.True(t, ok)
	defer p.Drop()
	r := newRig(t)
	opts := append(r.tel.Options(), retry.WithClock(clock), retry.WithLimiter(limiter))
	err := retry.Do(context.Background(), retry.Constant(0).Take(1), func(context.Context) error { return errFlaky }, opts...)
	require.ErrorIs(t, err, retry.ErrLimited)
	assert.Equal(t, map[string]point{"retry.dependency=db,retry.reason=limited": {Value: 1}}, r.metrics(t)[retryotel.MetricCalls])
}
