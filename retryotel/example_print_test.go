package retryotel_test

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// printMetrics prints the counters and histograms that reader collects,
// one data point a line, sorted: a deterministic print for examples.
func printMetrics(reader *sdkmetric.ManualReader) {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s{%s} %d", m.Name, kvs(p.Attributes.ToSlice()), p.Value))
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s{%s} count=%d sum=%g", m.Name, kvs(p.Attributes.ToSlice()), p.Count, p.Sum))
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s{%s} count=%d sum=%d", m.Name, kvs(p.Attributes.ToSlice()), p.Count, p.Sum))
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s{%s} %d", m.Name, kvs(p.Attributes.ToSlice()), p.Value))
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s{%s} %g", m.Name, kvs(p.Attributes.ToSlice()), p.Value))
				}
			}
		}
	}
	sort.Strings(lines)
	fmt.Println(strings.Join(lines, "\n"))
}

// printSpans prints the spans ended so far, with their attributes and
// events.
func printSpans(spans []sdktrace.ReadOnlySpan) {
	for _, s := range spans {
		fmt.Printf("span %s {%s} %s\n", s.Name(), kvs(s.Attributes()), s.Status().Code)
		for _, e := range s.Events() {
			fmt.Printf("  event %s {%s}\n", e.Name, kvs(e.Attributes))
		}
	}
}

func kvs(attrs []attribute.KeyValue) string {
	parts := make([]string, 0, len(attrs))
	for _, kv := range attrs {
		parts = append(parts, string(kv.Key)+"="+kv.Value.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
