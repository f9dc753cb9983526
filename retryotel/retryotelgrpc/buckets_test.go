package retryotelgrpc_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
	"github.com/seed-b8c8f69d/retry/retryotel/retryotelgrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestA96Buckets checks the bucket boundaries of the retry and hedge
// counts: A96's [1, 2, 3, 4, 5], not A66's general count buckets.
func TestA96Buckets(t *testing.T) {
	r := newRig(t, 1)
	retrying := r.dial(t, grpc.WithUnaryInterceptor(r.g.UnaryClientInterceptor(retry.Constant(time.Second).Take(3),
		retrygrpc.With(retry.WithClock(r.clock)))))
	_, err := healthpb.NewHealthClient(retrying).Check(t.Context(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	r.health.mu.Lock()
	r.health.calls, r.health.fails = 0, 1
	r.health.mu.Unlock()
	hedging := r.dial(t, grpc.WithUnaryInterceptor(r.g.HedgeUnaryClientInterceptor(retry.Constant(time.Second).Take(2),
		retrygrpc.With(retry.WithClock(r.clock)))))
	_, err = healthpb.NewHealthClient(hedging).Check(t.Context(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)

	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	bounds := map[string][]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[int64]); ok && len(h.DataPoints) > 0 {
				bounds[m.Name] = h.DataPoints[0].Bounds
			}
		}
	}
	a96 := []float64{1, 2, 3, 4, 5}
	assert.Equal(t, a96, bounds[retryotelgrpc.MetricCallRetries], retryotelgrpc.MetricCallRetries)
	assert.Equal(t, a96, bounds[retryotelgrpc.MetricCallHedges], retryotelgrpc.MetricCallHedges)
}
