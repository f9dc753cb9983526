package retrygrpc_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
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

// TestHedgePushback: a non-fatal failure with a non-negative pushback sends
// the next attempt once the pushback has elapsed, bounded by MaxPushback,
// rather than at once (A6); with a FakeClock the wait is slept on it.
func TestHedgePushback(t *testing.T) {
	for name, tc := range map[string]struct {
		value string
		opts  []retry.Option
		want  time.Duration
	}{
		"wait":           {"2500", nil, 2500 * time.Millisecond},
		"default bound":  {"90000", nil, time.Minute},
		"MaxPushback":    {"2500", []retry.Option{retry.MaxPushback(time.Second)}, time.Second},
		"zero: at once":  {"0", nil, 0},
		"past the delay": {"7200000", []retry.Option{retry.MaxPushback(2 * time.Hour)}, 2 * time.Hour},
	} {
		t.Run(name, func(t *testing.T) {
			clock := retry.NewFakeClock(t0)
			srv := &server{check: pushingBack(tc.value)}
			cc := hedgeConn(t, srv, retry.Constant(time.Hour).Take(2),
				retrygrpc.With(append([]retry.Option{retry.WithClock(clock)}, tc.opts...)...))
			if _, err := check(t.Context(), cc); err != nil {
				t.Fatal(err)
			}
			if got, want := srv.seen(), []string{"", "1"}; !slices.Equal(got, want) {
				t.Errorf("grpc-previous-rpc-attempts: got %q, want %q", got, want)
			}
			var want []time.Duration
			if tc.want > 0 {
				want = []time.Duration{tc.want}
			}
			if got := clock.Sleeps(); !slices.Equal(got, want) {
				t.Errorf("waited %v, want %v", got, want)
			}
		})
	}
}

// TestHedgeRefusal: a hedge whose failure carries a negative pushback stops
// further hedges, but, as A6 says, does not cancel the first attempt, still
// running, whose success the caller gets. A fatal code with the same
// pushback still ends the call and cancels the first attempt. Run under
// testing/synctest with an invoker standing in for the network, so that the
// refusal is handled before the first attempt answers, and every hedge
// delay has elapsed by then.
func TestHedgeRefusal(t *testing.T) {
	for name, tc := range map[string]struct {
		hedgeErr error
		want     codes.Code // the call's; OK: the first attempt's success
	}{
		"non-fatal": {unavailable, codes.OK},
		"fatal":     {status.Error(codes.InvalidArgument, "bad"), codes.InvalidArgument},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				var calls atomic.Int32
				var cancelled atomic.Bool
				invoker := func(ctx context.Context, _ string, _, reply any, _ *grpc.ClientConn, opts ...grpc.CallOption) error {
					calls.Add(1)
					md, _ := metadata.FromOutgoingContext(ctx)
					if len(md.Get(retrygrpc.PreviousAttemptsKey)) > 0 {
						setTrailer(opts, metadata.Pairs(retrygrpc.PushbackKey, "-1"))
						return tc.hedgeErr
					}
					select {
					case <-release:
						return answer(opts, reply, &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING})
					case <-ctx.Done():
						cancelled.Store(true)
						return status.FromContextError(ctx.Err()).Err()
					}
				}
				hedge := retrygrpc.HedgeUnaryClientInterceptor(retry.Constant(time.Millisecond).Take(3))
				var resp healthpb.HealthCheckResponse
				done := make(chan error, 1)
				go func() {
					done <- hedge(t.Context(), checkMethod, &healthpb.HealthCheckRequest{}, &resp, nil, invoker)
				}()
				time.Sleep(time.Hour) // fake time: every hedge delay elapses
				synctest.Wait()
				if n := calls.Load(); n != 2 {
					t.Errorf("%d attempts, want 2: no hedge after the refusal", n)
				}
				var err error
				if tc.want == codes.OK {
					select {
					case err = <-done:
						t.Fatalf("the call ended with %v while its first attempt ran", err)
					default:
					}
					close(release)
					if err = <-done; err != nil {
						t.Fatal(err)
					}
					if resp.Status != healthpb.HealthCheckResponse_SERVING || cancelled.Load() {
						t.Errorf("response %v, first attempt cancelled %v: want the first attempt's success", resp.Status, cancelled.Load())
					}
					return
				}
				select {
				case err = <-done:
				default:
					close(release)
					t.Fatalf("the call did not end at the fatal code (%d attempts)", calls.Load())
				}
				if st := status.Convert(err); st.Code() != tc.want || st.Message() != "bad" {
					t.Errorf("error %v, want %v as it is", err, tc.want)
				}
				synctest.Wait()
				if !cancelled.Load() {
					t.Error("the first attempt was not cancelled")
				}
			})
		})
	}
}

// setTrailer hands md to the grpc.Trailer options among opts, as gRPC does
// when a call ends.
func setTrailer(opts []grpc.CallOption, md metadata.MD) {
	for _, o := range opts {
		if o, ok := o.(grpc.TrailerCallOption); ok {
			*o.TrailerAddr = md
		}
	}
}

// answer encodes resp with the codec forced among opts and decodes it into
// reply, as gRPC does with a response that arrives.
func answer(opts []grpc.CallOption, reply, resp any) error {
	var codec encoding.CodecV2
	for _, o := range opts {
		if o, ok := o.(grpc.ForceCodecV2CallOption); ok {
			codec = o.CodecV2
		}
	}
	data, err := codec.Marshal(resp)
	if err != nil {
		return err
	}
	return codec.Unmarshal(data, reply)
}
