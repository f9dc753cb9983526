package retrygrpc_test

import (
	"context"
	"io"
	"slices"
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

// fakeStream is a grpc.ClientStream whose every step a test controls, for
// the interleavings a real server cannot produce on demand.
type fakeStream struct {
	ctx context.Context

	mu         sync.Mutex
	sent       []string
	closed     bool
	ended      bool
	endErr     error // status after the end; nil for OK
	afterEnd   int   // SendMsg calls after the end
	headerGate chan struct{}
	end        chan struct{}
	sendAfter  chan struct{} // closed at the first SendMsg after the end
	sendGate   chan struct{} // if not nil, each SendMsg waits for a value
	msgs       chan string   // what RecvMsg receives before the end
}

func newFake(ctx context.Context) *fakeStream {
	return &fakeStream{ctx: ctx, headerGate: make(chan struct{}), end: make(chan struct{}), sendAfter: make(chan struct{}),
		msgs: make(chan string, 10)}
}

// fail ends the stream, trailers-only, with err.
func (f *fakeStream) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.ended {
		f.ended, f.endErr = true, err
		close(f.end)
	}
}

func (f *fakeStream) SendMsg(m any) error {
	if f.sendGate != nil {
		<-f.sendGate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		if f.afterEnd++; f.afterEnd == 1 {
			close(f.sendAfter)
		}
		return io.EOF
	}
	f.sent = append(f.sent, m.(*wrapperspb.StringValue).Value)
	return nil
}

func (f *fakeStream) CloseSend() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

// Header waits for the header gate, then reports no headers once the stream
// ended, or headers otherwise.
func (f *fakeStream) Header() (metadata.MD, error) {
	select {
	case <-f.headerGate:
	case <-f.ctx.Done():
		f.fail(status.FromContextError(f.ctx.Err()).Err())
	}
	<-f.end
	return nil, nil
}

func (f *fakeStream) RecvMsg(m any) error {
	select {
	case v := <-f.msgs:
		m.(*wrapperspb.StringValue).Value = v
		return nil
	case <-f.end:
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.endErr == nil {
		return io.EOF
	}
	return f.endErr
}

func (f *fakeStream) Trailer() metadata.MD     { return nil }
func (f *fakeStream) Context() context.Context { return f.ctx }
func (f *fakeStream) snapshot() ([]string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent), f.closed
}
func (f *fakeStream) headersNow(md metadata.MD) *committedStream { return &committedStream{f, md} }

// committedStream is a fakeStream whose headers arrive at once.
type committedStream struct {
	*fakeStream
	md metadata.MD
}

func (c *committedStream) Header() (metadata.MD, error) { return c.md, nil }

// streamer hands out the streams of make in order, recording how many.
type streamer struct {
	mu   sync.Mutex
	n    int
	make func(n int, ctx context.Context) (grpc.ClientStream, error)
	made []grpc.ClientStream
}

func (s *streamer) stream(ctx context.Context, _ *grpc.StreamDesc, _ *grpc.ClientConn, _ string, _ ...grpc.CallOption) (grpc.ClientStream, error) {
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	cs, err := s.make(n, ctx)
	if cs != nil {
		s.mu.Lock()
		s.made = append(s.made, cs)
		s.mu.Unlock()
	}
	return cs, err
}

func (s *streamer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// TestStreamSendAfterEnd checks the path where SendMsg finds the attempt
// already ended before anything else noticed: the message is kept, the
// call retried, and SendMsg returns nil as if nothing had happened.
func TestStreamSendAfterEnd(t *testing.T) {
	var f1, f2 *fakeStream
	s := &streamer{make: func(n int, ctx context.Context) (grpc.ClientStream, error) {
		if n == 1 {
			f1 = newFake(ctx)
			return f1, nil
		}
		f2 = newFake(ctx)
		close(f2.headerGate)
		return f2, nil
	}}
	ic := retrygrpc.StreamClientInterceptor(retry.Constant(0).Take(3))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cs, err := ic(ctx, collectDesc, nil, collectMethod, s.stream)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.SendMsg(str("a")); err != nil {
		t.Fatal(err)
	}
	f1.fail(unavailable)
	// Send "b" while the interceptor has not yet seen the failure (f1's
	// headers are held back), so SendMsg meets io.EOF.
	sent := make(chan error, 1)
	go func() { sent <- cs.SendMsg(str("b")) }()
	<-f1.sendAfter
	close(f1.headerGate)
	if err := <-sent; err != nil {
		t.Fatalf("SendMsg: %v, want nil: the call is retried", err)
	}
	if err := cs.SendMsg(str("c")); err != nil {
		t.Fatal(err)
	}
	if err := cs.CloseSend(); err != nil {
		t.Fatal(err)
	}
	got, closed := f2.snapshot()
	if want := []string{"a", "b", "c"}; !slices.Equal(got, want) || !closed {
		t.Errorf("second attempt got %q, closed %v; want %q, closed", got, closed, want)
	}
	// f2 ends with an OK status and no message: the call ends in io.EOF.
	f2.fail(nil)
	if err := cs.RecvMsg(new(wrapperspb.StringValue)); err != io.EOF {
		t.Errorf("RecvMsg: %v, want io.EOF", err)
	}
}

// TestStreamAttemptTimeout checks that an attempt that does not commit in
// time is abandoned (its context ends) and the call retried.
func TestStreamAttemptTimeout(t *testing.T) {
	var first *fakeStream
	s := &streamer{make: func(n int, ctx context.Context) (grpc.ClientStream, error) {
		f := newFake(ctx)
		if n == 1 {
			first = f // waits for headers until its context ends
			return f, nil
		}
		return f.headersNow(metadata.Pairs("k", "v")), nil
	}}
	ic := retrygrpc.StreamClientInterceptor(retry.Constant(0), retrygrpc.With(retry.AttemptTimeout(time.Millisecond)))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cs, err := ic(ctx, splitDesc, nil, splitMethod, s.stream)
	if err != nil {
		t.Fatal(err)
	}
	md, err := cs.Header()
	if err != nil || !slices.Equal(md.Get("k"), []string{"v"}) {
		t.Fatalf("Header: %v, %v", md, err)
	}
	if s.count() < 2 {
		t.Errorf("%d attempts, want at least 2", s.count())
	}
	if first.ctx.Err() == nil {
		t.Error("the abandoned attempt's context is still alive")
	}
	// The committed stream lives on after the attempt timeout.
	if c := cs.Context(); c.Err() != nil {
		t.Errorf("committed stream's context: %v", c.Err())
	}
}

// TestStreamOpenRetried checks that failures to open the stream are retried
// inside NewStream, and that one not retried is returned by it.
func TestStreamOpenRetried(t *testing.T) {
	t.Run("retried", func(t *testing.T) {
		s := &streamer{make: func(n int, ctx context.Context) (grpc.ClientStream, error) {
			if n <= 2 {
				return nil, unavailable
			}
			return newFake(ctx).headersNow(metadata.MD{}), nil
		}}
		clock := retry.NewFakeClock(t0)
		ic := retrygrpc.StreamClientInterceptor(retry.Constant(time.Second).Take(5), retrygrpc.With(retry.WithClock(clock)))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		if _, err := ic(ctx, splitDesc, nil, splitMethod, s.stream); err != nil {
			t.Fatal(err)
		}
		if n := s.count(); n != 3 {
			t.Errorf("%d attempts, want 3", n)
		}
		if got := clock.Sleeps(); len(got) != 2 {
			t.Errorf("waits %v", got)
		}
	})
	t.Run("not retried", func(t *testing.T) {
		want := status.Error(codes.PermissionDenied, "no")
		s := &streamer{make: func(int, context.Context) (grpc.ClientStream, error) { return nil, want }}
		ic := retrygrpc.StreamClientInterceptor(retry.Constant(time.Second).Take(5))
		if _, err := ic(t.Context(), splitDesc, nil, splitMethod, s.stream); err != want {
			t.Errorf("error %v, want %v as it is", err, want)
		}
		if n := s.count(); n != 1 {
			t.Errorf("%d attempts, want 1", n)
		}
	})
	t.Run("exhausted", func(t *testing.T) {
		s := &streamer{make: func(int, context.Context) (grpc.ClientStream, error) { return nil, unavailable }}
		ic := retrygrpc.StreamClientInterceptor(retry.Constant(0).Take(2))
		_, err := ic(t.Context(), splitDesc, nil, splitMethod, s.stream)
		if status.Code(err) != codes.Unavailable {
			t.Errorf("error %v", err)
		}
		if n := s.count(); n != 3 {
			t.Errorf("%d attempts, want 3", n)
		}
	})
}

// TestStreamCommitDuringReplay checks that a message that commits the call
// while the kept messages are being sent again does not disturb the replay:
// the next attempt still receives every message, in order.
func TestStreamCommitDuringReplay(t *testing.T) {
	var f1, f2 *fakeStream
	gate := make(chan struct{})
	s := &streamer{make: func(n int, ctx context.Context) (grpc.ClientStream, error) {
		if n == 1 {
			f1 = newFake(ctx)
			return f1, nil
		}
		f2 = newFake(ctx)
		f2.sendGate = gate
		return f2, nil
	}}
	ic := retrygrpc.StreamClientInterceptor(retry.Constant(0).Take(3))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cs, err := ic(ctx, chatDesc, nil, chatMethod, s.stream)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"a", "b", "c"} {
		if err := cs.SendMsg(str(m)); err != nil {
			t.Fatal(err)
		}
	}
	f1.fail(unavailable)
	close(f1.headerGate)
	// The second attempt's replay is stuck at its first message while a
	// response arrives on it and commits the call.
	gate <- struct{}{}
	f2.msgs <- "early"
	m := new(wrapperspb.StringValue)
	if err := cs.RecvMsg(m); err != nil || m.Value != "early" {
		t.Fatalf("RecvMsg: %q, %v", m.Value, err)
	}
	close(gate)
	if err := cs.SendMsg(str("d")); err != nil {
		t.Fatal(err)
	}
	if got, want := func() []string { g, _ := f2.snapshot(); return g }(), []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("second attempt got %q, want %q", got, want)
	}
	f2.fail(nil)
	close(f2.headerGate)
}
