package retrygrpc_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
)

// TestLimiterPerTarget checks that every attempt to a target holds a
// permit of that target's Limiter: a call that finds none fails with
// Unavailable matching retry.ErrLimited and is not sent; another target is
// not affected; all permits come back.
func TestLimiterPerTarget(t *testing.T) {
	limiters := map[string]*retry.Limiter{}
	newLimiter := func(target string) *retry.Limiter {
		l := retry.NewLimiter(retry.LimiterInitial(1))
		limiters[target] = l
		return l
	}
	entered, release := make(chan struct{}), make(chan struct{})
	slow := &server{check: func(n int, ctx context.Context) (*healthpb.HealthCheckResponse, error) {
		if n == 1 {
			close(entered)
			<-release
		}
		return serving()
	}}
	fast := &server{check: always(codes.OK)}
	icpt := retrygrpc.UnaryClientInterceptor(retry.Constant(0).Take(2), retrygrpc.Limiter(newLimiter))
	ccSlow := start(t, slow, grpc.WithUnaryInterceptor(icpt))
	ccFast := start(t, fast, grpc.WithUnaryInterceptor(icpt))

	done := make(chan error)
	go func() {
		_, err := check(context.Background(), ccSlow)
		done <- err
	}()
	<-entered
	_, err := check(t.Context(), ccSlow)
	isErr(t, err, retry.ErrLimited)
	eq(t, codes.Unavailable, status.Code(err), "code")
	if _, err := check(t.Context(), ccFast); err != nil {
		t.Fatal("another target has its own Limiter:", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	eq(t, 1, len(slow.seen()), "the refused call was not sent")
	eq(t, 0, limiters[ccSlow.Target()].InFlight(), "permits back")
	eq(t, 0, limiters[ccFast.Target()].InFlight(), "permits back")
}

// TestLimiterHedgingPerTarget checks that a hedge finding no permit is not
// sent.
func TestLimiterHedgingPerTarget(t *testing.T) {
	l := retry.NewLimiter(retry.LimiterInitial(1))
	srv := &server{check: func(int, context.Context) (*healthpb.HealthCheckResponse, error) {
		time.Sleep(10 * time.Millisecond) // outlasts the three hedge delays
		return serving()
	}}
	icpt := retrygrpc.HedgeUnaryClientInterceptor(retry.Constant(time.Millisecond).Take(3),
		retrygrpc.Limiter(func(string) *retry.Limiter { return l }))
	cc := start(t, srv, grpc.WithUnaryInterceptor(icpt))
	if _, err := check(t.Context(), cc); err != nil {
		t.Fatal(err)
	}
	eq(t, 1, len(srv.seen()), "no hedge sent")
	eq(t, 0, l.InFlight(), "permits back")
}
