package retryotel_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryotel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// flakyServer answers 503 to its first fails requests, then 200.
func flakyServer(t *testing.T, fails int32) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1) <= fails {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func get(t *testing.T, ctx context.Context, rt http.RoundTripper, url string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

var httpPolicy = retry.Constant(100 * time.Millisecond).Take(3)

func TestHTTP(t *testing.T) {
	r := newRig(t)
	srv, n := flakyServer(t, 2)
	rt := r.tel.NewTransport(srv.Client().Transport, httpPolicy, fakeClock())
	ctx, caller := r.tp.Tracer("test").Start(context.Background(), "caller")
	get(t, ctx, rt, srv.URL)
	caller.End()
	require.Equal(t, int32(3), n.Load())
	m := r.metrics(t)
	assert.Equal(t, map[string]point{
		"error.type=503,retry.attempt.outcome=retryable,retry.dependency=db": {Value: 2},
		"retry.attempt.outcome=success,retry.dependency=db":                  {Value: 1},
	}, m[retryotel.MetricAttempts])
	assert.Equal(t, map[string]point{"error.type=503,retry.dependency=db": {Count: 2, Sum: 0.2}}, m[retryotel.MetricWaitDuration])
	assert.Equal(t, map[string]point{"retry.dependency=db,retry.reason=success": {Value: 1}}, m[retryotel.MetricCalls])
	ended := r.spans.Ended()
	require.Len(t, ended, 1)
	assert.Equal(t, []string{"retry http.request.resend_count=1", "retry http.request.resend_count=2"}, events(ended[0]))
}

func TestHTTPAttemptSpans(t *testing.T) {
	r := newRig(t, retryotel.AttemptSpans())
	srv, _ := flakyServer(t, 1)
	rt := r.tel.NewTransport(srv.Client().Transport, httpPolicy, fakeClock())
	ctx, caller := r.tp.Tracer("test").Start(context.Background(), "caller")
	get(t, ctx, rt, srv.URL)
	caller.End()
	ended := r.spans.Ended()
	require.Len(t, ended, 3)
	assert.Equal(t, "error.type=503,retry.attempt=1,retry.dependency=db", spanAttrs(ended[0]))
	assert.Equal(t, codes.Error, ended[0].Status().Code)
	assert.Equal(t, "http.request.resend_count=1,retry.attempt=2,retry.dependency=db", spanAttrs(ended[1]))
	assert.Equal(t, codes.Unset, ended[1].Status().Code)
	for _, s := range ended[:2] {
		assert.Equal(t, "retry.attempt", s.Name())
		assert.Equal(t, caller.SpanContext().SpanID(), s.Parent().SpanID())
	}
	assert.Empty(t, events(ended[2]))
}

func TestHTTPHedging(t *testing.T) {
	r := newRig(t)
	srv, n := flakyServer(t, 1)
	rt := r.tel.NewHedgingTransport(srv.Client().Transport, retry.Constant(time.Second).Take(2), fakeClock())
	ctx, caller := r.tp.Tracer("test").Start(context.Background(), "caller")
	get(t, ctx, rt, srv.URL)
	caller.End()
	require.Equal(t, int32(2), n.Load())
	m := r.metrics(t)
	assert.Equal(t, map[string]point{"retry.dependency=db": {Value: 1}}, m[retryotel.MetricHedges])
	assert.Equal(t, map[string]point{"retry.dependency=db": {Value: 1}}, m[retryotel.MetricHedgeWins])
	assert.Equal(t, map[string]point{
		"retry.attempt.outcome=retryable,retry.dependency=db": {Value: 1},
		"retry.attempt.outcome=success,retry.dependency=db":   {Value: 1},
	}, m[retryotel.MetricAttempts])
	assert.Equal(t, []string{"hedge http.request.resend_count=1"}, events(r.spans.Ended()[0]))
}

// count sums the counts of a histogram's points.
func count(pts map[string]point) (n uint64) {
	for _, p := range pts {
		n += p.Count
	}
	return n
}

func sum(pts map[string]point) (n float64) {
	for _, p := range pts {
		n += p.Value
	}
	return n
}

func byName(spans []sdktrace.ReadOnlySpan, name string) (out []sdktrace.ReadOnlySpan) {
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// TestHTTPWithOtelhttp stacks otelhttp beneath and above a Transport: each
// attempt, or each call, is counted once by each layer.
func TestHTTPWithOtelhttp(t *testing.T) {
	t.Run("otelhttp beneath: a span and a measurement per attempt", func(t *testing.T) {
		r := newRig(t)
		srv, _ := flakyServer(t, 2)
		base := otelhttp.NewTransport(retryotel.ResendCount(srv.Client().Transport),
			otelhttp.WithTracerProvider(r.tp), otelhttp.WithMeterProvider(r.mp))
		rt := r.tel.NewTransport(base, httpPolicy, fakeClock())
		ctx, caller := r.tp.Tracer("test").Start(context.Background(), "caller")
		get(t, ctx, rt, srv.URL)
		caller.End()
		m := r.metrics(t)
		assert.Equal(t, uint64(3), count(m["http.client.request.duration"]), "otelhttp: one measurement per attempt")
		assert.Equal(t, 3.0, sum(m[retryotel.MetricAttempts]), "retryotel: three attempts")
		attempts := byName(r.spans.Ended(), "HTTP GET")
		require.Len(t, attempts, 3, "otelhttp: one span per attempt, and retryotel none")
		assert.Len(t, r.spans.Ended(), 4)
		for i, s := range attempts {
			got := -1
			for _, kv := range s.Attributes() {
				if kv.Key == retryotel.AttrResendCount {
					got = int(kv.Value.AsInt64())
				}
			}
			want := []int{-1, 1, 2}[i]
			assert.Equal(t, want, got, "attempt %d's resend count", i+1)
			assert.Equal(t, caller.SpanContext().SpanID(), s.Parent().SpanID())
		}
		callers := byName(r.spans.Ended(), "caller")
		require.Len(t, callers, 1)
		assert.Equal(t, []string{"retry http.request.resend_count=1", "retry http.request.resend_count=2"}, events(callers[0]))
	})
	t.Run("otelhttp above: a span and a measurement per call", func(t *testing.T) {
		r := newRig(t)
		srv, _ := flakyServer(t, 2)
		rt := otelhttp.NewTransport(r.tel.NewTransport(srv.Client().Transport, httpPolicy, fakeClock()),
			otelhttp.WithTracerProvider(r.tp), otelhttp.WithMeterProvider(r.mp))
		get(t, context.Background(), rt, srv.URL)
		m := r.metrics(t)
		assert.Equal(t, uint64(1), count(m["http.client.request.duration"]))
		assert.Equal(t, 3.0, sum(m[retryotel.MetricAttempts]))
		ended := r.spans.Ended()
		require.Len(t, ended, 1)
		assert.Equal(t, "HTTP GET", ended[0].Name())
		assert.Equal(t, []string{"retry http.request.resend_count=1", "retry http.request.resend_count=2"}, events(ended[0]))
	})
}
