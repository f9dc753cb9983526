package bench_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
)

// grpcConfig is the service config of the gRPC migration examples.
const grpcConfig = `{
	"methodConfig": [{
		"name": [{"service": "grpc.health.v1.Health"}],
		"retryPolicy": {
			"maxAttempts": 4,
			"initialBackoff": "0.001s",
			"maxBackoff": "0.01s",
			"backoffMultiplier": 2,
			"retryableStatusCodes": ["UNAVAILABLE"]
		}
	}],
	"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
}`

// flakyHealth answers Check with Unavailable fails times (with the trailer
// grpc-retry-pushback-ms: pushback, if set), then SERVING.
type flakyHealth struct {
	healthpb.UnimplementedHealthServer
	fails    int32
	pushback string
	calls    atomic.Int32
}

func (h *flakyHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if h.calls.Add(1) <= h.fails {
		if h.pushback != "" {
			_ = grpc.SetTrailer(ctx, metadata.Pairs("grpc-retry-pushback-ms", h.pushback))
		}
		return nil, grpcstatus.Error(codes.Unavailable, "warming up")
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// flakyGRPC starts a health server on loopback that fails fails times, and
// returns its target and a function that stops it.
func flakyGRPC(fails int32) (*flakyHealth, string, func()) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	h := &flakyHealth{fails: fails}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, h)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	return h, "passthrough:///" + lis.Addr().String(), func() { srv.Stop(); <-done }
}

func Example_grpcBefore() {
	srv, target, stop := flakyGRPC(2) // Unavailable twice, then SERVING
	defer stop()

	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(grpcConfig)) // grpc-go retries by the config
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	fmt.Println(resp.GetStatus(), err, srv.calls.Load(), "attempts")
	// Output:
	// SERVING <nil> 3 attempts
}

func Example_grpcAfter() {
	srv, target, stop := flakyGRPC(2) // Unavailable twice, then SERVING
	defer stop()

	sc, err := retrygrpc.ParseServiceConfig(grpcConfig) // the same config, checked as grpc-go checks it
	if err != nil {
		panic(err)
	}
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(grpcConfig), // timeouts, waitForReady, load balancing: still grpc-go's
		grpc.WithDisableRetry(),                   // one retry layer, not two
		grpc.WithUnaryInterceptor(sc.UnaryClientInterceptor()),
		grpc.WithStreamInterceptor(sc.StreamClientInterceptor()))
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	fmt.Println(resp.GetStatus(), err, srv.calls.Load(), "attempts")
	// Output:
	// SERVING <nil> 3 attempts
}

// TestGRPCDifferences asserts the differences docs/MIGRATING.md lists
// between grpc-go's built-in retry and ParseServiceConfig's interceptors.
// The same attempts and retryThrottling are asserted in retrygrpc's
// TestServiceConfigThrottlingLikeGRPC and TestServiceConfigMaxAttemptsLikeGRPC.
func TestGRPCDifferences(t *testing.T) {
	sc, err := retrygrpc.ParseServiceConfig(grpcConfig)
	if err != nil {
		t.Fatal(err)
	}
	dialBuiltin := func(target string) *grpc.ClientConn {
		cc, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultServiceConfig(grpcConfig))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return cc
	}
	dialOurs := func(target string, opts ...retrygrpc.Option) *grpc.ClientConn {
		cc, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDisableRetry(), grpc.WithUnaryInterceptor(sc.UnaryClientInterceptor(opts...)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return cc
	}
	t.Run("a pushback longer than MaxPushback ends the call at once", func(t *testing.T) {
		// grpc-go waits whatever the server asks (here 100 s), until the
		// deadline; retrygrpc gives up at once, saying why.
		srv, target, stop := flakyGRPC(1)
		defer stop()
		srv.pushback = "100000"
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		_, err := healthpb.NewHealthClient(dialBuiltin(target)).Check(ctx, &healthpb.HealthCheckRequest{})
		if grpcstatus.Code(err) != codes.DeadlineExceeded {
			t.Errorf("grpc-go: %v, want DeadlineExceeded after waiting", err)
		}
		srv.calls.Store(0)
		start := time.Now()
		_, err = healthpb.NewHealthClient(dialOurs(target)).Check(t.Context(), &healthpb.HealthCheckRequest{})
		if grpcstatus.Code(err) != codes.Unavailable || !errors.Is(err, retry.ErrPushbackTooLong) {
			t.Errorf("retrygrpc: %v, want the server's Unavailable, matching ErrPushbackTooLong", err)
		}
		if srv.calls.Load() != 1 {
			t.Errorf("retrygrpc: %d attempts, want 1", srv.calls.Load())
		}
		if waited := time.Since(start); waited > 30*time.Second {
			t.Errorf("retrygrpc took %v", waited) // a bound that only a wait of the pushback could pass
		}
	})
	t.Run("A6's backoff: a wait between 0 and the current backoff", func(t *testing.T) {
		// grpc-go v1.85.0 waits 0.8 to 1.2 times the current backoff;
		// retrygrpc waits a uniform random delay in [0, current], as A6 says.
		clock := retry.NewFakeClock(time.Unix(0, 0))
		_, target, stop := flakyGRPC(3)
		defer stop()
		if _, err := healthpb.NewHealthClient(dialOurs(target, retrygrpc.With(retry.WithClock(clock)))).Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatal(err)
		}
		bounds := []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond}
		sleeps := clock.Sleeps()
		if len(sleeps) != len(bounds) {
			t.Fatalf("waits %v", sleeps)
		}
		for i, d := range sleeps {
			if d < 0 || d > bounds[i] {
				t.Errorf("wait %d: %v outside [0, %v]", i+1, d, bounds[i])
			}
		}
	})
}
