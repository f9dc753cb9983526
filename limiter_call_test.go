package retry_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-b8c8f69d/retry"
)

// TestWithLimiter checks that every attempt of Retry, Do and Hedge holds a
// permit while in flight, and that the permits all come back.
func TestWithLimiter(t *testing.T) {
	ctx := context.Background()
	errBoom := errors.New("boom")
	t.Run("each attempt of Do holds a permit", func(t *testing.T) {
		l := retry.NewLimiter(retry.LimiterInitial(3))
		var seen []int
		err := retry.Do(ctx, retry.Constant(0).Take(2), func(context.Context) error {
			seen = append(seen, l.InFlight())
			return errBoom
		}, retry.WithLimiter(l))
		assert.ErrorIs(t, err, retry.ErrExhausted)
		assert.Equal(t, []int{1, 1, 1}, seen)
		assert.Zero(t, l.InFlight())
	})
	t.Run("a call without a permit is refused with ErrLimited and its pushback", func(t *testing.T) {
		l := retry.NewLimiter(retry.LimiterInitial(1))
		p, _ := l.TryAcquire()
		calls := 0
		_, err := retry.Retry(ctx, retry.Constant(0).Take(2), func(context.Context) (int, error) {
			calls++
			return 1, nil
		}, retry.WithLimiter(l))
		assert.ErrorIs(t, err, retry.ErrLimited)
		var e *retry.Error
		require.ErrorAs(t, err, &e)
		assert.Zero(t, e.Attempts)
		assert.Zero(t, calls)
		p.Success()
		assert.Zero(t, l.InFlight())
	})
	t.Run("a retry without a permit ends the call and refunds its budget token", func(t *testing.T) {
		l := retry.NewLimiter(retry.LimiterInitial(1))
		budget := retry.NewBudget(0, 5)
		var other retry.Permit
		calls := 0
		err := retry.Do(ctx, retry.Constant(0).Take(3), func(context.Context) error {
			calls++
			return errBoom
		}, retry.WithLimiter(l), retry.WithBudget(budget), retry.OnRetry(func(retry.Attempt) {
			other, _ = l.TryAcquire() // someone else takes the permit the attempt gave back
		}))
		assert.ErrorIs(t, err, retry.ErrLimited)
		assert.ErrorIs(t, err, errBoom)
		assert.Equal(t, 1, calls)
		assert.Equal(t, 5.0, budget.Tokens(), "the refused retry's token came back")
		other.Success()
		assert.Zero(t, l.InFlight())
	})
	t.Run("a retry waits for a permit within LimiterMaxWait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := retry.NewLimiter(retry.LimiterInitial(1), retry.LimiterMaxWait(time.Second))
			calls := 0
			err := retry.Do(ctx, retry.Constant(0).Take(1), func(context.Context) error {
				calls++
				if calls == 1 {
					other, _ := l.Acquire(ctx) // none: the attempt holds it
					assert.Equal(t, retry.Permit{}, other)
					go func() {
						q, err := l.Acquire(ctx) // waits for this attempt's permit
						if err == nil {
							time.Sleep(100 * time.Millisecond)
							q.Success()
						}
					}()
					synctest.Wait()
					return errBoom
				}
				return nil
			}, retry.WithLimiter(l))
			assert.NoError(t, err)
			assert.Equal(t, 2, calls)
			synctest.Wait()
			assert.Zero(t, l.InFlight())
		})
	})
	t.Run("outcomes: a context ended by the caller counts nothing", func(t *testing.T) {
		l := retry.NewLimiter(retry.LimiterInitial(1))
		cctx, cancel := context.WithCancel(ctx)
		err := retry.Do(cctx, retry.Constant(0).Take(3), func(context.Context) error {
			cancel()
			return context.Canceled
		}, retry.WithLimiter(l))
		assert.ErrorIs(t, err, context.Canceled)
		assert.Zero(t, l.InFlight())
	})
	t.Run("a panic in fn gives the permit back", func(t *testing.T) {
		l := retry.NewLimiter(retry.LimiterInitial(1))
		assert.Panics(t, func() {
			_ = retry.Do(ctx, retry.Constant(0).Take(1), func(context.Context) error { panic("x") }, retry.WithLimiter(l))
		})
		assert.Zero(t, l.InFlight())
	})
}

func TestHedgeWithLimiter(t *testing.T) {
	ctx := context.Background()
	t.Run("each hedge holds a permit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := retry.NewLimiter(retry.LimiterInitial(5))
			var mu sync.Mutex
			var seen []int
			v, err := retry.Hedge(ctx, retry.Constant(10*time.Millisecond).Take(2), func(ctx context.Context) (int, error) {
				mu.Lock()
				seen = append(seen, l.InFlight())
				mu.Unlock()
				select {
				case <-time.After(100 * time.Millisecond):
					return 1, nil
				case <-ctx.Done():
					return 0, ctx.Err()
				}
			}, retry.WithLimiter(l))
			require.NoError(t, err)
			assert.Equal(t, 1, v)
			assert.Equal(t, []int{1, 2, 3}, seen)
			synctest.Wait()
			assert.Zero(t, l.InFlight())
		})
	})
	t.Run("a hedge without a permit is not sent, and the call goes on", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := retry.NewLimiter(retry.LimiterInitial(1))
			calls := 0
			v, err := retry.Hedge(ctx, retry.Constant(10*time.Millisecond).Take(3), func(ctx context.Context) (int, error) {
				calls++
				time.Sleep(100 * time.Millisecond)
				return 7, nil
			}, retry.WithLimiter(l))
			require.NoError(t, err)
			assert.Equal(t, 7, v)
			assert.Equal(t, 1, calls, "the hedges found no permit")
			synctest.Wait()
			assert.Zero(t, l.InFlight())
		})
	})
	t.Run("a first attempt without a permit is refused", func(t *testing.T) {
		l := retry.NewLimiter(retry.LimiterInitial(1))
		p, _ := l.TryAcquire()
		_, err := retry.Hedge(ctx, retry.Constant(time.Millisecond).Take(3), func(context.Context) (int, error) { return 1, nil }, retry.WithLimiter(l))
		assert.ErrorIs(t, err, retry.ErrLimited)
		p.Success()
	})
	t.Run("a retry after a failure with nothing in flight takes the freed permit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := retry.NewLimiter(retry.LimiterInitial(1))
			calls := 0
			v, err := retry.Hedge(ctx, retry.Constant(time.Second).Take(3), func(ctx context.Context) (int, error) {
				calls++
				if calls == 1 {
					return 0, errors.New("transient")
				}
				return 2, nil
			}, retry.WithLimiter(l))
			require.NoError(t, err)
			assert.Equal(t, 2, v)
			assert.Equal(t, 2, calls)
			assert.Zero(t, l.InFlight())
		})
	})
}
