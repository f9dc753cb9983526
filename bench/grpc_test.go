package bench

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	grpcretry "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
)

// healthy answers every health Check with SERVING.
type healthy struct {
	healthpb.UnimplementedHealthServer
}

func (healthy) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// builtinConfig is grpc-go's own retry for the standard policy, as a
// service config: 5 attempts, backoff from 100 ms doubling to 2 s (grpc-go
// draws each wait uniformly from ±20% around it), on UNAVAILABLE.
const builtinConfig = `{"methodConfig": [{
	"name": [{"service": "grpc.health.v1.Health"}],
	"retryPolicy": {
		"maxAttempts": 5,
		"initialBackoff": "0.1s",
		"maxBackoff": "2s",
		"backoffMultiplier": 2,
		"retryableStatusCodes": ["UNAVAILABLE"]
	}
}]}`

// BenchmarkGRPC measures one successful unary call (a health Check) to a
// gRPC server on loopback: a bare client, the floor here, against the same
// call through each retry layer. Each client has its own connection, made
// with grpc-go's own retries disabled except for lib=builtin, which is
// those retries; all retry on Unavailable with the standard policy.
func BenchmarkGRPC(b *testing.B) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, healthy{})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	target := "passthrough:///" + lis.Addr().String()

	run := func(b *testing.B, opts ...grpc.DialOption) {
		opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)
		cc, err := grpc.NewClient(target, opts...)
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Close()
		client := healthpb.NewHealthClient(cc)
		req := &healthpb.HealthCheckRequest{}
		ctx := context.Background()
		if _, err := client.Check(ctx, req); err != nil { // connect outside the measurement
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			resp, err := client.Check(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			if resp.Status != healthpb.HealthCheckResponse_SERVING {
				b.Fatalf("status %v", resp.Status)
			}
		}
	}

	for _, c := range grpcClients {
		b.Run("lib="+c.name, func(b *testing.B) { run(b, c.opts()...) })
	}
}

// grpcClients are the retry layers compared on gRPC, as dial options.
var grpcClients = []struct {
	name string
	opts func() []grpc.DialOption
}{
	{"bare", func() []grpc.DialOption { return []grpc.DialOption{grpc.WithDisableRetry()} }},
	{"retry", func() []grpc.DialOption {
		return []grpc.DialOption{grpc.WithDisableRetry(),
			grpc.WithUnaryInterceptor(retrygrpc.UnaryClientInterceptor(ours(standard)))}
	}},
	// go-grpc-middleware/v2's retry interceptor: 5 attempts, exponential
	// backoff from 100 ms with full jitter, bounded at 2 s, on Unavailable
	// (its default codes are ResourceExhausted and Unavailable).
	{"middleware", func() []grpc.DialOption {
		return []grpc.DialOption{grpc.WithDisableRetry(),
			grpc.WithUnaryInterceptor(grpcretry.UnaryClientInterceptor(
				grpcretry.WithMax(attempts),
				grpcretry.WithBackoff(grpcretry.BackoffExponentialWithJitterBounded(standard.base, 1, standard.limit)),
				grpcretry.WithCodes(codes.Unavailable)))}
	}},
	{"builtin", func() []grpc.DialOption { return []grpc.DialOption{grpc.WithDefaultServiceConfig(builtinConfig)} }},
	// retrygrpc's hedging, with one hedge after 100 ms, which a successful
	// call on loopback never reaches: the cost of hedging when it is not
	// needed (a goroutine per attempt, the response decoded from its bytes).
	{"hedge", func() []grpc.DialOption {
		return []grpc.DialOption{grpc.WithDisableRetry(),
			grpc.WithUnaryInterceptor(retrygrpc.HedgeUnaryClientInterceptor(retry.Constant(100 * time.Millisecond).Take(1)))}
	}},
	// The floor of any hedging layer whose attempts run on goroutines of
	// their own, as retry.Hedge's do: the bare call made on a new
	// goroutine, its error handed back on a channel. Not a retry layer.
	{"handoff", func() []grpc.DialOption {
		return []grpc.DialOption{grpc.WithDisableRetry(), grpc.WithUnaryInterceptor(handoff)}
	}},
}

// handoff is a unary interceptor that makes the call on a goroutine of its
// own and waits for it.
func handoff(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	done := make(chan error, 1)
	go func() { done <- invoker(ctx, method, req, reply, cc, opts...) }()
	return <-done
}

// BenchmarkGRPCPaired makes the same call through every client of
// BenchmarkGRPC in turn, rotating which goes first and timing each call, so
// that load from elsewhere on the machine hits all of them alike. It reports
// each client's median time per call (bare-ns, retry-ns, …) and each retry
// layer's median over the bare client's (retry/bare, …): on a shared
// machine a burst of load lands on a few calls, which a median ignores and
// a mean does not. ns/op is one call of each.
func BenchmarkGRPCPaired(b *testing.B) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, healthy{})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	target := "passthrough:///" + lis.Addr().String()

	clients := make([]healthpb.HealthClient, len(grpcClients))
	req := &healthpb.HealthCheckRequest{}
	ctx := context.Background()
	for i, c := range grpcClients {
		cc, err := grpc.NewClient(target, append(c.opts(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Close()
		clients[i] = healthpb.NewHealthClient(cc)
		if _, err := clients[i].Check(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	times := make([][]time.Duration, len(clients))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		for k := range clients {
			c := (i + k) % len(clients)
			start := time.Now()
			if _, err := clients[c].Check(ctx, req); err != nil {
				b.Fatal(err)
			}
			times[c] = append(times[c], time.Since(start))
		}
		i++
	}
	b.StopTimer()
	medians := make([]float64, len(clients))
	for k, t := range times {
		slices.Sort(t)
		medians[k] = float64(t[len(t)/2].Nanoseconds())
	}
	for k, c := range grpcClients {
		b.ReportMetric(medians[k], c.name+"-ns")
		if k > 0 {
			b.ReportMetric(medians[k]/medians[0], c.name+"/bare")
		}
	}
}
