package bench

import (
	"context"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryotel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// BenchmarkOtel measures a call whose first attempt succeeds, recorded in
// OpenTelemetry: "bare" records nothing; "noop" is retryotel on the no-op
// providers; "counter" records by hand what a careful caller would (one
// counter for attempts, one for calls, a histogram of durations, with a
// prepared attribute set) on the SDK; "retryotel" is retryotel's Options on
// the same SDK. A ManualReader that is never read keeps the SDK's
// aggregation and nothing more.
func BenchmarkOtel(b *testing.B) {
	ctx := context.Background()
	s := retry.Constant(time.Millisecond).Take(3)
	ok := func(context.Context) error { return nil }
	noop, err := retryotel.New("db", retryotel.WithMeterProvider(metricnoop.NewMeterProvider()),
		retryotel.WithTracerProvider(tracenoop.NewTracerProvider()))
	if err != nil {
		b.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tel, err := retryotel.New("db", retryotel.WithMeterProvider(mp), retryotel.WithTracerProvider(tracenoop.NewTracerProvider()))
	if err != nil {
		b.Fatal(err)
	}
	meter := mp.Meter("bench")
	attempts, _ := meter.Int64Counter("attempts")
	calls, _ := meter.Int64Counter("calls")
	durations, _ := meter.Float64Histogram("durations", metric.WithUnit("s"))
	set := metric.WithAttributeSet(attribute.NewSet(attribute.String("retry.dependency", "db"), attribute.String("retry.reason", "success")))
	add, record := []metric.AddOption{set}, []metric.RecordOption{set}
	noopOpts, telOpts := noop.Options(), tel.Options()
	for _, c := range []struct {
		name string
		call func()
	}{
		{"bare", func() { _ = retry.Do(ctx, s, ok) }},
		{"noop", func() { _ = retry.Do(ctx, s, ok, noopOpts...) }},
		{"counter", func() {
			start := time.Now()
			_ = retry.Do(ctx, s, ok)
			attempts.Add(ctx, 1, add...)
			calls.Add(ctx, 1, add...)
			durations.Record(ctx, time.Since(start).Seconds(), record...)
		}},
		{"retryotel", func() { _ = retry.Do(ctx, s, ok, telOpts...) }},
	} {
		b.Run("impl="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.call()
			}
		})
	}
}
