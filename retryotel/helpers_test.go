package retryotel_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryotel"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
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

// point is what a data point holds: a counter's or gauge's value, or a
// histogram's count and sum.
type point struct {
	Value float64
	Count uint64
	Sum   float64
}

// metrics collects every metric as name → attributes ("k=v,k=v") → point.
func (r *rig) metrics(t *testing.T) map[string]map[string]point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	out := map[string]map[string]point{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			var pts map[string]point
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				pts = valuePoints(d.DataPoints)
			case metricdata.Sum[float64]:
				pts = valuePoints(d.DataPoints)
			case metricdata.Gauge[int64]:
				pts = valuePoints(d.DataPoints)
			case metricdata.Gauge[float64]:
				pts = valuePoints(d.DataPoints)
			case metricdata.Histogram[int64]:
				pts = histogramPoints(d.DataPoints)
			case metricdata.Histogram[float64]:
				pts = histogramPoints(d.DataPoints)
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
			out[m.Name] = pts
		}
	}
	return out
}

// valuePoints is a counter's or gauge's points by attributes.
func valuePoints[N int64 | float64](dps []metricdata.DataPoint[N]) map[string]point {
	pts := map[string]point{}
	for _, p := range dps {
		pts[attrs(p.Attributes)] = point{Value: float64(p.Value)}
	}
	return pts
}

// histogramPoints is a histogram's points by attributes.
func histogramPoints[N int64 | float64](dps []metricdata.HistogramDataPoint[N]) map[string]point {
	pts := map[string]point{}
	for _, p := range dps {
		pts[attrs(p.Attributes)] = point{Count: p.Count, Sum: float64(p.Sum)}
	}
	return pts
}

// pairs lists attributes as "k=v", sorted.
func pairs(kvs []attribute.KeyValue) []string {
	var parts []string
	for _, kv := range kvs {
		parts = append(parts, string(kv.Key)+"="+kv.Value.String())
	}
	sort.Strings(parts)
	return parts
}

func attrs(s attribute.Set) string { return strings.Join(pairs(s.ToSlice()), ",") }

// events lists the events of a span as "name k=v k=v".
func events(s sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, e := range s.Events() {
		out = append(out, strings.TrimSpace(e.Name+" "+strings.Join(pairs(e.Attributes), " ")))
	}
	return out
}

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
