package retryhttp_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryhttp"
)

// A client that stops calling a host that is down: one Breaker per host,
// which two failed attempts open for a minute. While it is open, requests
// to that host fail at once with an error matching retry.ErrBreakerOpen, and
// nothing is sent; requests to other hosts go on. A Throttle per host is
// set the same way, through Transport.Throttle.
func ExamplePerHost() {
	var sent atomic.Int32
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer down.Close()

	clock := retry.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	transport := retryhttp.NewTransport(nil, retry.Constant(time.Second).Take(3), retry.WithClock(clock))
	transport.Breaker = retryhttp.PerHost(func(host string) *retry.Breaker {
		return retry.NewBreaker(retry.BreakerMinCalls(2), retry.BreakerOpenPeriods(retry.Constant(time.Minute)),
			retry.BreakerClock(clock))
	})
	client := &http.Client{Transport: transport}
	defer client.CloseIdleConnections()

	for range 3 {
		resp, err := client.Get(down.URL)
		switch {
		case errors.Is(err, retry.ErrBreakerOpen):
			fmt.Println("breaker open: not sent")
		case err != nil:
			fmt.Println(err)
		default:
			resp.Body.Close()
			fmt.Println(resp.Status)
		}
	}
	fmt.Println("requests sent:", sent.Load())
	// Output:
	// 503 Service Unavailable
	// breaker open: not sent
	// breaker open: not sent
	// requests sent: 2
}
