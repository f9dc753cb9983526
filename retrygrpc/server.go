package retrygrpc

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/seed-b8c8f69d/retry/retryserver"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// UnaryServerInterceptor returns a grpc.UnaryServerInterceptor that admits
// each call through s (retryserver.Shedder.Admit), telling retries (a
// PreviousAttemptsKey header other than "0") from first attempts, and runs
// the handler once admitted.
//
// A refused call ends with codes.Unavailable and the trailer PushbackKey:
// the refusal's pushback in milliseconds, rounded up, or -1 ("do not
// retry", gRFC A6) when the Shedder sheds hard. A call whose context ended
// before it could start is not run and ends with codes.Canceled, or
// codes.DeadlineExceeded if its deadline passed.
//
// The slot is held until the handler returns and released as a Drop if the
// call's context has ended, else as a Failure if the handler panics or
// returns codes.Unavailable, ResourceExhausted or DeadlineExceeded, and as
// a Success otherwise. A panic goes on unchanged, as without the interceptor.
// Put it after (inside) authentication and panic-recovery interceptors, so
// that the calls it admits are those that will really run.
//
// UnaryServerInterceptor panics if s is nil.
func UnaryServerInterceptor(s *retryserver.Shedder) grpc.UnaryServerInterceptor {
	mustShedder("UnaryServerInterceptor", s)
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		t, err := s.Admit(ctx, retried(ctx))
		if err != nil {
			return nil, refused(ctx, err, func(md metadata.MD) error { return grpc.SetTrailer(ctx, md) })
		}
		served := false
		defer func() {
			if !served {
				release(ctx, t, errPanicked) // the handler panicked
			}
		}()
		resp, err := handler(ctx, req)
		served = true
		release(ctx, t, err)
		return resp, err
	}
}

// StreamServerInterceptor is UnaryServerInterceptor for streams: each
// stream is admitted when it starts and holds its slot until its handler
// returns, so give long-lived streams (watches, subscriptions) a Shedder of
// their own, or none, lest they hold every slot.
//
// StreamServerInterceptor panics if s is nil.
func StreamServerInterceptor(s *retryserver.Shedder) grpc.StreamServerInterceptor {
	mustShedder("StreamServerInterceptor", s)
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx := ss.Context()
		t, err := s.Admit(ctx, retried(ctx))
		if err != nil {
			return refused(ctx, err, func(md metadata.MD) error { ss.SetTrailer(md); return nil })
		}
		served := false
		defer func() {
			if !served {
				release(ctx, t, errPanicked)
			}
		}()
		err = handler(srv, ss)
		served = true
		release(ctx, t, err)
		return err
	}
}

func mustShedder(fn string, s *retryserver.Shedder) {
	if s == nil {
		panic("retrygrpc: " + fn + ": nil Shedder")
	}
}

// retried reports whether the call says it is a retry: a PreviousAttemptsKey
// other than "" or "0". Whatever the header holds, it never fails.
func retried(ctx context.Context) bool {
	v := metadata.ValueFromIncomingContext(ctx, PreviousAttemptsKey)
	return len(v) > 0 && v[0] != "" && v[0] != "0"
}

// refused returns the error of a call that Admit turned away with err,
// setting the pushback trailer of a refusal through setTrailer.
func refused(ctx context.Context, err error, setTrailer func(metadata.MD) error) error {
	var rf *retryserver.Refusal
	if !errors.As(err, &rf) {
		// The call's context ended, or its deadline passed.
		if errors.Is(err, context.DeadlineExceeded) {
			return status.Error(codes.DeadlineExceeded, err.Error())
		}
		return status.FromContextError(ctx.Err()).Err()
	}
	_ = setTrailer(metadata.Pairs(PushbackKey, pushbackValue(rf.Pushback)))
	return status.Error(codes.Unavailable, rf.Error())
}

// pushbackValue is d in milliseconds, rounded up, or "-1" if d is negative.
func pushbackValue(d time.Duration) string {
	if d < 0 {
		return "-1"
	}
	return strconv.FormatInt(int64((d+time.Millisecond-1)/time.Millisecond), 10)
}

// errPanicked stands for the outcome of a handler that panicked: a failure,
// unless the call's context had ended.
var errPanicked = status.Error(codes.Unavailable, "retrygrpc: the handler panicked")

// release releases t after a handler that returned err.
func release(ctx context.Context, t retryserver.Ticket, err error) {
	switch {
	case ctx.Err() != nil:
		t.Drop()
	case err == nil:
		t.Success()
	default:
		switch status.Code(err) {
		case codes.Unavailable, codes.ResourceExhausted, codes.DeadlineExceeded:
			t.Failure()
		default:
			t.Success()
		}
	}
}
