package bench

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/seed-b8c8f69d/retry/retrygrpc"
	"github.com/seed-b8c8f69d/retry/retryhttp"
	"github.com/seed-b8c8f69d/retry/retryserver"
)

// full returns a Shedder that refuses every request: its one slot is taken
// for good and it has no queue. The slot is released when b ends.
func full(b *testing.B) *retryserver.Shedder {
	s := retryserver.New(retryserver.Concurrency(1), retryserver.QueueLimit(0))
	t, err := s.Admit(context.Background(), false)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(t.Drop)
	return s
}

// BenchmarkServerHTTP measures one request to a loopback HTTP/1.1 server,
// answered by a handler that writes "ok": with no shedding (the floor),
// served through retryhttp.NewHandler, and refused by it (503 with
// Retry-After, the handler never runs). The client is a bare http.Client,
// so the figures are the request's round trip, client and server.
func BenchmarkServerHTTP(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	run := func(b *testing.B, h http.Handler, want int) {
		srv := httptest.NewServer(h)
		defer srv.Close()
		client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		defer client.CloseIdleConnections()
		b.ReportAllocs()
		for b.Loop() {
			resp, err := client.Get(srv.URL)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want {
				b.Fatalf("status %d, want %d", resp.StatusCode, want)
			}
		}
	}
	b.Run("outcome=bare", func(b *testing.B) { run(b, ok, 200) })
	b.Run("outcome=served", func(b *testing.B) { run(b, retryhttp.NewHandler(ok, retryserver.New()), 200) })
	b.Run("outcome=refused", func(b *testing.B) { run(b, retryhttp.NewHandler(ok, full(b)), 503) })
}

// BenchmarkServerGRPC is BenchmarkServerHTTP for a unary gRPC call (a health
// Check) on loopback: no interceptor, retrygrpc.UnaryServerInterceptor
// serving, and refusing (UNAVAILABLE with grpc-retry-pushback-ms).
func BenchmarkServerGRPC(b *testing.B) {
	run := func(b *testing.B, want codes.Code, opts ...grpc.ServerOption) {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		srv := grpc.NewServer(opts...)
		healthpb.RegisterHealthServer(srv, healthy{})
		go func() { _ = srv.Serve(lis) }()
		defer srv.Stop()
		cc, err := grpc.NewClient("passthrough:///"+lis.Addr().String(),
			grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDisableRetry())
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Close()
		client := healthpb.NewHealthClient(cc)
		req := &healthpb.HealthCheckRequest{}
		ctx := context.Background()
		_, _ = client.Check(ctx, req) // connect outside the measurement
		b.ReportAllocs()
		for b.Loop() {
			if _, err := client.Check(ctx, req); status.Code(err) != want {
				b.Fatalf("%v, want %v", err, want)
			}
		}
	}
	b.Run("outcome=bare", func(b *testing.B) { run(b, codes.OK) })
	b.Run("outcome=served", func(b *testing.B) {
		run(b, codes.OK, grpc.UnaryInterceptor(retrygrpc.UnaryServerInterceptor(retryserver.New())))
	})
	b.Run("outcome=refused", func(b *testing.B) {
		run(b, codes.Unavailable, grpc.UnaryInterceptor(retrygrpc.UnaryServerInterceptor(full(b))))
	})
}
