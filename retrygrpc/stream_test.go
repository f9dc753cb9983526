package retrygrpc_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
)

// streamConn starts srv and dials it with a stream interceptor on s and
// opts, on a fake clock that it returns.
func streamConn(t *testing.T, srv *server, s retry.Schedule, opts ...retrygrpc.Option) (*grpc.ClientConn, *retry.FakeClock) {
	clock := retry.NewFakeClock(t0)
	opts = append([]retrygrpc.Option{retrygrpc.With(retry.WithClock(clock))}, opts...)
	return start(t, srv, grpc.WithStreamInterceptor(retrygrpc.StreamClientInterceptor(s, opts...))), clock
}

// collectAll receives every message of a Collect call and joins them.
func collectAll(ss grpc.ServerStream) (string, error) {
	var got []string
	for {
		m := new(wrapperspb.StringValue)
		if err := ss.RecvMsg(m); err == io.EOF {
			return strings.Join(got, ","), nil
		} else if err != nil {
			return "", err
		}
		got = append(got, m.Value)
	}
}

// upload sends msgs on a Collect call, closes it and returns the answer.
func upload(ctx context.Context, cc *grpc.ClientConn, msgs ...string) (string, error) {
	cs, err := cc.NewStream(ctx, collectDesc, collectMethod)
	if err != nil {
		return "", err
	}
	for _, m := range msgs {
		if err := cs.SendMsg(str(m)); err != nil {
			if err == io.EOF {
				break
			}
			return "", err
		}
	}
	if err := cs.CloseSend(); err != nil {
		return "", err
	}
	out := new(wrapperspb.StringValue)
	if err := cs.RecvMsg(out); err != nil {
		return "", err
	}
	return out.Value, nil
}

// download opens a Split call for in, with opts, and receives every message.
func download(ctx context.Context, cc *grpc.ClientConn, in string, opts ...grpc.CallOption) ([]string, error) {
	cs, err := cc.NewStream(ctx, splitDesc, splitMethod, opts...)
	if err != nil {
		return nil, err
	}
	if err := cs.SendMsg(str(in)); err != nil {
		return nil, err
	}
	if err := cs.CloseSend(); err != nil {
		return nil, err
	}
	return recvAll(cs)
}

// splitting sends each comma-separated part of in as a message.
func splitting(_ int, in string, ss grpc.ServerStream) error {
	for _, p := range strings.Split(in, ",") {
		if err := ss.SendMsg(str(p)); err != nil {
			return err
		}
	}
	return nil
}

func TestStreamServerStreamingRetried(t *testing.T) {
	srv := &server{split: func(n int, in string, ss grpc.ServerStream) error {
		if n <= 2 {
			return unavailable
		}
		return splitting(n, in, ss)
	}}
	cc, clock := streamConn(t, srv, retry.Exponential(time.Second).Take(5))
	got, err := download(t.Context(), cc, "a,b,c")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := srv.seen(), []string{"", "1", "2"}; !slices.Equal(got, want) {
		t.Errorf("grpc-previous-rpc-attempts: got %q, want %q", got, want)
	}
	if got, want := clock.Sleeps(), []time.Duration{time.Second, 2 * time.Second}; !slices.Equal(got, want) {
		t.Errorf("waits %v, want %v", got, want)
	}
}

// TestStreamCommitted checks that a stream is not retried once the first
// message or the headers arrived: the error reaches the caller unchanged.
func TestStreamCommitted(t *testing.T) {
	t.Run("first message", func(t *testing.T) {
		srv := &server{split: func(_ int, in string, ss grpc.ServerStream) error {
			if err := ss.SendMsg(str("first")); err != nil {
				return err
			}
			return unavailable
		}}
		cc, clock := streamConn(t, srv, retry.Constant(time.Second).Take(5))
		got, err := download(t.Context(), cc, "x")
		if !slices.Equal(got, []string{"first"}) {
			t.Errorf("got %q", got)
		}
		if st, ok := status.FromError(err); !ok || st.Code() != codes.Unavailable || st.Message() != "down" {
			t.Errorf("error %v, want the server's status", err)
		}
		var re *retry.Error
		if errors.As(err, &re) {
			t.Errorf("error %v is a *retry.Error", err)
		}
		if n := len(srv.seen()); n != 1 {
			t.Errorf("%d calls, want 1", n)
		}
		if len(clock.Sleeps()) != 0 {
			t.Errorf("waited %v", clock.Sleeps())
		}
	})
	t.Run("headers", func(t *testing.T) {
		srv := &server{split: func(_ int, in string, ss grpc.ServerStream) error {
			if err := ss.SendHeader(metadata.Pairs("k", "v")); err != nil {
				return err
			}
			return unavailable
		}}
		cc, _ := streamConn(t, srv, retry.Constant(time.Second).Take(5))
		got, err := download(t.Context(), cc, "x")
		if len(got) != 0 || status.Code(err) != codes.Unavailable {
			t.Errorf("got %q, %v", got, err)
		}
		if n := len(srv.seen()); n != 1 {
			t.Errorf("%d calls, want 1", n)
		}
	})
	t.Run("headers, asked for", func(t *testing.T) {
		release := make(chan struct{})
		srv := &server{split: func(_ int, in string, ss grpc.ServerStream) error {
			if err := ss.SendHeader(metadata.Pairs("k", "v")); err != nil {
				return err
			}
			<-release
			return unavailable
		}}
		cc, _ := streamConn(t, srv, retry.Constant(time.Second).Take(5))
		cs, err := cc.NewStream(t.Context(), splitDesc, splitMethod)
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.SendMsg(str("x")); err != nil {
			t.Fatal(err)
		}
		md, err := cs.Header()
		if err != nil || !slices.Equal(md.Get("k"), []string{"v"}) {
			t.Fatalf("Header: %v, %v", md, err)
		}
		close(release)
		if _, err := recvAll(cs); status.Code(err) != codes.Unavailable {
			t.Errorf("error %v", err)
		}
		if n := len(srv.seen()); n != 1 {
			t.Errorf("%d calls, want 1", n)
		}
	})
	t.Run("Context", func(t *testing.T) {
		srv := &server{split: func(int, string, grpc.ServerStream) error { return unavailable }}
		cc, _ := streamConn(t, srv, retry.Constant(time.Second).Take(5))
		cs, err := cc.NewStream(t.Context(), splitDesc, splitMethod)
		if err != nil {
			t.Fatal(err)
		}
		_ = cs.Context()
		if err := cs.SendMsg(str("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := recvAll(cs); status.Code(err) != codes.Unavailable {
			t.Errorf("error %v", err)
		}
		if n := len(srv.seen()); n != 1 {
			t.Errorf("%d calls, want 1", n)
		}
	})
}

func TestStreamNotRetried(t *testing.T) {
	srv := &server{split: func(int, string, grpc.ServerStream) error { return status.Error(codes.NotFound, "gone") }}
	cc, _ := streamConn(t, srv, retry.Constant(time.Second).Take(5))
	_, err := download(t.Context(), cc, "x")
	if st := status.Convert(err); st.Code() != codes.NotFound || st.Message() != "gone" {
		t.Errorf("error %v", err)
	}
	if n := len(srv.seen()); n != 1 {
		t.Errorf("%d calls, want 1", n)
	}
}

func TestStreamExhausted(t *testing.T) {
	srv := &server{split: func(int, string, grpc.ServerStream) error { return unavailable }}
	cc, _ := streamConn(t, srv, retry.Constant(time.Second).Take(2))
	cs, err := cc.NewStream(t.Context(), splitDesc, splitMethod)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.SendMsg(str("x")); err != nil {
		t.Fatal(err)
	}
	_, err = recvAll(cs)
	if !errors.Is(err, retry.ErrExhausted) || status.Code(err) != codes.Unavailable {
		t.Errorf("error %v, want ErrExhausted and Unavailable", err)
	}
	if n := len(srv.seen()); n != 3 {
		t.Errorf("%d calls, want 3", n)
	}
	if err := cs.SendMsg(str("y")); err != io.EOF {
		t.Errorf("SendMsg after the end: %v, want io.EOF", err)
	}
	if md, err := cs.Header(); md != nil || err != nil {
		t.Errorf("Header after the end: %v, %v", md, err)
	}
	if err := cs.RecvMsg(new(wrapperspb.StringValue)); !errors.Is(err, retry.ErrExhausted) {
		t.Errorf("RecvMsg again: %v", err)
	}
}

func TestStreamPushback(t *testing.T) {
	for _, tc := range []struct {
		value string
		calls int
		waits []time.Duration
	}{
		{"3000", 2, []time.Duration{3 * time.Second}},
		{"-1", 1, nil},
		{"soon", 1, nil},
	} {
		t.Run(tc.value, func(t *testing.T) {
			srv := &server{split: func(n int, in string, ss grpc.ServerStream) error {
				if n == 1 {
					ss.SetTrailer(metadata.Pairs(retrygrpc.PushbackKey, tc.value))
					return unavailable
				}
				return splitting(n, in, ss)
			}}
			cc, clock := streamConn(t, srv, retry.Constant(time.Second).Take(5))
			_, err := download(t.Context(), cc, "a")
			if (err == nil) != (tc.calls == 2) {
				t.Errorf("error %v", err)
			}
			if n := len(srv.seen()); n != tc.calls {
				t.Errorf("%d calls, want %d", n, tc.calls)
			}
			if got := clock.Sleeps(); !slices.Equal(got, tc.waits) {
				t.Errorf("waits %v, want %v", got, tc.waits)
			}
		})
	}
}

// TestStreamReplay checks that the messages of a client stream sent before
// a failure reach the next attempt intact and in order, CloseSend
// included.
func TestStreamReplay(t *testing.T) {
	t.Run("failure seen by RecvMsg", func(t *testing.T) {
		var mu sync.Mutex
		var received []string
		srv := &server{collect: func(n int, ss grpc.ServerStream) error {
			if n == 1 {
				for range 2 {
					if err := ss.RecvMsg(new(wrapperspb.StringValue)); err != nil {
						return err
					}
				}
				return unavailable
			}
			got, err := collectAll(ss)
			if err != nil {
				return err
			}
			mu.Lock()
			received = append(received, got)
			mu.Unlock()
			return ss.SendMsg(str(got))
		}}
		cc, _ := streamConn(t, srv, retry.Constant(time.Second).Take(5))
		got, err := upload(t.Context(), cc, "a", "b", "c", "d")
		if err != nil {
			t.Fatal(err)
		}
		if got != "a,b,c,d" || !slices.Equal(received, []string{"a,b,c,d"}) {
			t.Errorf("answer %q, server received %q; want a,b,c,d", got, received)
		}
		if n := len(srv.seen()); n != 2 {
			t.Errorf("%d calls, want 2", n)
		}
	})
	t.Run("sending after the failure", func(t *testing.T) {
		// The first attempt fails after one message; the client sends
		// the rest only once the retry has been decided, so they go to
		// the second attempt, after the first message sent again.
		retrying := make(chan struct{})
		srv := &server{collect: func(n int, ss grpc.ServerStream) error {
			if n == 1 {
				if err := ss.RecvMsg(new(wrapperspb.StringValue)); err != nil {
					return err
				}
				return unavailable
			}
			got, err := collectAll(ss)
			if err != nil {
				return err
			}
			return ss.SendMsg(str(got))
		}}
		cc, _ := streamConn(t, srv, retry.Constant(time.Second).Take(5),
			retrygrpc.With(retry.OnRetry(func(retry.Attempt) { close(retrying) })))
		cs, err := cc.NewStream(t.Context(), collectDesc, collectMethod)
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.SendMsg(str("a")); err != nil {
			t.Fatal(err)
		}
		// The failure is found by the interceptor on its own: nobody
		// reads the stream yet.
		<-retrying
		for _, m := range []string{"b", "c"} {
			if err := cs.SendMsg(str(m)); err != nil {
				t.Fatal(err)
			}
		}
		if err := cs.CloseSend(); err != nil {
			t.Fatal(err)
		}
		out := new(wrapperspb.StringValue)
		if err := cs.RecvMsg(out); err != nil {
			t.Fatal(err)
		}
		if out.Value != "a,b,c" {
			t.Errorf("answer %q, want a,b,c", out.Value)
		}
	})
	t.Run("over the limit", func(t *testing.T) {
		srv := &server{collect: func(n int, ss grpc.ServerStream) error {
			if _, err := collectAll(ss); err != nil {
				return err
			}
			if n == 1 {
				return unavailable
			}
			return ss.SendMsg(str("ok"))
		}}
		// "abc" takes 5 bytes in proto: the second message crosses 8.
		cc, _ := streamConn(t, srv, retry.Constant(time.Second).Take(5), retrygrpc.ReplayLimit(8))
		if _, err := upload(t.Context(), cc, "abc", "def"); status.Code(err) != codes.Unavailable {
			t.Errorf("error %v, want Unavailable: the call was committed", err)
		}
		if n := len(srv.seen()); n != 1 {
			t.Errorf("%d calls, want 1", n)
		}
		// Within the limit, it is retried.
		cc2, _ := streamConn(t, srv, retry.Constant(time.Second).Take(5), retrygrpc.ReplayLimit(10))
		if got, err := upload(t.Context(), cc2, "abc", "def"); err != nil || got != "ok" {
			t.Errorf("got %q, %v", got, err)
		}
	})
}

// TestStreamBidi runs a bidirectional call whose first attempt fails at
// once, with the sending and the receiving on two goroutines.
func TestStreamBidi(t *testing.T) {
	srv := &server{chat: func(n int, ss grpc.ServerStream) error {
		if n == 1 {
			return unavailable
		}
		for {
			m := new(wrapperspb.StringValue)
			if err := ss.RecvMsg(m); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
			if err := ss.SendMsg(str("re:" + m.Value)); err != nil {
				return err
			}
		}
	}}
	cc, _ := streamConn(t, srv, retry.Constant(time.Second).Take(5))
	cs, err := cc.NewStream(t.Context(), chatDesc, chatMethod)
	if err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	go func() {
		for _, m := range []string{"a", "b", "c"} {
			if err := cs.SendMsg(str(m)); err != nil {
				sent <- err
				return
			}
		}
		sent <- cs.CloseSend()
	}()
	got, err := recvAll(cs)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if want := []string{"re:a", "re:b", "re:c"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if n := len(srv.seen()); n != 2 {
		t.Errorf("%d calls, want 2", n)
	}
}

// TestStreamCallerCancel checks that a call abandoned before its commit
// leaves nothing running (TestMain's goleak checks that) and is not
// retried.
func TestStreamCallerCancel(t *testing.T) {
	entered := make(chan struct{})
	srv := &server{split: func(_ int, _ string, ss grpc.ServerStream) error {
		close(entered)
		<-ss.Context().Done()
		return unavailable
	}}
	cc, _ := streamConn(t, srv, retry.Constant(time.Second).Take(5), retrygrpc.Codes(codes.Unavailable, codes.Canceled))
	ctx, cancel := context.WithCancel(t.Context())
	cs, err := cc.NewStream(ctx, splitDesc, splitMethod)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.SendMsg(str("x")); err != nil {
		t.Fatal(err)
	}
	<-entered
	cancel()
	if _, err := recvAll(cs); status.Code(err) != codes.Canceled {
		t.Errorf("error %v, want Canceled", err)
	}
	if n := len(srv.seen()); n != 1 {
		t.Errorf("%d calls, want 1", n)
	}
}

func TestStreamMethods(t *testing.T) {
	srv := &server{split: func(int, string, grpc.ServerStream) error { return unavailable }}
	cc, _ := streamConn(t, srv, retry.Constant(time.Second).Take(5),
		retrygrpc.Methods(func(m string) bool { return m != splitMethod }))
	if _, err := download(t.Context(), cc, "x"); status.Code(err) != codes.Unavailable {
		t.Errorf("error %v", err)
	}
	if n := len(srv.seen()); n != 1 {
		t.Errorf("%d calls, want 1", n)
	}
}

// blockingClock is a Clock whose Sleep waits until its context ends: a wait
// that only the caller's cancellation can end.
type blockingClock struct{}

func (blockingClock) Now() time.Time { return t0 }
func (blockingClock) Sleep(ctx context.Context, _ time.Duration) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestStreamCancelDuringWait checks that a call cancelled while it waits
// between attempts ends at once with Canceled, the interceptor's goroutine
// with it (TestMain's goleak checks that).
func TestStreamCancelDuringWait(t *testing.T) {
	srv := &server{split: func(int, string, grpc.ServerStream) error { return unavailable }}
	waiting := make(chan struct{})
	cc := start(t, srv, grpc.WithStreamInterceptor(retrygrpc.StreamClientInterceptor(retry.Constant(time.Hour),
		retrygrpc.With(retry.WithClock(blockingClock{}), retry.OnRetry(func(retry.Attempt) { close(waiting) })))))
	ctx, cancel := context.WithCancel(t.Context())
	cs, err := cc.NewStream(ctx, splitDesc, splitMethod)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.SendMsg(str("x")); err != nil {
		t.Fatal(err)
	}
	<-waiting
	cancel()
	_, err = recvAll(cs)
	if status.Code(err) != codes.Canceled || !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want Canceled", err)
	}
	if n := len(srv.seen()); n != 1 {
		t.Errorf("%d calls, want 1", n)
	}
}
