package retryotel_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryhttp"
	"github.com/seed-b8c8f69d/retry/retryotel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

func TestNoopProviders(t *testing.T) {
	tel, err := retryotel.New("db", retryotel.WithMeterProvider(metricnoop.NewMeterProvider()),
		retryotel.WithTracerProvider(tracenoop.NewTracerProvider()))
	require.NoError(t, err)
	assert.Empty(t, tel.Options(), "no hook at all")
	assert.Empty(t, tel.HedgeOptions())
	fn, n := script(errFlaky)
	_, err = retryotel.Retry(context.Background(), tel, retry.Constant(time.Second), fn, fakeClock())
	require.NoError(t, err)
	assert.Equal(t, 2, *n)
}

func TestErrorClassBound(t *testing.T) {
	r := newRig(t, retryotel.WithErrorClass(func(err error) string { return err.Error() }))
	for i := range retryotel.MaxErrorClasses + 5 {
		err := errors.New("e" + strconv.Itoa(i))
		_, _ = retry.Retry(context.Background(), retry.Constant(0).Take(0), func(context.Context) (int, error) { return 0, err })
		_, _ = retry.Retry(context.Background(), retry.Constant(0).Take(0), func(context.Context) (int, error) { return 0, err }, r.tel.Options()...)
	}
	pts := r.metrics(t)[retryotel.MetricAttempts]
	assert.Len(t, pts, retryotel.MaxErrorClasses+1)
	assert.Equal(t, point{Value: 5}, pts["error.type=_OTHER,retry.attempt.outcome=retryable,retry.dependency=db"])
	assert.Equal(t, point{Value: 1}, pts["error.type=e0,retry.attempt.outcome=retryable,retry.dependency=db"])
}

func TestBudgetGauge(t *testing.T) {
	b := retry.NewBudget(0.5, 3)
	r := newRig(t, retryotel.WithBudget(b))
	assert.Equal(t, map[string]point{"retry.dependency=db": {Value: b.Tokens()}}, r.metrics(t)[retryotel.MetricBudgetTokens])
	fn, _ := script(errFlaky, errFlaky)
	_, err := retry.Retry(context.Background(), retry.Constant(time.Second), fn, append(r.tel.Options(), fakeClock(), retry.WithBudget(b))...)
	require.NoError(t, err)
	assert.Equal(t, map[string]point{"retry.dependency=db": {Value: b.Tokens()}}, r.metrics(t)[retryotel.MetricBudgetTokens])
	assert.NotEqual(t, 3.0, b.Tokens(), "the retries spent tokens")
}

func TestWithReason(t *testing.T) {
	// A context's cause is a call's reason: WithReason names it, and an
	// unknown one counts as cancelled.
	errMine := errors.New("mine")
	r := newRig(t, retryotel.WithReason(errMine, "mine"))
	for _, cause := range []error{errMine, errFlaky} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		_, _ = retry.Retry(ctx, retry.Constant(0), func(context.Context) (int, error) { return 0, nil }, r.tel.Options()...)
	}
	assert.Equal(t, map[string]point{
		"retry.dependency=db,retry.reason=mine":      {Value: 1},
		"retry.dependency=db,retry.reason=cancelled": {Value: 1},
	}, r.metrics(t)[retryotel.MetricCalls])
}

func TestDefaultErrorClass(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, "_OTHER"},
		{&retryhttp.StatusError{StatusCode: 503}, "503"},
		{&retryhttp.StatusError{StatusCode: 1000}, "_OTHER"},
		{context.DeadlineExceeded, "timeout"},
		{context.Canceled, "canceled"},
		{retry.ErrHedgeLost, "canceled"},
		{errFlaky, "_OTHER"},
	} {
		assert.Equal(t, c.want, retryotel.DefaultErrorClass(c.err), "%v", c.err)
	}
}

func TestPanics(t *testing.T) {
	assert.PanicsWithValue(t, "retryotel: New: empty dependency name", func() { _, _ = retryotel.New("") })
	assert.Panics(t, func() { retryotel.WithMeterProvider(nil) })
	assert.Panics(t, func() { retryotel.WithTracerProvider(nil) })
	assert.Panics(t, func() { retryotel.WithErrorClass(nil) })
	assert.Panics(t, func() { retryotel.WithBudget(nil) })
	assert.Panics(t, func() { retryotel.WithReason(nil, "x") })
}
