package retryotel_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryotel"
	"github.com/seed-b8c8f69d/retry/retryotel/internal/oteltest"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// rig is a Telemetry on an SDK meter with a ManualReader and an SDK tracer
// with a SpanRecorder.
type rig struct {
	tel    *retryotel.Telemetry
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
}

func newRig(t testing.TB, opts ...retryotel.Option) *rig {
	t.Helper()
	r := &rig{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	r.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	opts = append([]retryotel.Option{retryotel.WithMeterProvider(r.mp), retryotel.WithTracerProvider(r.tp)}, opts...)
	tel, err := retryotel.New("db", opts...)
	require.NoError(t, err)
	r.tel = tel
	return r
}

// point is what a data point holds (oteltest.Point).
type point = oteltest.Point

// metrics collects every metric as name → attributes ("k=v,k=v") → point.
func (r *rig) metrics(t *testing.T) map[string]map[string]point {
	t.Helper()
	return oteltest.Metrics(t, r.reader)
}

func pairs(kvs []attribute.KeyValue) []string { return oteltest.Pairs(kvs) }
func events(s sdktrace.ReadOnlySpan) []string { return oteltest.Events(s) }

// spanAttrs lists a span's attributes as "k=v", sorted.
func spanAttrs(s sdktrace.ReadOnlySpan) string { return strings.Join(pairs(s.Attributes()), ",") }

// script returns a function whose calls return errs in turn, then nil.
func script(errs ...error) (func(context.Context) (int, error), *int) {
	n := new(int)
	return func(context.Context) (int, error) {
		*n++
		if *n <= len(errs) {
			return *n, errs[*n-1]
		}
		return *n, nil
	}, n
}

func fakeClock() retry.Option { return retry.WithClock(retry.NewFakeClock(t0)) }

var _ = fmt.Sprint

func traceSpan(ctx context.Context) any { return trace.SpanFromContext(ctx) }
