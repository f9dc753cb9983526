package retryhttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryhttp"
)

// balancer is a load balancer in front of two replicas: it sends the first
// copy of each request to one and every later copy to the other.
type balancer struct {
	first, others *url.URL
	base          http.RoundTripper
}

func (b balancer) RoundTrip(req *http.Request) (*http.Response, error) {
	target := b.others
	if retryhttp.AttemptNumber(req.Context()) == 1 {
		target = b.first
	}
	out := *req // a RoundTripper must not modify req
	u := *req.URL
	u.Host = target.Host
	out.URL = &u
	return b.base.RoundTrip(&out)
}

// A client that hedges against a replica stuck in a pause: the first copy
// of the request goes to it and gets no answer, a second copy goes to the
// other replica after 50 ms and wins, and the first is cancelled.
func ExampleNewHedgingTransport() {
	cancelled := make(chan struct{})
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // answers nothing until the client goes away
		close(cancelled)
	}))
	defer stuck.Close()
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, `{"answer":42}`)
	}))
	defer healthy.Close()
	first, _ := url.Parse(stuck.URL)
	others, _ := url.Parse(healthy.URL)

	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: retryhttp.NewHedgingTransport(
		balancer{first: first, others: others, base: base},
		retry.Constant(50*time.Millisecond).Take(1), // at most one hedge, after 50 ms
		retry.OnRetry(func(a retry.Attempt) { fmt.Printf("no answer after %v: hedging\n", a.Delay) }))}

	resp, err := client.Get(stuck.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(resp.Status, " ", string(body))
	<-cancelled
	fmt.Println("the stuck replica's request was cancelled")
	// Output:
	// no answer after 50ms: hedging
	// 200 OK {"answer":42}
	// the stuck replica's request was cancelled
}

// Hedging and retrying, stacked: the hedging Transport races copies of a
// request, and the retrying Transport on top retries a race that no copy
// won, with its own schedule. Here the server fails the first two copies,
// which lose the first race; the retry wins the second. The fake clock
// makes the retry's wait instant, and the race's copies go one at a time,
// each failure starting the next (see retry.Hedge): the output does not
// depend on how fast the server answers. Leave WithClock out in real code.
func ExampleNewHedgingTransport_retries() {
	var calls atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, `{"answer":42}`)
	}))
	defer api.Close()

	clock := retry.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	hedging := retryhttp.NewHedgingTransport(base, retry.Constant(50*time.Millisecond).Take(1), retry.WithClock(clock))
	hedging.OnAttempt = func(req *http.Request, n int) { fmt.Println("sending copy", n) }
	client := &http.Client{Transport: retryhttp.NewTransport(hedging, retry.Exponential(100*time.Millisecond).Take(3),
		retry.WithClock(clock),
		retry.OnRetry(func(a retry.Attempt) {
			fmt.Printf("race %d lost: %v; retrying in %v\n", a.Number, a.Err, a.Delay)
		}))}

	resp, err := client.Get(api.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(resp.Status, " ", string(body))
	// Output:
	// sending copy 1
	// sending copy 2
	// race 1 lost: retryhttp: response status 503 Service Unavailable; retrying in 100ms
	// sending copy 3
	// 200 OK {"answer":42}
}
