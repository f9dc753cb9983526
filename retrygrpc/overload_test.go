package retrygrpc_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
)

// always returns a Check script that fails every call with code (OK:
// succeeds).
func always(code codes.Code) func(int, context.Context) (*healthpb.HealthCheckResponse, error) {
	return func(int, context.Context) (*healthpb.HealthCheckResponse, error) {
		if code == codes.OK {
			return serving()
		}
		return nil, status.Error(code, "scripted")
	}
}

func eq(t *testing.T, want, got any, msg string) {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		t.Errorf("%s: got %v, want %v", msg, got, want)
	}
}

func isErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("got %v, want an error matching %v", err, target)
	}
}

func TestBreakerPerTarget(t *testing.T) {
	clock := retry.NewFakeClock(t0)
	var targets []string
	newBreaker := func(target string) *retry.Breaker {
		targets = append(targets, target)
		return retry.NewBreaker(retry.BreakerMinCalls(2), retry.BreakerOpenPeriods(retry.Constant(time.Minute)), retry.BreakerClock(clock))
	}
	down := &server{check: always(codes.Unavailable)}
	up := &server{check: always(codes.OK)}
	icpt := retrygrpc.UnaryClientInterceptor(retry.Constant(time.Second).Take(3),
		retrygrpc.With(retry.WithClock(clock)), retrygrpc.Breaker(newBreaker))
	ccDown := start(t, down, grpc.WithUnaryInterceptor(icpt))
	ccUp := start(t, up, grpc.WithUnaryInterceptor(icpt))

	// The second failure opens the breaker: no wait for a third attempt.
	_, err := check(t.Context(), ccDown)
	isErr(t, err, retry.ErrBreakerOpen)
	eq(t, codes.Unavailable, status.Code(err), "code")
	eq(t, 2, len(down.seen()), "attempts sent")
	_, err = check(t.Context(), ccDown)
	isErr(t, err, retry.ErrBreakerOpen)
	eq(t, codes.Unavailable, status.Code(err), "code")
	eq(t, 2, len(down.seen()), "open: nothing sent")

	for range 2 {
		if _, err := check(t.Context(), ccUp); err != nil {
			t.Fatal("another target has its own breaker:", err)
		}
	}
	eq(t, []string{ccDown.Target(), ccUp.Target()}, targets, "made once per target")
}

// TestOverloadCodes pins what a target's answer is: Unavailable,
// DeadlineExceeded and ResourceExhausted are not, other codes are.
func TestOverloadCodes(t *testing.T) {
	for _, tt := range []struct {
		code  codes.Code
		opens bool
	}{
		{codes.OK, false},
		{codes.NotFound, false},
		{codes.InvalidArgument, false},
		{codes.PermissionDenied, false},
		{codes.Internal, false},
		{codes.Unavailable, true},
		{codes.DeadlineExceeded, true},
		{codes.ResourceExhausted, true},
	} {
		t.Run(tt.code.String(), func(t *testing.T) {
			b := retry.NewBreaker(retry.BreakerMinCalls(1), retry.BreakerRatio(1))
			srv := &server{check: always(tt.code)}
			cc := start(t, srv, grpc.WithUnaryInterceptor(retrygrpc.UnaryClientInterceptor(retry.Delays(),
				retrygrpc.Breaker(func(string) *retry.Breaker { return b }))))
			_, err := check(t.Context(), cc)
			eq(t, tt.code, status.Code(err), "the status as it is")
			eq(t, tt.opens, b.State() == retry.BreakerOpen, "opens")
			eq(t, 1, len(srv.seen()), "never retried")
		})
	}
}

func TestThrottlePerTarget(t *testing.T) {
	clock := retry.NewFakeClock(t0)
	th := retry.NewThrottle(retry.ThrottleClock(clock), retry.ThrottleRand(rand.NewPCG(1, 2)))
	srv := &server{check: always(codes.ResourceExhausted)}
	cc := start(t, srv, grpc.WithUnaryInterceptor(retrygrpc.UnaryClientInterceptor(retry.Delays(),
		retrygrpc.With(retry.WithClock(clock)), retrygrpc.Throttle(func(string) *retry.Throttle { return th }))))
	throttled := 0
	for range 50 {
		clock.Advance(50 * time.Millisecond) // the probability changes once per step of the window (5s/16)
		_, err := check(t.Context(), cc)
		if errors.Is(err, retry.ErrThrottled) {
			throttled++
			eq(t, codes.Unavailable, status.Code(err), "a throttled call's code")
		} else {
			eq(t, codes.ResourceExhausted, status.Code(err), "the server's code")
		}
	}
	eq(t, 50-throttled, len(srv.seen()), "calls sent")
	if throttled <= 35 {
		t.Errorf("%d calls throttled, want more than 35", throttled)
	}

	t.Run("hedging and streams", func(t *testing.T) {
		b := retry.NewBreaker(retry.BreakerMinCalls(1), retry.BreakerOpenPeriods(retry.Constant(time.Hour)))
		gate := retrygrpc.Breaker(func(string) *retry.Breaker { return b })
		srv := &server{check: always(codes.Unavailable)}
		cc := start(t, srv,
			grpc.WithUnaryInterceptor(retrygrpc.HedgeUnaryClientInterceptor(retry.Constant(time.Hour).Take(1), gate)),
			grpc.WithStreamInterceptor(retrygrpc.StreamClientInterceptor(retry.Delays(), gate)))
		_, err := check(t.Context(), cc)
		eq(t, codes.Unavailable, status.Code(err), "code")
		_, err = check(t.Context(), cc)
		isErr(t, err, retry.ErrBreakerOpen)
		_, err = cc.NewStream(t.Context(), splitDesc, splitMethod)
		isErr(t, err, retry.ErrBreakerOpen)
		eq(t, 1, len(srv.seen()), "calls sent")
	})
}

func TestOverloadOptionsPanic(t *testing.T) {
	for name, f := range map[string]func(){
		"retrygrpc: Throttle: nil function": func() { retrygrpc.Throttle(nil) },
		"retrygrpc: Breaker: nil function":  func() { retrygrpc.Breaker(nil) },
	} {
		func() {
			defer func() { eq(t, name, recover(), "panic") }()
			f()
		}()
	}
}

// TestGateOnePerTarget checks that one Throttle or Breaker Option makes one
// value per target, shared by every interceptor built from it: the unary,
// stream and hedging interceptors on two connections to one server.
func TestGateOnePerTarget(t *testing.T) {
	var made []string
	gate := retrygrpc.Breaker(func(target string) *retry.Breaker {
		made = append(made, "breaker "+target)
		return retry.NewBreaker(retry.BreakerMinCalls(1), retry.BreakerOpenPeriods(retry.Constant(time.Hour)))
	})
	throttle := retrygrpc.Throttle(func(target string) *retry.Throttle {
		made = append(made, "throttle "+target)
		return nil
	})
	srv := &server{check: always(codes.Unavailable)}
	cc := start(t, srv,
		grpc.WithUnaryInterceptor(retrygrpc.UnaryClientInterceptor(retry.Delays(), gate, throttle)),
		grpc.WithStreamInterceptor(retrygrpc.StreamClientInterceptor(retry.Delays(), gate, throttle)))
	hedged, err := grpc.NewClient(cc.Target(),
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDisableRetry(),
		grpc.WithUnaryInterceptor(retrygrpc.HedgeUnaryClientInterceptor(retry.Delays(), gate, throttle)))
	if err != nil {
		t.Fatal(err)
	}
	defer hedged.Close()

	// The unary call's failure opens the target's breaker, which the stream
	// and the hedged call then find open.
	_, err = check(t.Context(), cc)
	eq(t, codes.Unavailable, status.Code(err), "code")
	_, err = cc.NewStream(t.Context(), splitDesc, splitMethod)
	isErr(t, err, retry.ErrBreakerOpen)
	_, err = check(t.Context(), hedged)
	isErr(t, err, retry.ErrBreakerOpen)
	eq(t, 1, len(srv.seen()), "calls sent")
	eq(t, []string{"throttle " + cc.Target(), "breaker " + cc.Target()}, made, "made once per target")
}
