package retryotel_test

import (
	"context"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryhttp"
	"github.com/seed-b8c8f69d/retry/retryotel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// successCases are one successful call, with retryotel or without, on the
// no-op providers and on the SDK; "hooks-only" has retryotel's two hooks
// doing nothing, the core's part of retryotel's cost. "sdk-counter" is the same call plus what
// one would record by hand with a bare counter and histogram of the SDK:
// the floor retryotel is held to.
func successCases(tb testing.TB) []struct {
	name string
	call func()
} {
	ctx := context.Background()
	s := retry.Constant(time.Millisecond).Take(3)
	ok := func(context.Context) error { return nil }
	noop, err := retryotel.New("db", retryotel.WithMeterProvider(metricnoop.NewMeterProvider()),
		retryotel.WithTracerProvider(tracenoop.NewTracerProvider()))
	require.NoError(tb, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	sdk, err := retryotel.New("db", retryotel.WithMeterProvider(mp), retryotel.WithTracerProvider(tracenoop.NewTracerProvider()))
	require.NoError(tb, err)
	meter := mp.Meter("bare")
	calls, err := meter.Int64Counter("calls")
	require.NoError(tb, err)
	durations, err := meter.Float64Histogram("durations")
	require.NoError(tb, err)
	attempts, err := meter.Int64Counter("attempts")
	require.NoError(tb, err)
	set := metric.WithAttributeSet(attribute.NewSet(attribute.String("retry.dependency", "db"), attribute.String("retry.reason", "success")))
	add, record := []metric.AddOption{set}, []metric.RecordOption{set}
	noopOpts, sdkOpts := noop.Options(), sdk.Options()
	// The core's cost of the two hooks retryotel installs, doing nothing.
	hooks := []retry.Option{retry.OnRetry(func(retry.Attempt) {}), retry.OnDone(func(retry.Outcome) {})}
	return []struct {
		name string
		call func()
	}{
		{"bare", func() { _ = retry.Do(ctx, s, ok) }},
		{"hooks-only", func() { _ = retry.Do(ctx, s, ok, hooks...) }},
		{"noop", func() { _ = retry.Do(ctx, s, ok, noopOpts...) }},
		{"noop-helper", func() { _ = retryotel.Do(ctx, noop, s, ok) }},
		{"sdk-counter", func() {
			start := time.Now()
			_ = retry.Do(ctx, s, ok)
			attempts.Add(ctx, 1, add...)
			calls.Add(ctx, 1, add...)
			durations.Record(ctx, time.Since(start).Seconds(), record...)
		}},
		{"sdk-retryotel", func() { _ = retry.Do(ctx, s, ok, sdkOpts...) }},
		{"sdk-retryotel-helper", func() { _ = retryotel.Do(ctx, sdk, s, ok) }},
	}
}

// BenchmarkSuccess measures a call whose first attempt succeeds.
func BenchmarkSuccess(b *testing.B) {
	for _, c := range successCases(b) {
		b.Run("impl="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.call()
			}
		})
	}
}

// TestAllocations pins that retryotel allocates nothing on a successful
// call: nothing at all with the no-op providers, and nothing beyond what
// the SDK allocates for a bare counter and histogram.
func TestAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	got := map[string]float64{}
	for _, c := range successCases(t) {
		c.call() // the first call makes the attribute sets
		got[c.name] = testing.AllocsPerRun(1000, c.call)
	}
	assert.Zero(t, got["noop"])
	assert.Zero(t, got["noop-helper"])
	assert.LessOrEqual(t, got["sdk-retryotel"], got["sdk-counter"])
	assert.LessOrEqual(t, got["sdk-retryotel-helper"], got["sdk-counter"])
	t.Logf("allocations per call: %v", got)
}

// okTransport answers every request with the same 200 response.
type okTransport struct{ resp *http.Response }

func (o okTransport) RoundTrip(*http.Request) (*http.Response, error) { return o.resp, nil }

// TestHTTPAllocations pins that a Transport made by retryotel allocates no
// more on a successful request than the same retryhttp.Transport without
// it, with the SDK recording and a caller's span that is not recording.
func TestHTTPAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	r := newRig(t)
	base := okTransport{&http.Response{StatusCode: 200, Body: http.NoBody}}
	s := retry.Constant(time.Millisecond).Take(2)
	req, err := http.NewRequest(http.MethodGet, "http://example.test/", nil)
	require.NoError(t, err)
	plain := retryhttp.NewTransport(base, s)
	traced := r.tel.NewTransport(base, s)
	run := func(rt http.RoundTripper) func() {
		return func() {
			if _, err := rt.RoundTrip(req); err != nil {
				t.Fatal(err)
			}
		}
	}
	run(traced)()
	without, with := testing.AllocsPerRun(1000, run(plain)), testing.AllocsPerRun(1000, run(traced))
	assert.LessOrEqual(t, with, without)
	t.Logf("allocations per request: %v without retryotel, %v with", without, with)
}

// BenchmarkHedgeSuccess measures a Hedge whose first attempt wins, without
// and with HedgeOptions on the SDK.
func BenchmarkHedgeSuccess(b *testing.B) {
	r := newRig(b)
	ctx := context.Background()
	s := retry.Constant(time.Hour).Take(1)
	ok := func(context.Context) (int, error) { return 1, nil }
	opts := r.tel.HedgeOptions()
	for _, c := range []struct {
		name string
		opts []retry.Option
	}{{"bare", nil}, {"retryotel", opts}} {
		b.Run("impl="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = retry.Hedge(ctx, s, ok, c.opts...)
			}
		})
	}
}

// BenchmarkSuccessPaired runs the cases of BenchmarkSuccess in turn, in
// blocks of 1000 calls, rotating which goes first, and reports each one's
// median ns per call over the blocks: load bursts on a shared machine hit
// all of them alike.
func BenchmarkSuccessPaired(b *testing.B) {
	cases := successCases(b)
	const block = 1000
	per := make([][]float64, len(cases))
	for i := 0; b.Loop(); i++ {
		for k := range cases {
			c := cases[(i+k)%len(cases)]
			start := time.Now()
			for range block {
				c.call()
			}
			j := (i + k) % len(cases)
			per[j] = append(per[j], float64(time.Since(start).Nanoseconds())/block)
		}
	}
	for j, c := range cases {
		sort.Float64s(per[j])
		b.ReportMetric(per[j][len(per[j])/2], c.name+"-ns/call")
	}
	b.ReportMetric(0, "ns/op")
}
