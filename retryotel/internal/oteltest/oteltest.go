// Package oteltest reads what the OpenTelemetry SDK recorded, in the plain
// forms the tests of retryotel and retryotelgrpc compare: metrics by name
// and attributes, attributes as sorted "k=v" pairs, span events as
// "name k=v k=v". Only those tests import it (it is internal to retryotel),
// so a program that imports retryotel never builds it.
package oteltest

import (
	"context"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Point is what a data point holds: a counter's or gauge's value, or a
// histogram's count and sum.
type Point struct {
	Value float64
	Count uint64
	Sum   float64
}

// Metrics collects every metric reader holds as name → attributes
// ("k=v,k=v", see Attrs) → point. A metric of a kind it does not know fails
// t at once.
func Metrics(t testing.TB, reader *sdkmetric.ManualReader) map[string]map[string]Point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collecting metrics: %v", err)
	}
	out := map[string]map[string]Point{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			var pts map[string]Point
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
func valuePoints[N int64 | float64](dps []metricdata.DataPoint[N]) map[string]Point {
	pts := map[string]Point{}
	for _, p := range dps {
		pts[Attrs(p.Attributes)] = Point{Value: float64(p.Value)}
	}
	return pts
}

// histogramPoints is a histogram's points by attributes.
func histogramPoints[N int64 | float64](dps []metricdata.HistogramDataPoint[N]) map[string]Point {
	pts := map[string]Point{}
	for _, p := range dps {
		pts[Attrs(p.Attributes)] = Point{Count: p.Count, Sum: float64(p.Sum)}
	}
	return pts
}

// Pairs lists attributes as "k=v", sorted.
func Pairs(kvs []attribute.KeyValue) []string {
	var parts []string
	for _, kv := range kvs {
		parts = append(parts, string(kv.Key)+"="+kv.Value.String())
	}
	sort.Strings(parts)
	return parts
}

// Attrs lists a set's attributes as "k=v,k=v", sorted.
func Attrs(s attribute.Set) string { return strings.Join(Pairs(s.ToSlice()), ",") }

// Events lists the events of a span as "name k=v k=v".
func Events(s sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, e := range s.Events() {
		out = append(out, strings.TrimSpace(e.Name+" "+strings.Join(Pairs(e.Attributes), " ")))
	}
	return out
}
