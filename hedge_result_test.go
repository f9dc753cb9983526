package retry

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOnHedgeDone(t *testing.T) {
	errFlaky := errors.New("flaky")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type report struct {
		o Outcome
		r HedgeResult
	}
	run := func(t *testing.T, s Schedule, results []error, opts ...Option) (report, int) {
		t.Helper()
		var got []report
		calls := 0
		fn := func(context.Context) (int, error) {
			calls++
			return calls, results[min(calls, len(results))-1]
		}
		opts = append(opts, WithClock(NewFakeClock(t0)), OnHedgeDone(func(o Outcome, r HedgeResult) {
			got = append(got, report{o, r})
		}))
		_, _ = Hedge(context.Background(), s, fn, opts...)
		require.Len(t, got, 1, "OnHedgeDone runs once")
		return got[0], calls
	}
	t.Run("first wins", func(t *testing.T) {
		got, _ := run(t, Constant(time.Second).Take(3), []error{nil})
		assert.Equal(t, HedgeResult{Winner: 1}, got.r)
		assert.Equal(t, 1, got.o.Attempts)
		assert.NoError(t, got.o.Err)
	})
	t.Run("hedge wins after failures", func(t *testing.T) {
		got, _ := run(t, Constant(time.Second).Take(3), []error{errFlaky, errFlaky, nil})
		assert.Equal(t, HedgeResult{Winner: 3, Failed: 2}, got.r)
		assert.Equal(t, 3, got.o.Attempts)
	})
	t.Run("exhausted", func(t *testing.T) {
		got, _ := run(t, Constant(time.Second).Take(2), []error{errFlaky})
		assert.Equal(t, HedgeResult{Failed: 3}, got.r)
		assert.Equal(t, 3, got.o.Attempts)
		assert.ErrorIs(t, got.o.Reason, ErrExhausted)
	})
	t.Run("permanent", func(t *testing.T) {
		got, _ := run(t, Constant(time.Second).Take(2), []error{errFlaky, Permanent(errFlaky)})
		assert.Equal(t, HedgeResult{Failed: 2}, got.r)
		assert.Nil(t, got.o.Reason)
		assert.ErrorIs(t, got.o.Err, errFlaky)
	})
	t.Run("with OnDone, same outcome, after it", func(t *testing.T) {
		var order []string
		var done Outcome
		got, _ := run(t, Constant(time.Second).Take(2), []error{errFlaky},
			OnDone(func(o Outcome) { order = append(order, "done"); done = o }),
			OnHedgeDone(func(Outcome, HedgeResult) { order = append(order, "hedge") }))
		assert.Equal(t, []string{"done", "hedge"}, order)
		assert.Equal(t, done, got.o)
	})
	t.Run("context done before the first attempt", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var got []HedgeResult
		var outcome Outcome
		_, err := Hedge(ctx, Constant(time.Second), func(context.Context) (int, error) { return 1, nil },
			OnHedgeDone(func(o Outcome, r HedgeResult) { got = append(got, r); outcome = o }))
		require.Error(t, err)
		assert.Equal(t, []HedgeResult{{}}, got)
		assert.Equal(t, 0, outcome.Attempts)
		assert.ErrorIs(t, outcome.Reason, context.Canceled)
	})
	t.Run("a hedge wins a race; the first is abandoned", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var got HedgeResult
			var o Outcome
			var n atomic.Int32
			_, err := Hedge(context.Background(), Constant(10*time.Millisecond).Take(1), func(ctx context.Context) (int, error) {
				if n.Add(1) == 1 {
					<-ctx.Done() // the first attempt hangs until it loses
					return 0, ctx.Err()
				}
				return 2, nil
			}, OnHedgeDone(func(oc Outcome, r HedgeResult) { o, got = oc, r }))
			require.NoError(t, err)
			assert.Equal(t, HedgeResult{Winner: 2}, got)
			assert.Equal(t, 2, o.Attempts)
			assert.Equal(t, 10*time.Millisecond, o.Elapsed)
			synctest.Wait()
		})
	})
	t.Run("Retry and Do refuse it, before the first attempt", func(t *testing.T) {
		called, calls := false, 0
		hook := OnHedgeDone(func(Outcome, HedgeResult) { called = true })
		assert.PanicsWithValue(t, "retry: Retry: OnHedgeDone reports on Hedge calls only; use OnDone", func() {
			_, _ = Retry(context.Background(), Constant(0).Take(1), func(context.Context) (int, error) { calls++; return 0, errFlaky }, hook)
		})
		assert.PanicsWithValue(t, "retry: Do: OnHedgeDone reports on Hedge calls only; use OnDone", func() {
			_ = Do(context.Background(), Constant(0).Take(1), func(context.Context) error { calls++; return nil }, hook)
		})
		assert.False(t, called)
		assert.Zero(t, calls)
	})
	t.Run("nil panics", func(t *testing.T) {
		assert.PanicsWithValue(t, "retry: OnHedgeDone: nil function", func() { OnHedgeDone(nil) })
	})
}
