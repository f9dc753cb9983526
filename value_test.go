package retry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// poll returns an fn whose i-th call returns values[i] (the last one once
// they run out) and a nil error, counting its calls.
func poll(calls *int, values ...string) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		*calls++
		return values[min(*calls, len(values))-1], nil
	}
}

func pending(s string) bool { return s == "pending" }

func TestIfValue(t *testing.T) {
	t.Run("a rejected value is retried until one is accepted", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		calls := 0
		v, err := Retry(t.Context(), Constant(s1), poll(&calls, "pending", "pending", "done"),
			WithClock(clock), IfValue(pending))
		require.NoError(t, err)
		assert.Equal(t, "done", v)
		assert.Equal(t, 3, calls)
		assert.Equal(t, []time.Duration{s1, s1}, clock.Sleeps())
	})
	t.Run("exhausted: the last value and an *Error without a last error", func(t *testing.T) {
		calls := 0
		v, err := Retry(t.Context(), Constant(s1).Take(2), poll(&calls, "pending"),
			WithClock(NewFakeClock(epoch)), IfValue(pending))
		assert.Equal(t, "pending", v)
		assert.Equal(t, 3, calls)
		var re *Error
		require.ErrorAs(t, err, &re)
		assert.Equal(t, 3, re.Attempts)
		assert.Nil(t, re.Last)
		assert.ErrorIs(t, err, ErrExhausted)
		assert.Equal(t, []error{ErrExhausted}, re.Unwrap())
		assert.Equal(t, "retry: gave up after 3 attempts: schedule exhausted", err.Error())
	})
	t.Run("errors and values mix; If is not asked about values", func(t *testing.T) {
		calls := 0
		var asked []error
		var seen []Attempt
		errs := []error{errBoom, nil, nil}
		values := []string{"", "pending", "done"}
		v, err := Retry(t.Context(), Constant(s1), func(context.Context) (string, error) {
			calls++
			return values[calls-1], errs[calls-1]
		}, WithClock(NewFakeClock(epoch)), IfValue(pending),
			If(func(err error) bool { asked = append(asked, err); return true }),
			OnRetry(func(a Attempt) { a.Elapsed = 0; seen = append(seen, a) }))
		require.NoError(t, err)
		assert.Equal(t, "done", v)
		assert.Equal(t, []error{errBoom}, asked)
		assert.Equal(t, []Attempt{{Number: 1, Err: errBoom, Delay: s1}, {Number: 2, Delay: s1}}, seen,
			"OnRetry sees a nil Err for a rejected value")
	})
	t.Run("a value after an error: the *Error has no last error", func(t *testing.T) {
		calls := 0
		errs := []error{errBoom, nil}
		_, err := Retry(t.Context(), Constant(s1).Take(1), func(context.Context) (string, error) {
			calls++
			return "pending", errs[calls-1]
		}, WithClock(NewFakeClock(epoch)), IfValue(pending))
		assert.ErrorIs(t, err, ErrExhausted)
		assert.NotErrorIs(t, err, errBoom)
	})
	t.Run("several: any rejects", func(t *testing.T) {
		calls := 0
		v, err := Retry(t.Context(), Constant(s1), poll(&calls, "pending", "empty", "done"),
			WithClock(NewFakeClock(epoch)), IfValue(pending), IfValue(func(s string) bool { return s == "empty" }))
		require.NoError(t, err)
		assert.Equal(t, "done", v)
		assert.Equal(t, 3, calls)
	})
	t.Run("bounded like errors: MaxElapsed, the context, a Budget", func(t *testing.T) {
		calls := 0
		_, err := Retry(t.Context(), Constant(s1), poll(&calls, "pending"),
			WithClock(NewFakeClock(epoch)), IfValue(pending), MaxElapsed(2*s1))
		assert.ErrorIs(t, err, ErrMaxElapsed)
		assert.Equal(t, 3, calls)

		calls = 0
		_, err = Retry(t.Context(), Constant(s1), poll(&calls, "pending"),
			WithClock(NewFakeClock(epoch)), IfValue(pending), WithBudget(NewBudget(0, 1)))
		assert.ErrorIs(t, err, ErrBudgetExhausted)
		assert.Equal(t, 2, calls)

		ctx, cancel := context.WithCancel(t.Context())
		calls = 0
		_, err = Retry(ctx, Constant(s1), func(ctx context.Context) (string, error) {
			calls++
			cancel()
			return "pending", nil
		}, WithClock(NewFakeClock(epoch)), IfValue(pending))
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 1, calls)
	})
	t.Run("MaxRetriesIf does not count values", func(t *testing.T) {
		calls := 0
		var asked int
		_, err := Retry(t.Context(), Constant(s1).Take(3), poll(&calls, "pending"),
			WithClock(NewFakeClock(epoch)), IfValue(pending),
			MaxRetriesIf(0, func(error) bool { asked++; return true }))
		assert.ErrorIs(t, err, ErrExhausted)
		assert.Equal(t, 4, calls)
		assert.Zero(t, asked)
	})
	t.Run("an accepted value is a success, whatever the schedule", func(t *testing.T) {
		calls := 0
		v, err := Retry(t.Context(), Delays(), poll(&calls, "done"), IfValue(pending))
		require.NoError(t, err)
		assert.Equal(t, "done", v)
	})
	t.Run("the type must match", func(t *testing.T) {
		calls := 0
		assert.PanicsWithValue(t, "retry: Retry: IfValue's function is a func(int) bool, not a func(string) bool", func() {
			_, _ = Retry(t.Context(), Delays(), poll(&calls, "done"), IfValue(func(int) bool { return false }))
		})
		assert.Zero(t, calls, "it panics before the first attempt")
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		assert.Panics(t, func() {
			_, _ = Retry(ctx, Delays(), poll(&calls, "done"), IfValue(func(int) bool { return false }))
		}, "even if ctx is done")
	})
	t.Run("Do, Hedge and nil panic", func(t *testing.T) {
		assert.PanicsWithValue(t, "retry: Do: IfValue has no value to judge; use it with Retry", func() {
			_ = Do(t.Context(), Delays(), func(context.Context) error { return nil }, IfValue(pending))
		})
		assert.PanicsWithValue(t, "retry: Hedge: IfValue is not supported; use it with Retry, or return an error for a value to retry", func() {
			_, _ = Hedge(t.Context(), Delays(), func(context.Context) (string, error) { return "", nil }, IfValue(pending))
		})
		assert.PanicsWithValue(t, "retry: IfValue: nil function", func() { IfValue[string](nil) })
	})
	t.Run("errors.Is on the reason only", func(t *testing.T) {
		calls := 0
		_, err := Retry(t.Context(), Delays(), poll(&calls, "pending"), IfValue(pending))
		assert.True(t, errors.Is(err, ErrExhausted))
	})
}

func TestRetryDiscard(t *testing.T) {
	t.Run("each value IfValue rejected is released once another attempt replaces it", func(t *testing.T) {
		var released []string
		calls := 0
		v, err := Retry(t.Context(), Constant(s1), poll(&calls, "pending 1", "pending 2", "done"),
			WithClock(NewFakeClock(epoch)), IfValue(func(s string) bool { return s != "done" }),
			OnDiscard(func(s string) { released = append(released, s) }))
		require.NoError(t, err)
		assert.Equal(t, "done", v)
		assert.Equal(t, []string{"pending 1", "pending 2"}, released)
	})
	t.Run("the value returned when the call gives up is not released", func(t *testing.T) {
		var released []string
		calls := 0
		v, err := Retry(t.Context(), Constant(s1).Take(2), poll(&calls, "pending 1", "pending 2", "pending 3"),
			WithClock(NewFakeClock(epoch)), IfValue(func(string) bool { return true }),
			OnDiscard(func(s string) { released = append(released, s) }), OnDiscard(func(string) { released = append(released, "again") }))
		assert.ErrorIs(t, err, ErrExhausted)
		assert.Equal(t, "pending 3", v)
		assert.Equal(t, []string{"pending 1", "again", "pending 2", "again"}, released, "several Discards all run, in order")
	})
	t.Run("the value of a failed attempt is not released", func(t *testing.T) {
		var released []int
		calls := 0
		_, err := Retry(t.Context(), Constant(s1).Take(1), func(context.Context) (int, error) {
			calls++
			return calls, errBoom
		}, WithClock(NewFakeClock(epoch)), IfValue(func(int) bool { return true }),
			OnDiscard(func(v int) { released = append(released, v) }))
		assert.ErrorIs(t, err, errBoom)
		assert.Empty(t, released)
	})
	t.Run("the wrong type panics at the call, even if ctx is done", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		calls := 0
		assert.PanicsWithValue(t, "retry: Retry: OnDiscard's function is a func(int), not a func(string)", func() {
			_, _ = Retry(ctx, Delays(), poll(&calls, "done"), OnDiscard(func(int) {}))
		})
		assert.Zero(t, calls)
	})
}
