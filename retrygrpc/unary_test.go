package retrygrpc_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
)

// unavailable is the status of a server that is down.
var unavailable = status.Error(codes.Unavailable, "down")

// failing returns a Check script that fails the first n calls with err and
// then succeeds.
func failing(n int, err error) func(int, context.Context) (*healthpb.HealthCheckResponse, error) {
	return func(call int, _ context.Context) (*healthpb.HealthCheckResponse, error) {
		if call <= n {
			return nil, err
		}
		return serving()
	}
}

// pushingBack returns a Check script whose n-th call fails with Unavailable
// and the trailer PushbackKey: values[n-1] (none if it is ""), and whose
// calls beyond the values succeed.
func pushingBack(values ...string) func(int, context.Context) (*healthpb.HealthCheckResponse, error) {
	return func(call int, ctx context.Context) (*healthpb.HealthCheckResponse, error) {
		if call > len(values) {
			return serving()
		}
		if v := values[call-1]; v != "" {
			_ = grpc.SetTrailer(ctx, metadata.Pairs(retrygrpc.PushbackKey, v))
		}
		return nil, unavailable
	}
}

// unaryConn starts s and dials it with a unary interceptor on s and opts,
// on a fake clock that it returns.
func unaryConn(t *testing.T, srv *server, s retry.Schedule, opts ...retrygrpc.Option) (*grpc.ClientConn, *retry.FakeClock) {
	clock := retry.NewFakeClock(t0)
	opts = append([]retrygrpc.Option{retrygrpc.With(retry.WithClock(clock))}, opts...)
	return start(t, srv, grpc.WithUnaryInterceptor(retrygrpc.UnaryClientInterceptor(s, opts...))), clock
}

func TestUnaryRetriesUnavailable(t *testing.T) {
	srv := &server{check: failing(2, unavailable)}
	cc, clock := unaryConn(t, srv, retry.Exponential(time.Second).Take(5))
	resp, err := check(t.Context(), cc)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("status %v", resp.Status)
	}
	if got, want := srv.seen(), []string{"", "1", "2"}; !slices.Equal(got, want) {
		t.Errorf("grpc-previous-rpc-attempts: got %q, want %q", got, want)
	}
	if got, want := clock.Sleeps(), []time.Duration{time.Second, 2 * time.Second}; !slices.Equal(got, want) {
		t.Errorf("waits %v, want %v", got, want)
	}
}

func TestUnaryNotRetried(t *testing.T) {
	for _, code := range []codes.Code{codes.InvalidArgument, codes.NotFound, codes.Internal, codes.Unknown,
		codes.DeadlineExceeded, codes.Canceled, codes.ResourceExhausted, codes.Aborted} {
		t.Run(code.String(), func(t *testing.T) {
			want := status.Error(code, "no")
			srv := &server{check: failing(1, want)}
			cc, clock := unaryConn(t, srv, retry.Constant(time.Second).Take(5))
			_, err := check(t.Context(), cc)
			if st := status.Convert(err); st.Code() != code || st.Message() != "no" {
				t.Errorf("error %v, want %v", err, want)
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
	}
}

func TestUnaryCodes(t *testing.T) {
	opt := retrygrpc.Codes(codes.ResourceExhausted, codes.Aborted)
	t.Run("listed", func(t *testing.T) {
		srv := &server{check: failing(1, status.Error(codes.Aborted, "conflict"))}
		cc, _ := unaryConn(t, srv, retry.Constant(time.Second).Take(5), opt)
		if _, err := check(t.Context(), cc); err != nil {
			t.Fatal(err)
		}
		if n := len(srv.seen()); n != 2 {
			t.Errorf("%d calls, want 2", n)
		}
	})
	t.Run("Unavailable no longer", func(t *testing.T) {
		srv := &server{check: failing(1, unavailable)}
		cc, _ := unaryConn(t, srv, retry.Constant(time.Second).Take(5), opt)
		if _, err := check(t.Context(), cc); status.Code(err) != codes.Unavailable {
			t.Fatalf("error %v", err)
		}
		if n := len(srv.seen()); n != 1 {
			t.Errorf("%d calls, want 1", n)
		}
	})
	t.Run("none", func(t *testing.T) {
		srv := &server{check: failing(1, unavailable)}
		cc, _ := unaryConn(t, srv, retry.Constant(time.Second).Take(5), retrygrpc.Codes())
		if _, err := check(t.Context(), cc); status.Code(err) != codes.Unavailable {
			t.Fatalf("error %v", err)
		}
		if n := len(srv.seen()); n != 1 {
			t.Errorf("%d calls, want 1", n)
		}
	})
}

func TestUnaryExhausted(t *testing.T) {
	srv := &server{check: failing(10, unavailable)}
	cc, clock := unaryConn(t, srv, retry.Constant(time.Second).Take(2))
	_, err := check(t.Context(), cc)
	if !errors.Is(err, retry.ErrExhausted) {
		t.Errorf("error %v does not match ErrExhausted", err)
	}
	var re *retry.Error
	if !errors.As(err, &re) || re.Attempts != 3 {
		t.Fatalf("error %v: want a *retry.Error of 3 attempts", err)
	}
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable || st.Message() != "down" {
		t.Errorf("status %v, %v: want the last attempt's", st, ok)
	}
	if n := len(srv.seen()); n != 3 {
		t.Errorf("%d calls, want 3", n)
	}
	if got := clock.Sleeps(); len(got) != 2 {
		t.Errorf("waits %v", got)
	}
}

func TestUnaryPushback(t *testing.T) {
	t.Run("honoured", func(t *testing.T) {
		// 2.5 s is longer than the schedule's 1 s; "0" leaves the
		// schedule's delay; 60 s is MaxPushback exactly.
		srv := &server{check: pushingBack("2500", "0", "60000")}
		cc, clock := unaryConn(t, srv, retry.Constant(time.Second).Take(5),
			retrygrpc.With(retry.MaxPushback(time.Minute)))
		if _, err := check(t.Context(), cc); err != nil {
			t.Fatal(err)
		}
		want := []time.Duration{2500 * time.Millisecond, time.Second, time.Minute}
		if got := clock.Sleeps(); !slices.Equal(got, want) {
			t.Errorf("waits %v, want %v", got, want)
		}
	})
	t.Run("longer than MaxPushback ends the call", func(t *testing.T) {
		srv := &server{check: pushingBack("90000")}
		cc, clock := unaryConn(t, srv, retry.Constant(time.Second).Take(5),
			retrygrpc.With(retry.MaxPushback(time.Minute)))
		_, err := check(t.Context(), cc)
		if !errors.Is(err, retry.ErrPushbackTooLong) {
			t.Fatalf("error %v: want ErrPushbackTooLong", err)
		}
		if st, _ := status.FromError(err); st.Code() != codes.Unavailable {
			t.Errorf("status %v: want the server's", st)
		}
		if n := len(srv.seen()); n != 1 {
			t.Errorf("%d calls, want 1", n)
		}
		if got := clock.Sleeps(); len(got) != 0 {
			t.Errorf("waits %v, want none", got)
		}
	})
	for _, v := range []string{"-1", "-0", "abc", "1.5", " 5", "+5", "0x10", "５"} {
		t.Run("refused "+v, func(t *testing.T) {
			srv := &server{check: pushingBack(v)}
			cc, clock := unaryConn(t, srv, retry.Constant(time.Second).Take(5))
			_, err := check(t.Context(), cc)
			if status.Code(err) != codes.Unavailable {
				t.Fatalf("error %v", err)
			}
			var re *retry.Error
			if errors.As(err, &re) {
				t.Errorf("error %v is a *retry.Error: the call was not retried", err)
			}
			if n := len(srv.seen()); n != 1 {
				t.Errorf("%d calls, want 1", n)
			}
			if len(clock.Sleeps()) != 0 {
				t.Errorf("waited %v", clock.Sleeps())
			}
		})
	}
	t.Run("refused, several values", func(t *testing.T) {
		srv := &server{check: func(int, context.Context) (*healthpb.HealthCheckResponse, error) {
			_ = grpc.SetTrailer(context.Background(), nil)
			return nil, unavailable
		}}
		srv.check = func(_ int, ctx context.Context) (*healthpb.HealthCheckResponse, error) {
			_ = grpc.SetTrailer(ctx, metadata.Pairs(retrygrpc.PushbackKey, "10", retrygrpc.PushbackKey, "20"))
			return nil, unavailable
		}
		cc, _ := unaryConn(t, srv, retry.Constant(time.Second).Take(5))
		if _, err := check(t.Context(), cc); status.Code(err) != codes.Unavailable {
			t.Fatalf("error %v", err)
		}
		if n := len(srv.seen()); n != 1 {
			t.Errorf("%d calls, want 1", n)
		}
	})
	t.Run("on a code not retried", func(t *testing.T) {
		srv := &server{check: func(_ int, ctx context.Context) (*healthpb.HealthCheckResponse, error) {
			_ = grpc.SetTrailer(ctx, metadata.Pairs(retrygrpc.PushbackKey, "10"))
			return nil, status.Error(codes.InvalidArgument, "bad")
		}}
		cc, _ := unaryConn(t, srv, retry.Constant(time.Second).Take(5))
		if _, err := check(t.Context(), cc); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("error %v", err)
		}
		if n := len(srv.seen()); n != 1 {
			t.Errorf("%d calls, want 1", n)
		}
	})
}

// TestUnaryDeadline checks that no wait starts that would end after the
// call's deadline, whether the schedule or the server asks for it.
func TestUnaryDeadline(t *testing.T) {
	for name, tc := range map[string]struct {
		s      retry.Schedule
		script func(int, context.Context) (*healthpb.HealthCheckResponse, error)
	}{
		"schedule": {retry.Constant(time.Minute), failing(10, unavailable)},
		"pushback": {retry.Constant(time.Millisecond), pushingBack("60000")},
	} {
		t.Run(name, func(t *testing.T) {
			srv := &server{check: tc.script}
			cc, clock := unaryConn(t, srv, tc.s)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			_, err := check(ctx, cc)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %v does not match DeadlineExceeded", err)
			}
			if status.Code(err) != codes.Unavailable {
				t.Errorf("code %v: want the last attempt's, since the deadline has not passed", status.Code(err))
			}
			if n := len(srv.seen()); n != 1 {
				t.Errorf("%d calls, want 1", n)
			}
			if len(clock.Sleeps()) != 0 {
				t.Errorf("waited %v", clock.Sleeps())
			}
		})
	}
	t.Run("attempt deadline within the call's", func(t *testing.T) {
		// An interceptor below ours records the deadline each attempt is
		// sent with.
		var deadlines []time.Time
		record := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			d, _ := ctx.Deadline()
			deadlines = append(deadlines, d)
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		srv := &server{check: failing(1, unavailable)}
		cc := start(t, srv, grpc.WithChainUnaryInterceptor(
			retrygrpc.UnaryClientInterceptor(retry.Constant(0), retrygrpc.With(retry.AttemptTimeout(time.Hour))),
			record))
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		want, _ := ctx.Deadline()
		if _, err := check(ctx, cc); err != nil {
			t.Fatal(err)
		}
		if len(deadlines) != 2 {
			t.Fatalf("%d attempts, want 2", len(deadlines))
		}
		for i, d := range deadlines {
			if !d.Equal(want) {
				t.Errorf("attempt %d: deadline %v, want the call's %v", i+1, d, want)
			}
		}
	})
}

// TestUnaryCallerCancel checks that the caller's own cancellation is never
// retried and is reported with its own code.
func TestUnaryCallerCancel(t *testing.T) {
	t.Run("during an attempt", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		srv := &server{check: func(_ int, sctx context.Context) (*healthpb.HealthCheckResponse, error) {
			cancel()
			<-sctx.Done()
			return nil, unavailable
		}}
		cc, clock := unaryConn(t, srv, retry.Constant(time.Second), retrygrpc.Codes(codes.Unavailable, codes.Canceled))
		_, err := check(ctx, cc)
		if status.Code(err) != codes.Canceled {
			t.Errorf("error %v, want Canceled", err)
		}
		if n := len(srv.seen()); n != 1 {
			t.Errorf("%d calls, want 1", n)
		}
		if len(clock.Sleeps()) != 0 {
			t.Errorf("waited %v", clock.Sleeps())
		}
	})
	t.Run("during a wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		srv := &server{check: failing(10, unavailable)}
		cc, _ := unaryConn(t, srv, retry.Constant(time.Second),
			retrygrpc.With(retry.OnRetry(func(retry.Attempt) { cancel() })))
		_, err := check(ctx, cc)
		if status.Code(err) != codes.Canceled || !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want Canceled", err)
		}
		var re *retry.Error
		if !errors.As(err, &re) || status.Code(re.Last) != codes.Unavailable {
			t.Errorf("error %v: want a *retry.Error with the last attempt's status", err)
		}
		if n := len(srv.seen()); n != 1 {
			t.Errorf("%d calls, want 1", n)
		}
	})
	t.Run("before the call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		srv := &server{check: failing(0, nil)}
		cc, _ := unaryConn(t, srv, retry.Constant(time.Second))
		if _, err := check(ctx, cc); status.Code(err) != codes.Canceled {
			t.Errorf("error %v, want Canceled", err)
		}
		if n := len(srv.seen()); n != 0 {
			t.Errorf("%d calls, want 0", n)
		}
	})
}

// TestUnaryMethods checks that an excluded method is sent once and never
// touches the budget.
func TestUnaryMethods(t *testing.T) {
	budget := retry.NewBudget(0, 1)
	srv := &server{check: failing(1, unavailable)}
	cc, _ := unaryConn(t, srv, retry.Constant(time.Second).Take(5),
		retrygrpc.With(retry.WithBudget(budget)),
		retrygrpc.Methods(func(m string) bool { return m != checkMethod }))
	if _, err := check(t.Context(), cc); status.Code(err) != codes.Unavailable {
		t.Fatalf("error %v", err)
	}
	if n := len(srv.seen()); n != 1 {
		t.Errorf("%d calls, want 1", n)
	}
	// The budget's single token is still there for an included method.
	srv2 := &server{check: failing(1, unavailable)}
	cc2, _ := unaryConn(t, srv2, retry.Constant(time.Second).Take(5), retrygrpc.With(retry.WithBudget(budget)))
	if _, err := check(t.Context(), cc2); err != nil {
		t.Fatal(err)
	}
}

func TestUnaryBudget(t *testing.T) {
	budget := retry.NewBudget(0, 1)
	srv := &server{check: failing(10, unavailable)}
	cc, _ := unaryConn(t, srv, retry.Constant(time.Second).Take(5), retrygrpc.With(retry.WithBudget(budget)))
	_, err := check(t.Context(), cc)
	if !errors.Is(err, retry.ErrBudgetExhausted) || status.Code(err) != codes.Unavailable {
		t.Errorf("error %v, want ErrBudgetExhausted and Unavailable", err)
	}
	if n := len(srv.seen()); n != 2 {
		t.Errorf("%d calls, want 2: the first attempt and one retry", n)
	}
	_, err = check(t.Context(), cc)
	if !errors.Is(err, retry.ErrBudgetExhausted) {
		t.Errorf("error %v, want ErrBudgetExhausted", err)
	}
	if n := len(srv.seen()); n != 3 {
		t.Errorf("%d calls, want 3: no retry left", n)
	}
}

func TestUnaryIfAndOnRetry(t *testing.T) {
	var hooks []string
	srv := &server{check: failing(10, unavailable)}
	cc, _ := unaryConn(t, srv, retry.Constant(time.Second).Take(5),
		retrygrpc.With(
			retry.If(func(err error) bool { return len(hooks) < 2 }),
			retry.OnRetry(func(a retry.Attempt) { hooks = append(hooks, status.Convert(a.Err).Message()) })))
	_, err := check(t.Context(), cc)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("error %v", err)
	}
	if n := len(srv.seen()); n != 3 {
		t.Errorf("%d calls, want 3", n)
	}
	if want := []string{"down", "down"}; !slices.Equal(hooks, want) {
		t.Errorf("hooks saw %q, want %q", hooks, want)
	}
}

// TestUnaryCoreOptions checks that options added to the core since work
// through With: MaxElapsed gives up on the call's clock, OnDone reports the
// call once.
func TestUnaryCoreOptions(t *testing.T) {
	var outcomes []retry.Outcome
	srv := &server{check: failing(10, unavailable)}
	cc, clock := unaryConn(t, srv, retry.Constant(time.Second),
		retrygrpc.With(retry.MaxElapsed(2500*time.Millisecond), retry.OnDone(func(o retry.Outcome) { outcomes = append(outcomes, o) })))
	_, err := check(t.Context(), cc)
	if !errors.Is(err, retry.ErrMaxElapsed) || status.Code(err) != codes.Unavailable {
		t.Errorf("error %v, want ErrMaxElapsed and Unavailable", err)
	}
	if n := len(srv.seen()); n != 3 {
		t.Errorf("%d calls, want 3", n)
	}
	if got := clock.Sleeps(); len(got) != 2 {
		t.Errorf("waits %v", got)
	}
	if len(outcomes) != 1 || outcomes[0].Attempts != 3 || !errors.Is(outcomes[0].Reason, retry.ErrMaxElapsed) {
		t.Errorf("OnDone saw %+v", outcomes)
	}
}

// TestUnaryHeaderAndTrailer checks that the caller's grpc.Header and
// grpc.Trailer see the last attempt's metadata.
func TestUnaryHeaderAndTrailer(t *testing.T) {
	srv := &server{check: func(n int, ctx context.Context) (*healthpb.HealthCheckResponse, error) {
		_ = grpc.SetTrailer(ctx, metadata.Pairs("attempt", string(rune('0'+n))))
		if n == 1 {
			return nil, unavailable
		}
		return serving()
	}}
	cc, _ := unaryConn(t, srv, retry.Constant(time.Second).Take(5))
	var trailer metadata.MD
	if _, err := check(t.Context(), cc, grpc.Trailer(&trailer)); err != nil {
		t.Fatal(err)
	}
	if got := trailer.Get("attempt"); !slices.Equal(got, []string{"2"}) {
		t.Errorf("trailer %v, want the second attempt's", trailer)
	}
}

// TestUnaryAttemptTimeout uses a fake invoker: the first attempt hangs
// until its own deadline, the second succeeds at once, so no timing can
// make the test fail.
func TestUnaryAttemptTimeout(t *testing.T) {
	ic := retrygrpc.UnaryClientInterceptor(retry.Constant(0).Take(3), retrygrpc.With(retry.AttemptTimeout(time.Millisecond)))
	n := 0
	invoker := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
		n++
		if n == 1 {
			<-ctx.Done()
			return status.FromContextError(ctx.Err()).Err()
		}
		return nil
	}
	if err := ic(t.Context(), checkMethod, nil, nil, nil, invoker); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("%d attempts, want 2", n)
	}
}

// TestUnaryReplayLimit checks that a unary request larger than ReplayLimit
// is sent once, its failure returned as it is, while one that fits (to the
// byte) is retried; and that a request the interceptor cannot measure is
// retried as before.
func TestUnaryReplayLimit(t *testing.T) {
	req := &healthpb.HealthCheckRequest{Service: strings.Repeat("x", 100)}
	size := proto.Size(req)
	for _, tt := range []struct {
		name     string
		req      any
		limit    retrygrpc.Option
		attempts int
	}{
		{"larger than the limit", req, retrygrpc.ReplayLimit(size - 1), 1},
		{"as large as the limit", req, retrygrpc.ReplayLimit(size), 2},
		{"the default limit", req, retrygrpc.Option{}, 2},
		{"a limit of 0", req, retrygrpc.ReplayLimit(0), 1},
		{"an empty request, limit 0", &healthpb.HealthCheckRequest{}, retrygrpc.ReplayLimit(0), 2},
		{"a request the codec refuses", "not a message", retrygrpc.ReplayLimit(0), 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ic := retrygrpc.UnaryClientInterceptor(retry.Constant(0).Take(3), tt.limit)
			n := 0
			invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
				if n++; n == 1 {
					return unavailable
				}
				return nil
			}
			err := ic(t.Context(), checkMethod, tt.req, nil, nil, invoker)
			if n != tt.attempts {
				t.Errorf("%d attempts, want %d", n, tt.attempts)
			}
			if tt.attempts == 1 && err != unavailable {
				t.Errorf("error %v, want the attempt's, as it is", err)
			}
			if tt.attempts > 1 && err != nil {
				t.Errorf("error %v, want success", err)
			}
		})
	}
}

// TestUnaryAllocs checks that a call that succeeds at once allocates one
// object in the interceptor and no more: the call options with
// grpc.Trailer that it hands to gRPC, made afresh for each attempt because
// gRPC may read them after the invoker returned (see extra in unary.go).
// Everything else is recycled or on the stack, also the options of a
// target with a Throttle, Breaker and Limiter of its own.
func TestUnaryAllocs(t *testing.T) {
	budget := retrygrpc.With(retry.WithBudget(retry.NewBudget(0.1, 10)))
	for _, tt := range []struct {
		name string
		opts []retrygrpc.Option
	}{
		{"a Budget", []retrygrpc.Option{budget}},
		{"a Throttle, Breaker and Limiter per target", []retrygrpc.Option{budget,
			retrygrpc.Throttle(func(string) *retry.Throttle { return retry.NewThrottle() }),
			retrygrpc.Breaker(func(string) *retry.Breaker { return retry.NewBreaker() }),
			retrygrpc.Limiter(func(string) *retry.Limiter { return retry.NewLimiter() })}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ic := retrygrpc.UnaryClientInterceptor(retry.Constant(time.Second).Take(3), tt.opts...)
			invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
			ctx := t.Context()
			if n := testing.AllocsPerRun(1000, func() {
				if err := ic(ctx, checkMethod, nil, nil, nil, invoker); err != nil {
					t.Fatal(err)
				}
			}); n != 1 {
				t.Errorf("%v allocations per successful call, want 1", n)
			}
		})
	}
}

// TestUnaryOptionsNotShared checks that the call options an attempt hands
// to gRPC belong to that attempt alone: a lower layer that keeps them past
// the call (as gRPC's own cleanup can, on another goroutine) never sees
// them change.
func TestUnaryOptionsNotShared(t *testing.T) {
	ic := retrygrpc.UnaryClientInterceptor(retry.Constant(0).Take(3))
	var kept [][]grpc.CallOption
	var copies [][]grpc.CallOption
	invoker := func(_ context.Context, _ string, _, _ any, _ *grpc.ClientConn, opts ...grpc.CallOption) error {
		kept = append(kept, opts)
		copies = append(copies, slices.Clone(opts))
		if len(kept)%2 == 1 {
			return unavailable
		}
		return nil
	}
	for i := range 50 {
		opt := grpc.MaxCallRecvMsgSize(i + 1)
		if err := ic(t.Context(), checkMethod, nil, nil, nil, invoker, opt); err != nil {
			t.Fatal(err)
		}
	}
	for i := range kept {
		if !slices.Equal(kept[i], copies[i]) {
			t.Fatalf("attempt %d: the options it was given changed after it returned", i+1)
		}
	}
}

func TestConstructionPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"nil unary schedule":  func() { retrygrpc.UnaryClientInterceptor(nil) },
		"nil stream schedule": func() { retrygrpc.StreamClientInterceptor(nil) },
		"Codes(OK)":           func() { retrygrpc.Codes(codes.OK) },
		"Codes(99)":           func() { retrygrpc.Codes(99) },
		"nil Methods":         func() { retrygrpc.Methods(nil) },
		"negative limit":      func() { retrygrpc.ReplayLimit(-1) },
		"IfValue":             func() { retrygrpc.With(retry.IfValue(func(any) bool { return true })) },
		"nil hedge schedule":  func() { retrygrpc.HedgeUnaryClientInterceptor(nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				if s, ok := r.(string); !ok || len(s) < 11 || s[:11] != "retrygrpc: " {
					t.Errorf("panic %v, want a retrygrpc: message", r)
				}
			}()
			f()
		})
	}
}
