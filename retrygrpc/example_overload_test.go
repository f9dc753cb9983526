package retrygrpc_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
)

// downHealth is a health server that is down.
type downHealth struct {
	healthpb.UnimplementedHealthServer
}

func (downHealth) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return nil, status.Error(codes.Unavailable, "down")
}

// A client that stops calling a target that is down: one Breaker per
// target, which two failed attempts open for a minute. A Throttle per
// target is set the same way, with retrygrpc.Throttle.
func ExampleBreaker() {
	addr, stop := serve(downHealth{})
	defer stop()

	clock := retry.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDisableRetry(),
		grpc.WithUnaryInterceptor(retrygrpc.UnaryClientInterceptor(retry.Constant(time.Second).Take(3),
			retrygrpc.With(retry.WithClock(clock)),
			retrygrpc.Breaker(func(target string) *retry.Breaker {
				fmt.Println("a breaker for", target == "passthrough:///"+addr)
				return retry.NewBreaker(retry.BreakerMinCalls(2), retry.BreakerOpenPeriods(retry.Constant(time.Minute)),
					retry.BreakerClock(clock))
			}))))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	for range 2 {
		_, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{})
		fmt.Println(status.Code(err), errors.Is(err, retry.ErrBreakerOpen))
	}
	// Output:
	// a breaker for true
	// Unavailable true
	// Unavailable true
}
