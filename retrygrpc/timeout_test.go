package retrygrpc_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
)

// resetAtDeadline is the error of an attempt that the server reset as its
// deadline (sent as grpc-timeout) passed: gRPC reports DeadlineExceeded.
var resetAtDeadline = status.Error(codes.DeadlineExceeded, "stream reset by the server at its deadline")

// awaitDeadline returns when ctx's deadline has passed by the clock: the
// instant a server's reset arrives at best, whether or not ctx's own timer
// has fired yet.
func awaitDeadline(ctx context.Context) {
	d, _ := ctx.Deadline()
	time.Sleep(time.Until(d))
}

// TestAttemptTimeoutBeforeItsTimer checks, for every interceptor, that an
// attempt cut short by retry.AttemptTimeout is retried whatever its code,
// even when its failure arrives before its context's own timer has fired:
// the server's reset at the deadline it was sent (grpc-timeout) often does.
// Under testing/synctest, the failure and the timer are due at the same
// instant and run in either order, so each case makes many calls: on code
// that judges the attempt by its context's Err rather than by its deadline,
// some of them end after the first attempt.
func TestAttemptTimeoutBeforeItsTimer(t *testing.T) {
	const calls = 200
	// Time stands still in the bubble until each attempt's deadline. The If
	// rejects every error: an attempt that timed out is retried all the same.
	timeout := retrygrpc.With(retry.AttemptTimeout(time.Second), retry.If(func(error) bool { return false }))
	t.Run("unary", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ic := retrygrpc.UnaryClientInterceptor(retry.Constant(time.Minute).Take(1), timeout)
			failed := 0
			for range calls {
				n := 0
				invoker := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
					if n++; n == 1 {
						awaitDeadline(ctx)
						return resetAtDeadline
					}
					return nil
				}
				if err := ic(t.Context(), checkMethod, nil, nil, nil, invoker); err != nil {
					failed++
				}
			}
			if failed > 0 {
				t.Errorf("%d of %d calls not retried after their first attempt timed out", failed, calls)
			}
		})
	})
	t.Run("hedge", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// The next attempt starts only after a failure that is not
			// fatal: the hedging delay is far away.
			ic := retrygrpc.HedgeUnaryClientInterceptor(retry.Constant(time.Hour).Take(1), timeout)
			failed := 0
			for range calls {
				n := 0
				invoker := func(ctx context.Context, _ string, _, reply any, _ *grpc.ClientConn, opts ...grpc.CallOption) error {
					if n++; n == 1 {
						awaitDeadline(ctx)
						return resetAtDeadline
					}
					return answer(opts, reply, &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING})
				}
				var resp healthpb.HealthCheckResponse
				if err := ic(t.Context(), checkMethod, &healthpb.HealthCheckRequest{}, &resp, nil, invoker); err != nil {
					failed++
				}
			}
			if failed > 0 {
				t.Errorf("%d of %d calls not retried after their first attempt timed out", failed, calls)
			}
		})
	})
	t.Run("stream", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ic := retrygrpc.StreamClientInterceptor(retry.Constant(time.Minute).Take(1), timeout)
			failed := 0
			for range calls {
				s := &streamer{make: func(n int, ctx context.Context) (grpc.ClientStream, error) {
					if n == 1 {
						// A stream's context does not carry the attempt's
						// deadline (the interceptor abandons the attempt
						// instead); fail when it passes, as a lower layer
						// could.
						time.Sleep(time.Second)
						return nil, resetAtDeadline
					}
					return newFake(ctx).headersNow(metadata.Pairs("k", "v")), nil
				}}
				ctx, cancel := context.WithCancel(t.Context())
				if _, err := ic(ctx, splitDesc, nil, splitMethod, s.stream); err != nil {
					failed++
				}
				cancel()
			}
			if failed > 0 {
				t.Errorf("%d of %d calls not retried after their first attempt timed out", failed, calls)
			}
		})
	})
	t.Run("the call's deadline", func(t *testing.T) {
		// A DeadlineExceeded caused by the caller's own deadline is never
		// retried, even if Codes lists it and the failure arrives before
		// the caller's context has ended.
		synctest.Test(t, func(t *testing.T) {
			ic := retrygrpc.UnaryClientInterceptor(retry.Constant(0).Take(3),
				retrygrpc.Codes(codes.Unavailable, codes.DeadlineExceeded),
				retrygrpc.With(retry.AttemptTimeout(time.Hour)))
			retried := 0
			for range calls {
				n := 0
				invoker := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
					n++
					awaitDeadline(ctx)
					return resetAtDeadline
				}
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				err := ic(ctx, checkMethod, nil, nil, nil, invoker)
				cancel()
				if status.Code(err) != codes.DeadlineExceeded {
					t.Fatalf("error %v, want DeadlineExceeded", err)
				}
				if n > 1 {
					retried++
				}
			}
			if retried > 0 {
				t.Errorf("%d of %d calls retried after the caller's deadline passed", retried, calls)
			}
		})
	})
}
