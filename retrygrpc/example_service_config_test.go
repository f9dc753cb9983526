package retrygrpc_test

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
)

// A service config, as a name resolver or grpc.WithDefaultServiceConfig
// gives it, drives the interceptor: the health service's calls are retried
// up to 4 attempts on UNAVAILABLE, with A6's random backoff (at most 0.1 s,
// then 0.2 s, …). grpc-go gets the same config for the rest of it, with its
// own retries disabled. The fake clock makes the waits instant; leave it
// out in real code.
func ExampleParseServiceConfig() {
	const serviceConfig = `{
	  "methodConfig": [{
	    "name": [{"service": "grpc.health.v1.Health"}],
	    "retryPolicy": {
	      "maxAttempts": 4,
	      "initialBackoff": "0.1s",
	      "maxBackoff": "1s",
	      "backoffMultiplier": 2,
	      "retryableStatusCodes": ["UNAVAILABLE"]
	    }
	  }],
	  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
	}`
	sc, err := retrygrpc.ParseServiceConfig(serviceConfig)
	if err != nil {
		panic(err)
	}
	addr, stop := serve(&flakyHealth{})
	defer stop()

	clock := retry.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(serviceConfig),
		grpc.WithDisableRetry(), // one retry layer, not two
		grpc.WithUnaryInterceptor(sc.UnaryClientInterceptor(retrygrpc.With(
			retry.WithClock(clock),
			retry.OnRetry(func(a retry.Attempt) {
				bound := 100 * time.Millisecond << (a.Number - 1)
				fmt.Printf("attempt %d: %s; retrying within %v: %v\n",
					a.Number, status.Convert(a.Err).Message(), bound, a.Delay <= bound)
			})))))
	if err != nil {
		panic(err)
	}
	defer conn.Close()

	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Status)
	// Output:
	// attempt 1: warming up (call 1); retrying within 100ms: true
	// attempt 2: warming up (call 2); retrying within 200ms: true
	// SERVING
}

// An invalid config is refused with grpc-go's message.
func ExampleParseServiceConfig_invalid() {
	_, err := retrygrpc.ParseServiceConfig(`{"methodConfig": [{"name": [{"service": "foo"}],
	  "retryPolicy": {"maxAttempts": 2, "initialBackoff": "0s", "maxBackoff": "1s", "backoffMultiplier": 2,
	  "retryableStatusCodes": ["UNAVAILABLE"]}}]}`)
	fmt.Printf("%q\n", err) // quoted: grpc-go's message ends with ": "
	_, err = retrygrpc.ParseServiceConfig(`{"retryThrottling": {"maxTokens": 2000, "tokenRatio": 0.1}}`)
	fmt.Println(err)
	// Output:
	// "invalid retry policy (&{MaxAttempts:2 InitialBackoff:0s MaxBackoff:1s BackoffMultiplier:2 RetryableStatusCodes:[Unavailable]}): "
	// invalid retry throttling config: maxTokens (2000) out of range (0, 1000]
}

// The schedule and options of one method, for a hand-built interceptor.
func ExampleServiceConfig_MethodPolicy() {
	sc, err := retrygrpc.ParseServiceConfig(`{"methodConfig": [
	  {"name": [{"service": "shop.Cart", "method": "Get"}],
	   "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.05s", "nonFatalStatusCodes": ["UNAVAILABLE"]}},
	  {"name": [{"service": "shop.Cart"}],
	   "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2,
	                   "retryableStatusCodes": ["UNAVAILABLE"]}}]}`)
	if err != nil {
		panic(err)
	}
	for _, m := range []string{"/shop.Cart/Get", "/shop.Cart/Put", "/shop.Orders/List"} {
		s, _, hedging, ok := sc.MethodPolicy(m)
		n := 0
		if ok {
			for range s {
				n++
			}
		}
		fmt.Printf("%s: policy %v, hedging %v, %d delays\n", m, ok, hedging, n)
	}
	// Output:
	// /shop.Cart/Get: policy true, hedging true, 2 delays
	// /shop.Cart/Put: policy true, hedging false, 2 delays
	// /shop.Orders/List: policy false, hedging false, 0 delays
}
