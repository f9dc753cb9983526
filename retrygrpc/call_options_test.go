package retrygrpc_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
)

// finishes records the calls of a grpc.OnFinish function.
type finishes struct {
	mu   sync.Mutex
	errs []error
}

func (f *finishes) option() grpc.CallOption {
	return grpc.OnFinish(func(err error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.errs = append(f.errs, err)
	})
}

// codes returns the status code of each call so far.
func (f *finishes) codes() []codes.Code {
	f.mu.Lock()
	defer f.mu.Unlock()
	var cs []codes.Code
	for _, err := range f.errs {
		cs = append(cs, status.Code(err))
	}
	return cs
}

// TestOnFinishOncePerCall checks that a grpc.OnFinish function runs once per
// call, with the call's outcome, however many attempts the call made, as
// grpc.OnFinish promises.
func TestOnFinishOncePerCall(t *testing.T) {
	t.Run("unary, succeeds on the third attempt", func(t *testing.T) {
		srv := &server{check: failing(2, unavailable)}
		cc, _ := unaryConn(t, srv, retry.Constant(time.Second).Take(5))
		var f finishes
		if _, err := check(t.Context(), cc, f.option()); err != nil {
			t.Fatal(err)
		}
		eq(t, 3, len(srv.seen()), "attempts")
		eq(t, []codes.Code{codes.OK}, f.codes(), "OnFinish calls")
	})
	t.Run("unary, gives up", func(t *testing.T) {
		srv := &server{check: always(codes.Unavailable)}
		cc, _ := unaryConn(t, srv, retry.Constant(time.Second).Take(2))
		var f finishes
		_, err := check(t.Context(), cc, f.option(), f.option())
		eq(t, codes.Unavailable, status.Code(err), "code")
		eq(t, []codes.Code{codes.Unavailable, codes.Unavailable}, f.codes(), "OnFinish calls, two options")
	})
	t.Run("server stream, succeeds on the third attempt", func(t *testing.T) {
		srv := &server{split: func(n int, in string, ss grpc.ServerStream) error {
			if n <= 2 {
				return unavailable
			}
			return splitting(n, in, ss)
		}}
		cc, _ := streamConn(t, srv, retry.Constant(time.Second).Take(5))
		var f finishes
		got, err := download(t.Context(), cc, "a,b", f.option())
		if err != nil {
			t.Fatal(err)
		}
		eq(t, []string{"a", "b"}, got, "messages")
		eq(t, 3, len(srv.seen()), "attempts")
		eq(t, []codes.Code{codes.OK}, f.codes(), "OnFinish calls")
	})
	t.Run("client stream, ends at once with OK after retries", func(t *testing.T) {
		srv := &server{collect: func(n int, ss grpc.ServerStream) error {
			if n <= 2 {
				return unavailable
			}
			_, err := collectAll(ss)
			return err // OK without a message or headers: trailers only
		}}
		cc, _ := streamConn(t, srv, retry.Constant(time.Second).Take(5))
		var f finishes
		cs, err := cc.NewStream(t.Context(), collectDesc, collectMethod, f.option())
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.SendMsg(str("x")); err != nil {
			t.Fatal(err)
		}
		if err := cs.CloseSend(); err != nil {
			t.Fatal(err)
		}
		_, err = recvAll(cs)
		eq(t, codes.Internal, status.Code(err), "no response message for a unary-response stream")
		eq(t, 3, len(srv.seen()), "attempts")
		eq(t, []codes.Code{codes.Internal}, f.codes(), "OnFinish calls")
	})
	t.Run("stream, gives up", func(t *testing.T) {
		srv := &server{split: func(int, string, grpc.ServerStream) error { return unavailable }}
		cc, _ := streamConn(t, srv, retry.Constant(time.Second).Take(2))
		var f finishes
		_, err := download(t.Context(), cc, "a", f.option())
		eq(t, codes.Unavailable, status.Code(err), "code")
		eq(t, []codes.Code{codes.Unavailable}, f.codes(), "OnFinish calls")
	})
	t.Run("hedged", func(t *testing.T) {
		srv := &server{check: failing(1, unavailable)}
		cc := hedgeConn(t, srv, retry.Constant(time.Hour).Take(2))
		var f finishes
		if _, err := check(t.Context(), cc, f.option()); err != nil {
			t.Fatal(err)
		}
		eq(t, 2, len(srv.seen()), "attempts")
		eq(t, []codes.Code{codes.OK}, f.codes(), "OnFinish calls")
	})
	t.Run("not selected: gRPC's own, once", func(t *testing.T) {
		srv := &server{check: always(codes.Unavailable)}
		cc, _ := unaryConn(t, srv, retry.Constant(time.Second).Take(2),
			retrygrpc.Methods(func(string) bool { return false }))
		var f finishes
		_, _ = check(context.Background(), cc, f.option())
		eq(t, []codes.Code{codes.Unavailable}, f.codes(), "OnFinish calls")
	})
}
