package retrygrpc_test

import (
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
)

// panicsWith runs f and reports whether it panicked with want, on the
// calling goroutine.
func panicsWith(t *testing.T, want any, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		if got := recover(); got != want {
			t.Errorf("panic: got %v, want %v", got, want)
		}
	}()
	f()
}

// sendThenWait sends one message and holds the stream open until the
// client ends it.
func sendThenWait(_ int, _ string, ss grpc.ServerStream) error {
	if err := ss.SendMsg(str("first")); err != nil {
		return err
	}
	<-ss.Context().Done()
	return ss.Context().Err()
}

// TestStreamHookPanic checks that a panic in user code that the stream
// interceptor runs on its own goroutine reaches the caller's goroutine, in
// the method that observes the end of the call, instead of ending the
// program; and that the call's attempt is released.
func TestStreamHookPanic(t *testing.T) {
	failTwice := func(n int, in string, ss grpc.ServerStream) error {
		if n <= 2 {
			return unavailable
		}
		return splitting(n, in, ss)
	}
	for _, tt := range []struct {
		name string
		opts []retrygrpc.Option
		call []grpc.CallOption
		srv  func(int, string, grpc.ServerStream) error
	}{
		{name: "OnRetry", srv: failTwice,
			opts: []retrygrpc.Option{retrygrpc.With(retry.OnRetry(func(retry.Attempt) { panic("hook") }))},
			call: []grpc.CallOption{grpc.OnFinish(func(err error) { t.Errorf("OnFinish(%v) after a panic", err) })}},
		{name: "OnDone after the commit, the stream still open", srv: sendThenWait,
			opts: []retrygrpc.Option{retrygrpc.With(retry.OnDone(func(retry.Outcome) { panic("hook") }))},
			call: []grpc.CallOption{grpc.OnFinish(func(err error) { t.Errorf("OnFinish(%v) after a panic", err) })}},
		{name: "If", srv: failTwice,
			opts: []retrygrpc.Option{retrygrpc.With(retry.If(func(error) bool { panic("hook") }))}},
		{name: "OnDone after the commit", srv: splitting,
			opts: []retrygrpc.Option{retrygrpc.With(retry.OnDone(func(retry.Outcome) { panic("hook") }))}},
		{name: "OnFinish when the retries end", srv: func(int, string, grpc.ServerStream) error { return unavailable },
			call: []grpc.CallOption{grpc.OnFinish(func(error) { panic("hook") })}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := &server{split: tt.srv}
			cc, _ := streamConn(t, srv, retry.Constant(time.Second).Take(3), tt.opts...)
			panicsWith(t, "hook", func() {
				_, err := download(t.Context(), cc, "a,b", tt.call...)
				t.Fatalf("no panic; the stream ended with %v", err)
			})
			// TestMain's leak check finds an attempt left open.
		})
	}

	t.Run("every method that observes the end panics", func(t *testing.T) {
		srv := &server{split: failTwice}
		cc, _ := streamConn(t, srv, retry.Constant(time.Second).Take(3),
			retrygrpc.With(retry.OnRetry(func(retry.Attempt) { panic("hook") })))
		cs, err := cc.NewStream(t.Context(), splitDesc, splitMethod)
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.SendMsg(str("a")); err != nil {
			t.Fatal(err)
		}
		if err := cs.CloseSend(); err != nil {
			t.Fatal(err)
		}
		panicsWith(t, "hook", func() { _, _ = recvAll(cs) })
		panicsWith(t, "hook", func() { _ = cs.SendMsg(str("a")) })
		panicsWith(t, "hook", func() { _ = cs.CloseSend() })
		panicsWith(t, "hook", func() { _, _ = cs.Header() })
	})
}
