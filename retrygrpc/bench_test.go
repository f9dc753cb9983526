package retrygrpc_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
)

// BenchmarkUnaryInterceptor measures what the interceptor adds to a call
// that succeeds at once, with an invoker that does nothing: the cost of the
// interceptor alone, without gRPC's (see bench/ for whole calls on
// loopback).
func BenchmarkUnaryInterceptor(b *testing.B) {
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	ctx := context.Background()
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = invoker(ctx, "/s/m", nil, nil, nil)
		}
	})
	ic := retrygrpc.UnaryClientInterceptor(retry.Exponential(100 * time.Millisecond).Cap(2 * time.Second).FullJitter(nil).Take(4))
	b.Run("retrygrpc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = ic(ctx, "/s/m", nil, nil, nil, invoker)
		}
	})
}
