package retry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordDone returns an OnDone option that appends each Outcome to *got.
func recordDone(got *[]Outcome) Option {
	return OnDone(func(o Outcome) { *got = append(*got, o) })
}

// slow wraps fn so that each attempt takes 100 ms on clock.
func slow[T any](clock *FakeClock, fn func(context.Context) (T, error)) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) {
		clock.Advance(100 * ms)
		return fn(ctx)
	}
}

func TestOnDone(t *testing.T) {
	errCause := errors.New("shutting down")
	tests := []struct {
		name     string
		ctx      func(t *testing.T, clock *FakeClock) context.Context
		s        Schedule
		errs     []error
		opts     []Option
		attempts int
		elapsed  time.Duration
		reason   error // nil: none
		givenUp  bool  // Err is an *Error
	}{
		{name: "success at the first attempt", s: Constant(s1), attempts: 1, elapsed: 100 * ms},
		{name: "success after two failures", s: Constant(s1), errs: repeat(errBoom, 2), attempts: 3, elapsed: 2300 * ms},
		{name: "exhausted", s: Constant(s1).Take(2), errs: repeat(errBoom, 3), attempts: 3, elapsed: 2300 * ms,
			reason: ErrExhausted, givenUp: true},
		{name: "a MaxRetriesIf limit", s: Constant(s1), errs: repeat(errBoom, 3), attempts: 2, elapsed: 1200 * ms,
			opts: []Option{MaxRetriesIf(1, IsTransientForTest)}, reason: ErrExhausted, givenUp: true},
		{name: "MaxElapsed", s: Constant(s1), errs: repeat(errBoom, 9), attempts: 2, elapsed: 1200 * ms,
			opts: []Option{MaxElapsed(2 * s1)}, reason: ErrMaxElapsed, givenUp: true},
		{name: "the context's deadline", s: Constant(s1), errs: repeat(errBoom, 9), attempts: 2, elapsed: 1200 * ms,
			ctx: func(t *testing.T, _ *FakeClock) context.Context {
				ctx, cancel := context.WithTimeout(t.Context(), 2*s1)
				t.Cleanup(cancel)
				return ctx
			}, reason: context.DeadlineExceeded, givenUp: true},
		{name: "a Budget", s: Constant(s1), errs: repeat(errBoom, 9), attempts: 1, elapsed: 100 * ms,
			opts: []Option{WithBudget(NewBudget(0, 0))}, reason: ErrBudgetExhausted, givenUp: true},
		{name: "cancelled with a cause during an attempt", s: Constant(s1), attempts: 1, elapsed: 100 * ms,
			ctx: func(t *testing.T, clock *FakeClock) context.Context {
				ctx, cancel := context.WithCancelCause(t.Context())
				t.Cleanup(func() { cancel(nil) })
				return &cancelOnAdvance{Context: ctx, cancel: func() { cancel(errCause) }}
			}, errs: []error{errBoom}, reason: errCause, givenUp: true},
		{name: "done before the first attempt", s: Constant(s1), attempts: 0, elapsed: 0,
			ctx: func(t *testing.T, _ *FakeClock) context.Context {
				ctx, cancel := context.WithCancel(t.Context())
				cancel()
				return ctx
			}, reason: context.Canceled, givenUp: true},
		{name: "Permanent", s: Constant(s1), errs: []error{Permanent(errBoom)}, attempts: 1, elapsed: 100 * ms},
		{name: "rejected by If", s: Constant(s1), errs: []error{errBoom}, attempts: 1, elapsed: 100 * ms,
			opts: []Option{If(func(error) bool { return false })}},
		{name: "a server's don't", s: Constant(s1), errs: []error{RetryAfter(errBoom, -1)}, attempts: 1, elapsed: 100 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, do := range []bool{false, true} {
				clock := NewFakeClock(epoch)
				ctx := t.Context()
				if tt.ctx != nil {
					ctx = tt.ctx(t, clock)
				}
				if c, ok := ctx.(*cancelOnAdvance); ok {
					c.clock = clock
				}
				var got []Outcome
				opts := append([]Option{WithClock(clock), recordDone(&got)}, tt.opts...)
				calls := 0
				fn := slow(clock, script(&calls, tt.errs...))
				var err error
				if do {
					err = Do(ctx, tt.s, func(ctx context.Context) error { _, err := fn(ctx); return err }, opts...)
				} else {
					_, err = Retry(ctx, tt.s, fn, opts...)
				}
				require.Len(t, got, 1, "once per call")
				o := got[0]
				assert.Equal(t, tt.attempts, o.Attempts)
				assert.Equal(t, tt.elapsed, o.Elapsed)
				assert.Equal(t, err, o.Err, "Err is what the call returns")
				assert.Equal(t, tt.reason, o.Reason)
				var re *Error
				assert.Equal(t, tt.givenUp, errors.As(err, &re))
				if tt.reason != nil {
					assert.ErrorIs(t, err, tt.reason)
				}
			}
		})
	}
}

// cancelOnAdvance is a context that is cancelled when an attempt has taken
// its time on clock: the first time Err is asked after the clock moved.
type cancelOnAdvance struct {
	context.Context
	clock  *FakeClock
	cancel func()
}

func (c *cancelOnAdvance) Err() error {
	if c.clock != nil && !c.clock.Now().Equal(epoch) {
		c.cancel()
	}
	return c.Context.Err()
}

func TestOnDoneDetails(t *testing.T) {
	t.Run("a lower layer's give-up is not this call's", func(t *testing.T) {
		var got []Outcome
		below := newError(3, errBoom, ErrExhausted)
		_, err := Retry(t.Context(), Constant(s1), func(context.Context) (int, error) { return 0, below },
			If(IsTransient), recordDone(&got))
		require.Len(t, got, 1)
		assert.Same(t, below, err, "IsTransient does not retry an *Error")
		assert.ErrorIs(t, got[0].Err, ErrExhausted)
		assert.Nil(t, got[0].Reason)
	})
	t.Run("several hooks run in order, before the call returns", func(t *testing.T) {
		var order []string
		calls := 0
		_, _ = Retry(t.Context(), Constant(ms), script(&calls),
			OnDone(func(Outcome) { order = append(order, "first") }),
			OnDone(func(Outcome) { order = append(order, "second") }))
		order = append(order, "returned")
		assert.Equal(t, []string{"first", "second", "returned"}, order)
	})
	t.Run("not called when fn panics", func(t *testing.T) {
		var got []Outcome
		assert.PanicsWithValue(t, "fn", func() {
			_ = Do(t.Context(), Constant(ms), func(context.Context) error { panic("fn") }, recordDone(&got))
		})
		assert.Empty(t, got)
	})
	t.Run("Elapsed on the real clock", func(t *testing.T) {
		var got []Outcome
		calls := 0
		_, _ = Retry(t.Context(), Constant(0).Take(1), script(&calls, errBoom, errBoom), recordDone(&got))
		require.Len(t, got, 1)
		assert.GreaterOrEqual(t, got[0].Elapsed, time.Duration(0))
		assert.Equal(t, 2, got[0].Attempts)
	})
	t.Run("Hedge", func(t *testing.T) {
		var got []Outcome
		v, err := Hedge(t.Context(), Constant(s1).Take(2), func(context.Context) (int, error) { return 7, nil },
			WithClock(NewFakeClock(epoch)), recordDone(&got))
		require.NoError(t, err)
		assert.Equal(t, 7, v)
		assert.Equal(t, []Outcome{{Attempts: 1}}, got)

		got = nil
		_, err = Hedge(t.Context(), Constant(s1).Take(2), func(context.Context) (int, error) { return 0, errBoom },
			WithClock(NewFakeClock(epoch)), recordDone(&got))
		require.Len(t, got, 1)
		assert.Equal(t, 3, got[0].Attempts)
		assert.Equal(t, err, got[0].Err)
		assert.Equal(t, ErrExhausted, got[0].Reason)

		got = nil
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err = Hedge(ctx, Constant(s1), func(context.Context) (int, error) { return 0, nil }, recordDone(&got))
		assert.Equal(t, []Outcome{{Err: err, Reason: context.Canceled}}, got)
	})
	t.Run("nil panics", func(t *testing.T) {
		assert.PanicsWithValue(t, "retry: OnDone: nil function", func() { OnDone(nil) })
	})
}
