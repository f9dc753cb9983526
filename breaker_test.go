package retry

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// changes returns an OnStateChange option recording the changes in *got.
func changes(got *[]string) BreakerOption {
	return OnStateChange(func(from, to BreakerState) { *got = append(*got, from.String()+"→"+to.String()) })
}

func TestBreakerBasic(t *testing.T) {
	clock := NewFakeClock(epoch)
	var got []string
	b := NewBreaker(BreakerClock(clock), BreakerMinCalls(2), BreakerOpen(Constant(10*time.Second)), changes(&got))
	fail := func(ctx context.Context) error { return errBoom }
	calls := 0
	counted := func(ctx context.Context) error { calls++; return nil }
	require.Error(t, Do(t.Context(), Delays(), fail, WithBreaker(b), WithClock(clock)))
	assert.Equal(t, CircuitClosed, b.State())
	require.Error(t, Do(t.Context(), Delays(), fail, WithBreaker(b), WithClock(clock)))
	assert.Equal(t, CircuitOpen, b.State())

	err := Do(t.Context(), Constant(time.Second), counted, WithBreaker(b), WithClock(clock))
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.ErrorIs(t, err, ErrOpen)
	assert.Zero(t, e.Attempts)
	assert.Zero(t, calls)

	clock.Advance(10 * time.Second)
	assert.Equal(t, CircuitHalfOpen, b.State())
	require.NoError(t, Do(t.Context(), Delays(), counted, WithBreaker(b), WithClock(clock)))
	assert.Equal(t, CircuitClosed, b.State())
	assert.Equal(t, []string{"closed→open", "open→half-open", "half-open→closed"}, got)
}

func TestBreakerOpenIsTerminal(t *testing.T) {
	// A call whose attempts open the breaker stops at once: no wait.
	clock := NewFakeClock(epoch)
	b := NewBreaker(BreakerClock(clock), BreakerMinCalls(2), BreakerOpen(Constant(time.Minute)))
	calls := 0
	err := Do(t.Context(), Constant(time.Second).Take(10), func(context.Context) error { calls++; return errBoom },
		WithBreaker(b), WithClock(clock))
	assert.ErrorIs(t, err, ErrOpen)
	assert.ErrorIs(t, err, errBoom)
	assert.Equal(t, 2, calls)
	assert.Equal(t, []time.Duration{time.Second}, clock.Sleeps())

	t.Run("an outer Retry takes the open period as pushback", func(t *testing.T) {
		outer := NewFakeClock(epoch)
		n := 0
		_ = Do(t.Context(), Constant(time.Millisecond).Take(1), func(ctx context.Context) error {
			n++
			return Do(ctx, Delays(), func(context.Context) error { return nil }, WithBreaker(b), WithClock(clock))
		}, WithClock(outer))
		assert.Equal(t, []time.Duration{time.Minute}, outer.Sleeps())
	})
}

func TestBreakerBadInput(t *testing.T) {
	for _, tt := range []struct {
		name, want string
		f          func()
	}{
		{"ratio 0", "retry: BreakerRatio: ratio 0 is not in (0, 1]", func() { BreakerRatio(0) }},
		{"ratio above 1", "retry: BreakerRatio: ratio 1.5 is not in (0, 1]", func() { BreakerRatio(1.5) }},
		{"ratio NaN", "retry: BreakerRatio: ratio NaN is not in (0, 1]", func() { BreakerRatio(nan()) }},
		{"min calls 0", "retry: BreakerMinCalls: count 0 is less than 1", func() { BreakerMinCalls(0) }},
		{"probes 0", "retry: BreakerProbes: count 0 is less than 1", func() { BreakerProbes(0) }},
		{"window 0", "retry: BreakerWindow: window 0s is not positive", func() { BreakerWindow(0) }},
		{"nil schedule", "retry: BreakerOpen of a nil Schedule", func() { BreakerOpen(nil) }},
		{"nil hook", "retry: OnStateChange: nil function", func() { OnStateChange(nil) }},
		{"nil Breaker", "retry: WithBreaker: nil Breaker", func() { WithBreaker(nil) }},
	} {
		t.Run(tt.name, func(t *testing.T) { assert.PanicsWithValue(t, tt.want, tt.f) })
	}
}
