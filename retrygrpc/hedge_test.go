package retrygrpc_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
)

// hedgeConn starts srv and dials it with a hedging interceptor on s and
// opts.
func hedgeConn(t *testing.T, srv *server, s retry.Schedule, opts ...retrygrpc.Option) *grpc.ClientConn {
	return start(t, srv, grpc.WithUnaryInterceptor(retrygrpc.HedgeUnaryClientInterceptor(s, opts...)))
}

// firstAttempt reports whether ctx is the server side of a call's first
// attempt: one without grpc-previous-rpc-attempts.
func firstAttempt(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	return len(md.Get(retrygrpc.PreviousAttemptsKey)) == 0
}

// TestHedgeFastReplicaWins: the first attempt hangs until it is cancelled,
// the hedge sent after 1 ms answers; the caller gets the hedge's answer and
// metadata, and the first attempt is cancelled. The first attempt cannot
// win whatever the timing, so the real clock makes no test flaky here (a
// FakeClock would make retry.Hedge sequential).
func TestHedgeFastReplicaWins(t *testing.T) {
	arrived, cancelled := make(chan struct{}), make(chan struct{})
	srv := &server{check: func(_ int, ctx context.Context) (*healthpb.HealthCheckResponse, error) {
		if firstAttempt(ctx) {
			close(arrived)
			<-ctx.Done()
			close(cancelled)
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		// Answer only once the first attempt is in its handler, so that
		// its cancellation is seen there whatever the timing.
		<-arrived
		_ = grpc.SetHeader(ctx, metadata.Pairs("replica", "fast"))
		_ = grpc.SetTrailer(ctx, metadata.Pairs("served-by", "fast"))
		return serving()
	}}
	cc := hedgeConn(t, srv, retry.Constant(time.Millisecond).Take(1))
	var header, trailer metadata.MD
	var p peer.Peer
	resp, err := check(t.Context(), cc, grpc.Header(&header), grpc.Trailer(&trailer), grpc.Peer(&p))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("status %v", resp.Status)
	}
	if header.Get("replica")[0] != "fast" || trailer.Get("served-by")[0] != "fast" || p.Addr == nil {
		t.Errorf("header %v, trailer %v, peer %v: want the fast attempt's", header, trailer, p.Addr)
	}
	<-cancelled // the slow attempt saw its cancellation
	if n := len(srv.seen()); n != 2 {
		t.Errorf("%d calls, want 2", n)
	}
}

// TestHedgeNonFatal: a non-fatal failure sends the next attempt at once,
// however long the delay.
func TestHedgeNonFatal(t *testing.T) {
	srv := &server{check: failing(1, unavailable)}
	cc := hedgeConn(t, srv, retry.Constant(time.Hour).Take(2))
	if _, err := check(t.Context(), cc); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.seen()); n != 2 {
		t.Errorf("%d calls, want 2", n)
	}
}

// TestHedgeFatal: a fatal code from any attempt ends the call at once, as it
// is, and cancels the attempt still in flight.
func TestHedgeFatal(t *testing.T) {
	arrived, cancelled := make(chan struct{}), make(chan struct{})
	srv := &server{check: func(_ int, ctx context.Context) (*healthpb.HealthCheckResponse, error) {
		if firstAttempt(ctx) {
			close(arrived)
			<-ctx.Done()
			close(cancelled)
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		<-arrived // as in TestHedgeFastReplicaWins
		return nil, status.Error(codes.InvalidArgument, "bad")
	}}
	cc := hedgeConn(t, srv, retry.Constant(time.Millisecond).Take(1))
	_, err := check(t.Context(), cc)
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || st.Message() != "bad" {
		t.Errorf("error %v, want InvalidArgument as it is", err)
	}
	<-cancelled
	if n := len(srv.seen()); n != 2 {
		t.Errorf("%d calls, want 2", n)
	}
}

func TestHedgeExhausted(t *testing.T) {
	srv := &server{check: failing(10, unavailable)}
	cc := hedgeConn(t, srv, retry.Constant(time.Hour).Take(2))
	_, err := check(t.Context(), cc)
	if !errors.Is(err, retry.ErrExhausted) || status.Code(err) != codes.Unavailable {
		t.Errorf("error %v, want ErrExhausted and Unavailable", err)
	}
	if n := len(srv.seen()); n != 3 {
		t.Errorf("%d calls, want 3", n)
	}
	// Each failure sends the next attempt at once, so they are sequential.
	if got, want := srv.seen(), []string{"", "1", "2"}; !slices.Equal(got, want) {
		t.Errorf("grpc-previous-rpc-attempts: got %q, want %q", got, want)
	}
}

func TestHedgeMethods(t *testing.T) {
	srv := &server{check: failing(1, unavailable)}
	cc := hedgeConn(t, srv, retry.Constant(0).Take(2), retrygrpc.Methods(func(string) bool { return false }))
	if _, err := check(t.Context(), cc); status.Code(err) != codes.Unavailable {
		t.Errorf("error %v", err)
	}
	if n := len(srv.seen()); n != 1 {
		t.Errorf("%d calls, want 1", n)
	}
}

func TestHedgeNegativePushback(t *testing.T) {
	srv := &server{check: pushingBack("-1")}
	cc := hedgeConn(t, srv, retry.Constant(time.Hour).Take(3))
	if _, err := check(t.Context(), cc); status.Code(err) != codes.Unavailable {
		t.Errorf("error %v", err)
	}
	if n := len(srv.seen()); n != 1 {
		t.Errorf("%d calls, want 1", n)
	}
}
