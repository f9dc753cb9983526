package retryotel_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryotel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

var (
	errFlaky   = errors.New("flaky")
	errTimeout = context.DeadlineExceeded
)

// classify gives errFlaky a class of its own.
func classify(err error) string {
	if errors.Is(err, errFlaky) {
		return "flaky"
	}
	return retryotel.DefaultErrorClass(err)
}

func TestRetryMetrics(t *testing.T) {
	policy := retry.Constant(time.Second).Take(3)
	t.Run("success after two retries", func(t *testing.T) {
		r := newRig(t, retryotel.WithErrorClass(classify))
		fn, _ := script(errFlaky, errFlaky)
		v, err := retry.Retry(context.Background(), policy, fn, append(r.tel.Options(), fakeClock())...)
		require.NoError(t, err)
		assert.Equal(t, 3, v)
		m := r.metrics(t)
		assert.Equal(t, map[string]point{
			"error.type=flaky,retry.attempt.outcome=retryable,retry.dependency=db": {Value: 2},
			"retry.attempt.outcome=success,retry.dependency=db":                    {Value: 1},
		}, m[retryotel.MetricAttempts])
		assert.Equal(t, map[string]point{"retry.dependency=db,retry.reason=success": {Value: 1}}, m[retryotel.MetricCalls])
		assert.Equal(t, map[string]point{"error.type=flaky,retry.dependency=db": {Count: 2, Sum: 2}}, m[retryotel.MetricWaitDuration])
		assert.Equal(t, map[string]point{"retry.dependency=db,retry.reason=success": {Count: 1, Sum: 2}}, m[retryotel.MetricCallDuration])
		assert.NotContains(t, m, retryotel.MetricHedges)
	})
	t.Run("exhausted", func(t *testing.T) {
		r := newRig(t, retryotel.WithErrorClass(classify))
		fn, _ := script(errFlaky, errFlaky, errFlaky, errFlaky)
		_, err := retry.Retry(context.Background(), policy, fn, append(r.tel.Options(), fakeClock())...)
		require.ErrorIs(t, err, retry.ErrExhausted)
		m := r.metrics(t)
		assert.Equal(t, map[string]point{
			"error.type=flaky,retry.attempt.outcome=retryable,retry.dependency=db": {Value: 4},
		}, m[retryotel.MetricAttempts])
		assert.Equal(t, map[string]point{"error.type=flaky,retry.dependency=db,retry.reason=exhausted": {Value: 1}}, m[retryotel.MetricCalls])
		assert.Equal(t, map[string]point{"retry.dependency=db,retry.reason=exhausted": {Count: 1, Sum: 3}}, m[retryotel.MetricCallDuration])
	})
	t.Run("permanent, with Do", func(t *testing.T) {
		r := newRig(t)
		n := 0
		err := retry.Do(context.Background(), policy, func(context.Context) error {
			n++
			if n == 1 {
				return errTimeout
			}
			return retry.Permanent(errFlaky)
		}, append(r.tel.Options(), fakeClock())...)
		require.ErrorIs(t, err, errFlaky)
		m := r.metrics(t)
		assert.Equal(t, map[string]point{
			"error.type=timeout,retry.attempt.outcome=retryable,retry.dependency=db": {Value: 1},
			"error.type=_OTHER,retry.attempt.outcome=permanent,retry.dependency=db":  {Value: 1},
		}, m[retryotel.MetricAttempts])
		assert.Equal(t, map[string]point{"error.type=_OTHER,retry.dependency=db,retry.reason=not_retried": {Value: 1}}, m[retryotel.MetricCalls])
	})
	t.Run("budget and max elapsed", func(t *testing.T) {
		r := newRig(t)
		b := retry.NewBudget(0.1, 0)
		fn, _ := script(errFlaky)
		_, err := retry.Retry(context.Background(), policy, fn, append(r.tel.Options(), fakeClock(), retry.WithBudget(b))...)
		require.ErrorIs(t, err, retry.ErrBudgetExhausted)
		fn, _ = script(errFlaky, errFlaky)
		_, err = retry.Retry(context.Background(), policy, fn, append(r.tel.Options(), fakeClock(), retry.MaxElapsed(1500*time.Millisecond))...)
		require.ErrorIs(t, err, retry.ErrMaxElapsed)
		m := r.metrics(t)
		assert.Equal(t, map[string]point{
			"error.type=_OTHER,retry.dependency=db,retry.reason=budget_exhausted": {Value: 1},
			"error.type=_OTHER,retry.dependency=db,retry.reason=max_elapsed":      {Value: 1},
		}, m[retryotel.MetricCalls])
		assert.Equal(t, map[string]point{
			"error.type=_OTHER,retry.attempt.outcome=retryable,retry.dependency=db": {Value: 3},
		}, m[retryotel.MetricAttempts])
	})
	t.Run("context", func(t *testing.T) {
		r := newRig(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		fn, _ := script()
		_, err := retry.Retry(ctx, policy, fn, r.tel.Options()...)
		require.ErrorIs(t, err, context.Canceled)
		clock := retry.NewFakeClock(t0)
		dctx, dcancel := context.WithDeadline(context.Background(), time.Now().Add(time.Hour))
		defer dcancel()
		// The wait after the first failure would pass the deadline: the
		// attempt was a retryable failure; the call gave up for the deadline.
		fn, _ = script(errFlaky, errFlaky)
		_, err = retry.Retry(dctx, retry.Constant(2*time.Hour), fn, append(r.tel.Options(), retry.WithClock(clock))...)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		cctx, ccancel := context.WithCancel(context.Background())
		_, err = retry.Retry(cctx, policy, func(context.Context) (int, error) { ccancel(); return 0, context.Canceled },
			append(r.tel.Options(), fakeClock())...)
		require.ErrorIs(t, err, context.Canceled)
		m := r.metrics(t)
		assert.Equal(t, map[string]point{
			"retry.dependency=db,retry.reason=cancelled":                     {Value: 1},
			"error.type=_OTHER,retry.dependency=db,retry.reason=deadline":    {Value: 1},
			"error.type=canceled,retry.dependency=db,retry.reason=cancelled": {Value: 1},
		}, m[retryotel.MetricCalls])
		assert.Equal(t, map[string]point{
			"error.type=_OTHER,retry.attempt.outcome=retryable,retry.dependency=db":   {Value: 1},
			"error.type=canceled,retry.attempt.outcome=cancelled,retry.dependency=db": {Value: 1},
		}, m[retryotel.MetricAttempts])
	})
}

func TestHedgeMetrics(t *testing.T) {
	t.Run("a hedge after a failure wins", func(t *testing.T) {
		r := newRig(t, retryotel.WithErrorClass(classify))
		fn, _ := script(errFlaky)
		_, err := retry.Hedge(context.Background(), retry.Constant(time.Second).Take(3), fn, append(r.tel.HedgeOptions(), fakeClock())...)
		require.NoError(t, err)
		m := r.metrics(t)
		assert.Equal(t, map[string]point{"retry.dependency=db": {Value: 1}}, m[retryotel.MetricHedges])
		assert.Equal(t, map[string]point{"retry.dependency=db": {Value: 1}}, m[retryotel.MetricHedgeWins])
		assert.Equal(t, map[string]point{
			"retry.attempt.outcome=retryable,retry.dependency=db": {Value: 1},
			"retry.attempt.outcome=success,retry.dependency=db":   {Value: 1},
		}, m[retryotel.MetricAttempts])
		assert.Equal(t, map[string]point{"retry.dependency=db,retry.reason=success": {Value: 1}}, m[retryotel.MetricCalls])
	})
	t.Run("a hedge after a delay wins; the first is abandoned", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t)
			first := make(chan struct{}, 1)
			first <- struct{}{}
			_, err := retryotel.Hedge(context.Background(), r.tel, retry.Constant(10*time.Millisecond).Take(1), func(ctx context.Context) (int, error) {
				select {
				case <-first:
					<-ctx.Done()
					return 0, ctx.Err()
				default:
					return 2, nil
				}
			})
			require.NoError(t, err)
			synctest.Wait()
			m := r.metrics(t)
			assert.Equal(t, map[string]point{"retry.dependency=db": {Value: 1}}, m[retryotel.MetricHedges])
			assert.Equal(t, map[string]point{"retry.dependency=db": {Value: 1}}, m[retryotel.MetricHedgeWins])
			assert.Equal(t, map[string]point{
				"retry.attempt.outcome=cancelled,retry.dependency=db": {Value: 1},
				"retry.attempt.outcome=success,retry.dependency=db":   {Value: 1},
			}, m[retryotel.MetricAttempts])
			assert.Equal(t, map[string]point{"retry.dependency=db,retry.reason=success": {Count: 1, Sum: 0.01}}, m[retryotel.MetricCallDuration])
		})
	})
	t.Run("the first attempt wins: no hedge", func(t *testing.T) {
		r := newRig(t)
		fn, _ := script()
		_, err := retry.Hedge(context.Background(), retry.Constant(time.Second), fn, append(r.tel.HedgeOptions(), fakeClock())...)
		require.NoError(t, err)
		m := r.metrics(t)
		assert.NotContains(t, m, retryotel.MetricHedges)
		assert.NotContains(t, m, retryotel.MetricHedgeWins)
		assert.Equal(t, map[string]point{"retry.attempt.outcome=success,retry.dependency=db": {Value: 1}}, m[retryotel.MetricAttempts])
	})
	t.Run("exhausted and permanent", func(t *testing.T) {
		r := newRig(t, retryotel.WithErrorClass(classify))
		fn, _ := script(errFlaky, errFlaky)
		_, err := retry.Hedge(context.Background(), retry.Constant(time.Second).Take(1), fn, append(r.tel.HedgeOptions(), fakeClock())...)
		require.ErrorIs(t, err, retry.ErrExhausted)
		fn, _ = script(errFlaky, retry.Permanent(errTimeout))
		_, err = retry.Hedge(context.Background(), retry.Constant(time.Second).Take(1), fn, append(r.tel.HedgeOptions(), fakeClock())...)
		require.ErrorIs(t, err, errTimeout)
		m := r.metrics(t)
		assert.Equal(t, map[string]point{
			"retry.attempt.outcome=retryable,retry.dependency=db":                    {Value: 2},
			"error.type=flaky,retry.attempt.outcome=retryable,retry.dependency=db":   {Value: 1},
			"error.type=timeout,retry.attempt.outcome=permanent,retry.dependency=db": {Value: 1},
		}, m[retryotel.MetricAttempts])
		assert.Equal(t, map[string]point{
			"error.type=flaky,retry.dependency=db,retry.reason=exhausted":     {Value: 1},
			"error.type=timeout,retry.dependency=db,retry.reason=not_retried": {Value: 1},
		}, m[retryotel.MetricCalls])
		assert.Equal(t, map[string]point{"retry.dependency=db": {Value: 2}}, m[retryotel.MetricHedges])
	})
}

func TestEvents(t *testing.T) {
	r := newRig(t, retryotel.WithErrorClass(classify))
	ctx, span := r.tp.Tracer("test").Start(context.Background(), "caller")
	err := retryotel.Do(ctx, r.tel, retry.Constant(time.Second).Take(3), func(context.Context) error {
		return errFlaky
	}, fakeClock())
	require.ErrorIs(t, err, retry.ErrExhausted)
	fn, _ := script(errFlaky)
	_, err = retryotel.Retry(ctx, r.tel, retry.Constant(250*time.Millisecond), fn, fakeClock())
	require.NoError(t, err)
	fn, _ = script(errFlaky)
	_, err = retryotel.Hedge(ctx, r.tel, retry.Constant(time.Second), fn, fakeClock())
	require.NoError(t, err)
	span.End()
	ended := r.spans.Ended()
	require.Len(t, ended, 1, "events, no spans of retryotel's")
	assert.Equal(t, []string{
		"retry error.type=flaky retry.attempt=1 retry.delay=1",
		"retry error.type=flaky retry.attempt=2 retry.delay=1",
		"retry error.type=flaky retry.attempt=3 retry.delay=1",
		"retry error.type=flaky retry.attempt=1 retry.delay=0.25",
		"hedge error.type=flaky retry.attempt=2 retry.hedge.trigger=failure",
	}, events(ended[0]))
	m := r.metrics(t)
	assert.Equal(t, point{Value: 3}, add(m[retryotel.MetricCalls]["error.type=flaky,retry.dependency=db,retry.reason=exhausted"],
		m[retryotel.MetricCalls]["retry.dependency=db,retry.reason=success"]))
}

func add(p, q point) point {
	return point{Value: p.Value + q.Value, Count: p.Count + q.Count, Sum: p.Sum + q.Sum}
}

func TestEventsNotRecording(t *testing.T) {
	// Without a recording span, the helpers trace nothing and still count.
	r := newRig(t)
	fn, _ := script(errFlaky)
	_, err := retryotel.Retry(context.Background(), r.tel, retry.Constant(time.Second), fn, fakeClock())
	require.NoError(t, err)
	assert.Empty(t, r.spans.Ended())
	assert.Equal(t, point{Value: 1}, r.metrics(t)[retryotel.MetricCalls]["retry.dependency=db,retry.reason=success"])
}

func TestAttemptSpans(t *testing.T) {
	r := newRig(t, retryotel.AttemptSpans(), retryotel.WithErrorClass(classify))
	ctx, caller := r.tp.Tracer("test").Start(context.Background(), "caller")
	var seen []string
	fn, _ := script(errFlaky, errFlaky)
	_, err := retryotel.Retry(ctx, r.tel, retry.Constant(time.Second), func(ctx context.Context) (int, error) {
		seen = append(seen, sdkSpan(ctx).Name())
		return fn(ctx)
	}, fakeClock())
	require.NoError(t, err)
	caller.End()
	ended := r.spans.Ended()
	require.Len(t, ended, 4)
	assert.Equal(t, []string{"retry.attempt", "retry.attempt", "retry.attempt"}, seen, "each attempt runs in its span")
	for i, s := range ended[:3] {
		assert.Equal(t, "retry.attempt", s.Name())
		assert.Equal(t, caller.SpanContext().SpanID(), s.Parent().SpanID())
		want := []string{
			"error.type=flaky,retry.attempt=1,retry.dependency=db",
			"error.type=flaky,retry.attempt=2,retry.dependency=db",
			"retry.attempt=3,retry.dependency=db",
		}[i]
		assert.Equal(t, want, spanAttrs(s))
		if i < 2 {
			assert.Equal(t, codes.Error, s.Status().Code)
		} else {
			assert.Equal(t, codes.Unset, s.Status().Code)
		}
	}
	assert.Empty(t, events(ended[3]), "no events with attempt spans")
}

func sdkSpan(ctx context.Context) sdktrace.ReadOnlySpan {
	return traceSpan(ctx).(sdktrace.ReadOnlySpan)
}

func TestHedgeAttemptSpans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, retryotel.AttemptSpans())
		ctx, caller := r.tp.Tracer("test").Start(context.Background(), "caller")
		first := make(chan struct{}, 1)
		first <- struct{}{}
		_, err := retryotel.Hedge(ctx, r.tel, retry.Constant(10*time.Millisecond).Take(1), func(ctx context.Context) (int, error) {
			select {
			case <-first:
				<-ctx.Done() // the first attempt hangs until it loses
				return 0, context.Cause(ctx)
			default:
				return 2, nil
			}
		})
		require.NoError(t, err)
		synctest.Wait() // the loser ends its span
		caller.End()
		ended := r.spans.Ended()
		require.Len(t, ended, 3)
		got := map[string]codes.Code{}
		for _, s := range ended[:2] {
			assert.Equal(t, "retry.attempt", s.Name())
			assert.Equal(t, caller.SpanContext().SpanID(), s.Parent().SpanID())
			got[spanAttrs(s)] = s.Status().Code
		}
		assert.Equal(t, map[string]codes.Code{
			"retry.attempt=2,retry.dependency=db":                     codes.Unset,
			"error.type=canceled,retry.attempt=1,retry.dependency=db": codes.Error,
		}, got)
		assert.Equal(t, "caller", ended[2].Name())
	})
}
