package retrygrpc_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
	"github.com/seed-b8c8f69d/retry/retryserver"
)

// A gRPC server whose calls pass through one Shedder, unary and streaming
// alike, and a client whose interceptors honour the pushback it sends.
func ExampleUnaryServerInterceptor() {
	shedder := retryserver.New(retryserver.Concurrency(64))
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(retrygrpc.UnaryServerInterceptor(shedder)),
		grpc.ChainStreamInterceptor(retrygrpc.StreamServerInterceptor(shedder)))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()

	policy := retry.Exponential(10 * time.Millisecond).Take(3)
	cc, err := grpc.NewClient("passthrough:///"+lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDisableRetry(),
		grpc.WithUnaryInterceptor(retrygrpc.UnaryClientInterceptor(policy)))
	if err != nil {
		panic(err)
	}
	defer cc.Close()
	resp, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{})
	fmt.Println(resp.GetStatus(), err)
	// Output:
	// SERVING <nil>
}
