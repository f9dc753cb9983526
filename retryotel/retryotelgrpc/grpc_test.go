package retryotelgrpc_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
	"github.com/seed-b8c8f69d/retry/retryotel"
	"github.com/seed-b8c8f69d/retry/retryotel/internal/oteltest"
	"github.com/seed-b8c8f69d/retry/retryotel/retryotelgrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// health fails its first fails calls with Unavailable.
type health struct {
	healthpb.UnimplementedHealthServer
	mu    sync.Mutex
	calls int
	fails int
}

func (h *health) Watch(_ *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	h.mu.Lock()
	h.calls++
	fail := h.calls <= h.fails
	h.mu.Unlock()
	if fail {
		return status.Error(codes.Unavailable, "try again")
	}
	return stream.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING})
}

func (h *health) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	if h.calls <= h.fails {
		return nil, status.Error(codes.Unavailable, "try again")
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

type rig struct {
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	tel    *retryotel.Telemetry
	g      *retryotelgrpc.Interceptors
	clock  *retry.FakeClock
	health *health
	addr   string
}

func newRig(t *testing.T, fails int) *rig {
	t.Helper()
	r := &rig{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder(), clock: retry.NewFakeClock(t0), health: &health{fails: fails}}
	r.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	var err error
	r.tel, err = retryotel.New("health", retryotel.WithMeterProvider(r.mp), retryotel.WithTracerProvider(r.tp),
		retryotel.WithErrorClass(retryotelgrpc.ErrorClass))
	require.NoError(t, err)
	r.g, err = retryotelgrpc.New(r.tel, retryotelgrpc.WithClock(r.clock))
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, r.health)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	r.addr = lis.Addr().String()
	return r
}

func (r *rig) dial(t *testing.T, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+r.addr, append(opts, grpc.WithDisableRetry(),
		grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// point is what a data point holds (oteltest.Point).
type point = oteltest.Point

func (r *rig) metrics(t *testing.T) map[string]map[string]point {
	t.Helper()
	return oteltest.Metrics(t, r.reader)
}

func events(s sdktrace.ReadOnlySpan) []string { return oteltest.Events(s) }

const checkMethod = "grpc.health.v1.Health/Check"

// st is the attributes of a measurement with a status.
func st(cc *grpc.ClientConn, status string) string {
	return "grpc.method=" + checkMethod + ",grpc.status=" + status + ",grpc.target=" + cc.CanonicalTarget()
}

func TestUnary(t *testing.T) {
	r := newRig(t, 2)
	policy := retry.Constant(100 * time.Millisecond).Take(3)
	cc := r.dial(t, grpc.WithUnaryInterceptor(r.g.UnaryClientInterceptor(policy, retrygrpc.With(retry.WithClock(r.clock)))))
	ctx, caller := r.tp.Tracer("test").Start(context.Background(), "caller")
	_, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	caller.End()
	base := "grpc.method=" + checkMethod + ",grpc.target=" + cc.CanonicalTarget()
	m := r.metrics(t)
	assert.Equal(t, map[string]point{base: {Value: 3}}, m[retryotelgrpc.MetricAttemptStarted])
	assert.Equal(t, map[string]point{
		st(cc, "UNAVAILABLE"): {Count: 2},
		st(cc, "OK"):          {Count: 1},
	}, m[retryotelgrpc.MetricAttemptDuration])
	assert.Equal(t, map[string]point{st(cc, "OK"): {Count: 1, Sum: 0.2}}, m[retryotelgrpc.MetricCallDuration])
	assert.Equal(t, map[string]point{base: {Count: 1, Sum: 2}}, m[retryotelgrpc.MetricCallRetries])
	assert.Equal(t, map[string]point{base: {Count: 1, Sum: 0.2}}, m[retryotelgrpc.MetricCallRetryDelay])
	assert.NotContains(t, m, retryotelgrpc.MetricCallHedges)
	assert.Equal(t, map[string]point{
		"error.type=UNAVAILABLE,retry.attempt.outcome=retryable,retry.dependency=health": {Value: 2},
		"retry.attempt.outcome=success,retry.dependency=health":                          {Value: 1},
	}, m[retryotel.MetricAttempts])
	ended := r.spans.Ended()
	require.Len(t, ended, 1)
	assert.Equal(t, []string{
		"retry error.type=UNAVAILABLE retry.attempt=1 retry.delay=0.1",
		"retry error.type=UNAVAILABLE retry.attempt=2 retry.delay=0.1",
	}, events(ended[0]))
}

func TestUnaryOnce(t *testing.T) {
	// A call that succeeds at once reports no retries, no hedges and no
	// delay: A96 does not report 0.
	r := newRig(t, 0)
	cc := r.dial(t, grpc.WithUnaryInterceptor(r.g.UnaryClientInterceptor(retry.Constant(time.Second), retrygrpc.With(retry.WithClock(r.clock)))))
	_, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	m := r.metrics(t)
	assert.Equal(t, 1.0, m[retryotelgrpc.MetricAttemptStarted]["grpc.method="+checkMethod+",grpc.target="+cc.CanonicalTarget()].Value)
	assert.NotContains(t, m, retryotelgrpc.MetricCallRetries)
	assert.NotContains(t, m, retryotelgrpc.MetricCallRetryDelay)
}

func TestUnregisteredMethod(t *testing.T) {
	r := newRig(t, 1)
	cc := r.dial(t, grpc.WithUnaryInterceptor(r.g.UnaryClientInterceptor(retry.Constant(time.Second), retrygrpc.With(retry.WithClock(r.clock)))))
	// Invoked by hand, not through generated code: not registered.
	require.NoError(t, cc.Invoke(context.Background(), "/"+checkMethod, &healthpb.HealthCheckRequest{}, new(healthpb.HealthCheckResponse)))
	m := r.metrics(t)
	assert.Equal(t, map[string]point{"grpc.method=other,grpc.target=" + cc.CanonicalTarget(): {Value: 2}}, m[retryotelgrpc.MetricAttemptStarted])

	g, err := retryotelgrpc.New(r.tel, retryotelgrpc.RegisteredMethods("/"+checkMethod))
	require.NoError(t, err)
	cc2 := r.dial(t, grpc.WithUnaryInterceptor(g.UnaryClientInterceptor(retry.Constant(time.Second))))
	require.NoError(t, cc2.Invoke(context.Background(), "/"+checkMethod, &healthpb.HealthCheckRequest{}, new(healthpb.HealthCheckResponse)))
	assert.Equal(t, point{Value: 1}, r.metrics(t)[retryotelgrpc.MetricAttemptStarted]["grpc.method="+checkMethod+",grpc.target="+cc2.CanonicalTarget()])
}

func TestHedge(t *testing.T) {
	r := newRig(t, 1)
	cc := r.dial(t, grpc.WithUnaryInterceptor(r.g.HedgeUnaryClientInterceptor(retry.Constant(time.Second).Take(2), retrygrpc.With(retry.WithClock(r.clock)))))
	ctx, caller := r.tp.Tracer("test").Start(context.Background(), "caller")
	_, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	caller.End()
	base := "grpc.method=" + checkMethod + ",grpc.target=" + cc.CanonicalTarget()
	m := r.metrics(t)
	assert.Equal(t, map[string]point{base: {Value: 2}}, m[retryotelgrpc.MetricAttemptStarted])
	assert.Equal(t, map[string]point{base: {Count: 1, Sum: 1}}, m[retryotelgrpc.MetricCallHedges])
	assert.NotContains(t, m, retryotelgrpc.MetricCallRetries)
	assert.Equal(t, map[string]point{"retry.dependency=health": {Value: 1}}, m[retryotel.MetricHedgeWins])
	assert.Equal(t, map[string]point{"retry.dependency=health": {Value: 1}}, m[retryotel.MetricHedges])
	assert.Equal(t, []string{"hedge retry.attempt=2"}, events(r.spans.Ended()[0]))
}

// TestWithOtelgrpc stacks otelgrpc's stats handler: it sees each attempt as
// an RPC, once; retryotelgrpc counts the same attempts once, and the call
// once.
func TestWithOtelgrpc(t *testing.T) {
	r := newRig(t, 2)
	cc := r.dial(t,
		grpc.WithStatsHandler(otelgrpc.NewClientHandler(otelgrpc.WithMeterProvider(r.mp), otelgrpc.WithTracerProvider(r.tp))),
		grpc.WithUnaryInterceptor(r.g.UnaryClientInterceptor(retry.Constant(100*time.Millisecond).Take(3), retrygrpc.With(retry.WithClock(r.clock)))))
	ctx, caller := r.tp.Tracer("test").Start(context.Background(), "caller")
	_, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	caller.End()
	m := r.metrics(t)
	var otelgrpcCount uint64
	for name, pts := range m {
		if strings.HasPrefix(name, "rpc.client.") && strings.HasSuffix(name, "duration") {
			for _, p := range pts {
				otelgrpcCount += p.Count
			}
		}
	}
	assert.Equal(t, uint64(3), otelgrpcCount, "otelgrpc: one measurement per attempt")
	base := "grpc.method=" + checkMethod + ",grpc.target=" + cc.CanonicalTarget()
	assert.Equal(t, map[string]point{base: {Value: 3}}, m[retryotelgrpc.MetricAttemptStarted])
	assert.Equal(t, uint64(1), m[retryotelgrpc.MetricCallDuration][st(cc, "OK")].Count)
	var attemptSpans int
	for _, s := range r.spans.Ended() {
		if s.Name() == "grpc.health.v1.Health/Check" {
			attemptSpans++
			assert.Equal(t, caller.SpanContext().SpanID(), s.Parent().SpanID())
		}
	}
	assert.Equal(t, 3, attemptSpans, "otelgrpc: one span per attempt, retryotelgrpc none")
	assert.Len(t, r.spans.Ended(), 4)
}

func TestStream(t *testing.T) {
	r := newRig(t, 2)
	cc := r.dial(t, grpc.WithStreamInterceptor(r.g.StreamClientInterceptor(retry.Constant(100*time.Millisecond).Take(3),
		retrygrpc.With(retry.WithClock(r.clock)))))
	ctx, caller := r.tp.Tracer("test").Start(context.Background(), "caller")
	stream, err := healthpb.NewHealthClient(cc).Watch(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	resp, err := stream.Recv()
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())
	_, err = stream.Recv()
	require.ErrorIs(t, err, io.EOF)
	caller.End()
	const watch = "grpc.health.v1.Health/Watch"
	base := "grpc.method=" + watch + ",grpc.target=" + cc.CanonicalTarget()
	withStatus := func(s string) string {
		return "grpc.method=" + watch + ",grpc.status=" + s + ",grpc.target=" + cc.CanonicalTarget()
	}
	m := r.metrics(t)
	assert.Equal(t, map[string]point{base: {Value: 3}}, m[retryotelgrpc.MetricAttemptStarted])
	assert.Equal(t, map[string]point{
		withStatus("UNAVAILABLE"): {Count: 2},
		withStatus("OK"):          {Count: 1},
	}, m[retryotelgrpc.MetricAttemptDuration])
	assert.Equal(t, map[string]point{withStatus("OK"): {Count: 1, Sum: 0.2}}, m[retryotelgrpc.MetricCallDuration])
	assert.Equal(t, map[string]point{base: {Count: 1, Sum: 2}}, m[retryotelgrpc.MetricCallRetries])
	assert.Equal(t, map[string]point{base: {Count: 1, Sum: 0.2}}, m[retryotelgrpc.MetricCallRetryDelay])
	assert.Equal(t, []string{
		"retry error.type=UNAVAILABLE retry.attempt=1 retry.delay=0.1",
		"retry error.type=UNAVAILABLE retry.attempt=2 retry.delay=0.1",
	}, events(r.spans.Ended()[0]))
}

func TestStreamCancelled(t *testing.T) {
	// A caller that cancels rather than read to the end: the call ends
	// with its context.
	r := newRig(t, 0)
	cc := r.dial(t, grpc.WithStreamInterceptor(r.g.StreamClientInterceptor(retry.Constant(time.Second), retrygrpc.With(retry.WithClock(r.clock)))))
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := healthpb.NewHealthClient(cc).Watch(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = stream.Recv()
	require.NoError(t, err)
	cancel()
	withStatus := "grpc.method=grpc.health.v1.Health/Watch,grpc.status=CANCELLED,grpc.target=" + cc.CanonicalTarget()
	require.Eventually(t, func() bool {
		return r.metrics(t)[retryotelgrpc.MetricCallDuration][withStatus].Count == 1
	}, 5*time.Second, time.Millisecond)
	assert.Equal(t, uint64(1), r.metrics(t)[retryotelgrpc.MetricAttemptDuration][withStatus].Count)
}

func TestSizes(t *testing.T) {
	r := newRig(t, 2)
	cc := r.dial(t, grpc.WithStatsHandler(r.g.StatsHandler()),
		grpc.WithUnaryInterceptor(r.g.UnaryClientInterceptor(retry.Constant(100*time.Millisecond).Take(3), retrygrpc.With(retry.WithClock(r.clock)))))
	// 4 bytes: the field's tag, its length and "ab"; the response's status
	// SERVING takes 2.
	_, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{Service: "ab"})
	require.NoError(t, err)
	m := r.metrics(t)
	assert.Equal(t, map[string]point{
		st(cc, "UNAVAILABLE"): {Count: 2, Sum: 8},
		st(cc, "OK"):          {Count: 1, Sum: 4},
	}, m[retryotelgrpc.MetricAttemptSentSize])
	assert.Equal(t, map[string]point{
		st(cc, "UNAVAILABLE"): {Count: 2, Sum: 0},
		st(cc, "OK"):          {Count: 1, Sum: 2},
	}, m[retryotelgrpc.MetricAttemptRcvdSize])
	// An RPC made without the interceptors is not recorded.
	plain := r.dial(t, grpc.WithStatsHandler(r.g.StatsHandler()))
	_, err = healthpb.NewHealthClient(plain).Check(context.Background(), &healthpb.HealthCheckRequest{Service: "ab"})
	require.NoError(t, err)
	assert.Equal(t, m[retryotelgrpc.MetricAttemptSentSize], r.metrics(t)[retryotelgrpc.MetricAttemptSentSize])
}
