package retryotelgrpc_test

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
	"github.com/seed-b8c8f69d/retry/retryotel"
	"github.com/seed-b8c8f69d/retry/retryotel/retryotelgrpc"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// A health check that the server fails once with UNAVAILABLE, retried by
// retrygrpc and recorded with A66's and A96's metrics (the target, which
// holds the server's port, is printed as <target>).
func ExampleInterceptors_UnaryClientInterceptor() {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, &health{fails: 1})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	reader := sdkmetric.NewManualReader()
	tel, err := retryotel.New("health", retryotel.WithErrorClass(retryotelgrpc.ErrorClass),
		retryotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		panic(err)
	}
	clock := retry.NewFakeClock(time.Unix(0, 0))
	g, err := retryotelgrpc.New(tel, retryotelgrpc.WithClock(clock))
	if err != nil {
		panic(err)
	}
	conn, err := grpc.NewClient("passthrough:///"+lis.Addr().String(),
		grpc.WithDisableRetry(),
		grpc.WithUnaryInterceptor(g.UnaryClientInterceptor(retry.Constant(100*time.Millisecond).Take(2),
			retrygrpc.With(retry.WithClock(clock)))),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	fmt.Println(resp.GetStatus(), err)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name == retryotel.ScopeName {
			continue // retryotel's own metrics: see its examples
		}
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s{%s} %d", m.Name, kvs(p.Attributes), p.Value))
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s{%s} count=%d sum=%d", m.Name, kvs(p.Attributes), p.Count, p.Sum))
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s{%s} count=%d sum=%g", m.Name, kvs(p.Attributes), p.Count, p.Sum))
				}
			}
		}
	}
	sort.Strings(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// SERVING <nil>
	// grpc.client.attempt.duration{grpc.method=grpc.health.v1.Health/Check grpc.status=OK grpc.target=<target>} count=1 sum=0
	// grpc.client.attempt.duration{grpc.method=grpc.health.v1.Health/Check grpc.status=UNAVAILABLE grpc.target=<target>} count=1 sum=0
	// grpc.client.attempt.started{grpc.method=grpc.health.v1.Health/Check grpc.target=<target>} 2
	// grpc.client.call.duration{grpc.method=grpc.health.v1.Health/Check grpc.status=OK grpc.target=<target>} count=1 sum=0.1
	// grpc.client.call.retries{grpc.method=grpc.health.v1.Health/Check grpc.target=<target>} count=1 sum=1
	// grpc.client.call.retry_delay{grpc.method=grpc.health.v1.Health/Check grpc.target=<target>} count=1 sum=0.1
}

// kvs prints an attribute set, sorted, with the target as <target>.
func kvs(set attribute.Set) string {
	var parts []string
	for _, kv := range set.ToSlice() {
		v := kv.Value.String()
		if kv.Key == retryotelgrpc.AttrTarget {
			v = "<target>"
		}
		parts = append(parts, string(kv.Key)+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// ErrorClass names a status error by its code.
func ExampleErrorClass() {
	fmt.Println(retryotelgrpc.ErrorClass(status.Error(codes.Unavailable, "try again")))
	fmt.Println(retryotelgrpc.ErrorClass(context.DeadlineExceeded))
	// Output:
	// UNAVAILABLE
	// timeout
}
