package retrygrpc_test

import (
	"context"
	"errors"
	"slices"
	"sync"
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
	"github.com/seed-b8c8f69d/retry/retryserver"
)

// startShed is start with the server half: both of sh's interceptors on the
// server, and the given dial options on the client.
func startShed(tb testing.TB, s *server, sh *retryserver.Shedder, opts ...grpc.DialOption) *grpc.ClientConn {
	tb.Helper()
	return startServer(tb, s, []grpc.ServerOption{
		grpc.UnaryInterceptor(retrygrpc.UnaryServerInterceptor(sh)),
		grpc.StreamInterceptor(retrygrpc.StreamServerInterceptor(sh)),
	}, opts...)
}

// eventually polls cond every millisecond for up to 10 s, for what the
// server does on its own goroutines.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// holding returns a server whose first call of each kind waits for release,
// and a channel that says it has started.
func holding() (*server, chan struct{}, chan struct{}) {
	release, entered := make(chan struct{}), make(chan struct{}, 2)
	hold := func(n int) {
		if n == 1 {
			entered <- struct{}{}
			<-release
		}
	}
	return &server{
		check: func(n int, _ context.Context) (*healthpb.HealthCheckResponse, error) {
			hold(n)
			return serving()
		},
		split: func(n int, in string, ss grpc.ServerStream) error {
			hold(n)
			return splitting(n, in, ss)
		},
	}, release, entered
}

// TestServerInterceptorsEndToEnd: the client interceptors honour what the
// server interceptors send. One call at a time, no queue: while the first
// call holds the slot, the second is refused with a pushback, which the
// client waits (on a fake clock) before its retry, which says it is one and
// is served.
func TestServerInterceptorsEndToEnd(t *testing.T) {
	for _, kind := range []string{"unary", "stream"} {
		t.Run(kind, func(t *testing.T) {
			sh := retryserver.New(retryserver.Concurrency(1), retryserver.QueueLimit(0))
			srv, release, entered := holding()
			clock := retry.NewFakeClock(t0)
			var once sync.Once
			policy := retry.Constant(0).Take(2)
			opt := retrygrpc.With(retry.WithClock(clock), retry.OnRetry(func(retry.Attempt) {
				once.Do(func() {
					close(release)
					eventually(t, "the slot is free", func() bool { return sh.Stats().InFlight == 0 })
				})
			}))
			cc := startShed(t, srv, sh,
				grpc.WithUnaryInterceptor(retrygrpc.UnaryClientInterceptor(policy, opt)),
				grpc.WithStreamInterceptor(retrygrpc.StreamClientInterceptor(policy, opt)))
			call := func(ctx context.Context) error {
				if kind == "unary" {
					_, err := check(ctx, cc)
					return err
				}
				got, err := download(ctx, cc, "a,b")
				if err == nil && !slices.Equal(got, []string{"a", "b"}) {
					t.Errorf("received %q, want [a b]", got)
				}
				return err
			}
			holdDone := make(chan error, 1)
			go func() { holdDone <- call(context.Background()) }()
			<-entered
			if err := call(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := <-holdDone; err != nil {
				t.Fatal(err)
			}
			// No service time known yet: the drain time of one request is
			// Target, 5ms, jittered up to twice that.
			if got := clock.Sleeps(); len(got) != 1 || got[0] < 5*time.Millisecond || got[0] > 10*time.Millisecond {
				t.Errorf("the client waited %v, want one pushback in [5ms, 10ms]", got)
			}
			if got := srv.seen(); !slices.Equal(got, []string{"", "1"}) {
				t.Errorf("the handler saw calls with %s %q, want [\"\" \"1\"]: the refused attempt never reached it", retrygrpc.PreviousAttemptsKey, got)
			}
			if st := sh.Stats(); st.Refused != 1 || st.Admitted != 2 || st.InFlight != 0 {
				t.Errorf("Stats = %+v, want 1 refused, 2 admitted, none in flight", st)
			}
		})
	}
}

// TestServerInterceptorNotStarted: a call whose client cancels it while it
// waits, or whose deadline passes meanwhile, never reaches the handler.
func TestServerInterceptorNotStarted(t *testing.T) {
	sh := retryserver.New(retryserver.Concurrency(1), retryserver.Interval(time.Minute), retryserver.Target(time.Minute))
	srv, release, entered := holding()
	cc := startShed(t, srv, sh)
	holdDone := make(chan error, 1)
	go func() {
		_, err := check(context.Background(), cc)
		holdDone <- err
	}()
	<-entered

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := check(ctx, cc)
		done <- err
	}()
	eventually(t, "the call is queued", func() bool { return sh.Stats().Queued == 1 })
	cancel()
	if err := <-done; status.Code(err) != codes.Canceled {
		t.Errorf("cancelled call: %v, want Canceled", err)
	}
	eventually(t, "the server sees the call gone", func() bool { return sh.Stats().Gone == 1 })

	// A deadline long enough for the call to reach the server on a loaded
	// machine, which the test checks before it passes.
	dctx, dcancel := context.WithTimeout(context.Background(), time.Second)
	defer dcancel()
	go func() {
		_, err := check(dctx, cc)
		done <- err
	}()
	eventually(t, "the call is queued", func() bool { return sh.Stats().Queued == 1 })
	if err := <-done; status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("call whose deadline passed while queued: %v, want DeadlineExceeded", err)
	}
	eventually(t, "the server sees the deadline passed", func() bool { return sh.Stats().Gone == 2 })
	close(release)
	if err := <-holdDone; err != nil {
		t.Fatal(err)
	}
	if got := srv.seen(); len(got) != 1 {
		t.Errorf("the handler ran %d calls, want only the first", len(got))
	}
}

// trailerStream is a grpc.ServerTransportStream that records the trailer,
// for calling an interceptor without a network.
type trailerStream struct {
	mu      sync.Mutex
	trailer metadata.MD
}

func (*trailerStream) Method() string               { return checkMethod }
func (*trailerStream) SetHeader(metadata.MD) error  { return nil }
func (*trailerStream) SendHeader(metadata.MD) error { return nil }
func (s *trailerStream) SetTrailer(md metadata.MD) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trailer = metadata.Join(s.trailer, md)
	return nil
}

// TestServerInterceptorPushback checks the refusal's code and trailer in a
// synctest bubble, where the Shedder's windows are exact: a pushback first,
// then -1 once a whole window has refused half its calls.
func TestServerInterceptorPushback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sh := retryserver.New(retryserver.Concurrency(1), retryserver.QueueLimit(0), retryserver.Interval(100*time.Millisecond))
		in := retrygrpc.UnaryServerInterceptor(sh)
		info := &grpc.UnaryServerInfo{FullMethod: checkMethod}
		hold, entered := make(chan struct{}), make(chan struct{})
		go in(context.Background(), nil, info, func(context.Context, any) (any, error) {
			close(entered)
			<-hold
			return nil, nil
		})
		<-entered
		refuse := func() (metadata.MD, error) {
			ts := new(trailerStream)
			ctx := grpc.NewContextWithServerTransportStream(context.Background(), ts)
			_, err := in(ctx, nil, info, func(context.Context, any) (any, error) {
				t.Error("the handler of a refused call ran")
				return nil, nil
			})
			return ts.trailer, err
		}
		md, err := refuse()
		if v := md.Get(retrygrpc.PushbackKey); status.Code(err) != codes.Unavailable || len(v) != 1 || !slices.Contains([]string{"5", "6", "7", "8", "9", "10"}, v[0]) {
			t.Errorf("refusal: %v, trailer %v; want Unavailable with a pushback of 5 to 10 ms", err, md)
		}
		time.Sleep(100 * time.Millisecond)
		md, err = refuse()
		if v := md.Get(retrygrpc.PushbackKey); status.Code(err) != codes.Unavailable || !slices.Equal(v, []string{"-1"}) {
			t.Errorf("hard refusal: %v, trailer %v; want Unavailable with pushback -1", err, md)
		}
		close(hold)
		synctest.Wait()
	})
}

func TestServerInterceptorPanicReleases(t *testing.T) {
	sh := retryserver.New(retryserver.Concurrency(1))
	boom := errors.New("boom")
	func() {
		defer func() {
			if r := recover(); r != boom {
				t.Errorf("recovered %v, want the handler's panic unchanged", r)
			}
		}()
		retrygrpc.UnaryServerInterceptor(sh)(context.Background(), nil, &grpc.UnaryServerInfo{}, func(context.Context, any) (any, error) {
			panic(boom)
		})
	}()
	if st := sh.Stats(); st.InFlight != 0 || st.Admitted != 1 {
		t.Errorf("Stats = %+v, want the slot released", st)
	}
}

func TestServerInterceptorsPanicOnNil(t *testing.T) {
	for name, f := range map[string]func(){
		"unary":  func() { retrygrpc.UnaryServerInterceptor(nil) },
		"stream": func() { retrygrpc.StreamServerInterceptor(nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r, _ := recover().(string); r == "" {
					t.Error("no panic")
				}
			}()
			f()
		})
	}
}

// TestUnaryServerInterceptorAllocs checks that a first attempt admitted at
// once and served costs the interceptor no allocation.
func TestUnaryServerInterceptorAllocs(t *testing.T) {
	ic := retrygrpc.UnaryServerInterceptor(retryserver.New())
	ctx := metadata.NewIncomingContext(t.Context(), metadata.Pairs("user-agent", "test"))
	handler := func(context.Context, any) (any, error) { return nil, nil }
	info := &grpc.UnaryServerInfo{FullMethod: checkMethod}
	if n := testing.AllocsPerRun(1000, func() {
		if _, err := ic(ctx, nil, info, handler); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per call served, want 0", n)
	}
}
