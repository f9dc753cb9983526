package retryhttp_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryhttp"
)

// A client for a flaky API: the server fails twice, and the client retries
// on an exponential schedule. The fake clock makes the waits instant and
// the output exact; leave WithClock out in real code.
func ExampleNewClient() {
	var calls atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		case 2:
			http.Error(w, "upstream failed", http.StatusBadGateway)
		default:
			fmt.Fprintln(w, `{"answer":42}`)
		}
	}))
	defer api.Close()

	clock := retry.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	client := retryhttp.NewClient(retry.Exponential(100*time.Millisecond).Take(4),
		retry.WithClock(clock),
		retry.OnRetry(func(a retry.Attempt) {
			fmt.Printf("attempt %d: %v; retrying in %v\n", a.Number, a.Err, a.Delay)
		}))
	defer client.CloseIdleConnections()

	resp, err := client.Get(api.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Print(resp.Status, " ", string(body))
	// Output:
	// attempt 1: retryhttp: response status 503 Service Unavailable; retrying in 100ms
	// attempt 2: retryhttp: response status 502 Bad Gateway; retrying in 200ms
	// 200 OK {"answer":42}
}

// A Retry-After-aware client: the server rate-limits with both forms of
// Retry-After, and the client waits as long as it is told, within
// MaxPushback. The HTTP-date is read against the retry clock. When the
// server asks for more than MaxPushback, the client stops at once and
// returns the server's answer; OnDone's reason says why.
func ExampleNewClient_retryAfter() {
	clock := retry.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	var calls atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			w.Header().Set("Retry-After", clock.Now().Add(20*time.Second).Format(http.TimeFormat))
			w.WriteHeader(http.StatusServiceUnavailable)
		case 3:
			w.Header().Set("Retry-After", "86400") // a day: more than MaxPushback allows
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			fmt.Fprintln(w, "done")
		}
	}))
	defer api.Close()

	client := retryhttp.NewClient(retry.Constant(time.Second).Take(5),
		retry.WithClock(clock),
		retry.MaxPushback(time.Minute),
		retry.OnDone(func(o retry.Outcome) {
			fmt.Println("too long:", errors.Is(o.Reason, retry.ErrPushbackTooLong))
		}))
	defer client.CloseIdleConnections()

	resp, err := client.Get(api.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status, "waited:", clock.Sleeps())
	// Output:
	// too long: true
	// 503 Service Unavailable waited: [3s 20s]
}

// A Transport over a custom base, with a Budget shared by all its requests,
// one more status to retry, and a POST made safe to retry by its
// Idempotency-Key.
func ExampleNewTransport() {
	var calls atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n := calls.Add(1)
		fmt.Printf("server: attempt %d: %s %s key=%s\n", n, r.Method, body, r.Header.Get("Idempotency-Key"))
		if n == 1 {
			w.WriteHeader(http.StatusTooEarly)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer api.Close()

	base := &http.Transport{MaxIdleConnsPerHost: 16}
	defer base.CloseIdleConnections()
	rt := retryhttp.NewTransport(base, retry.Exponential(50*time.Millisecond).Cap(time.Second).Take(3),
		retry.WithBudget(retry.NewBudget(0.1, 10)),
		retry.WithClock(retry.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))))
	rt.RetryStatus = func(code int) bool {
		return code == http.StatusTooEarly || retryhttp.DefaultRetryStatus(code)
	}
	client := &http.Client{Transport: rt}

	req, _ := http.NewRequest(http.MethodPost, api.URL, strings.NewReader(`{"item":7}`))
	req.Header.Set("Idempotency-Key", "order-7")
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println("client:", resp.Status)
	// Output:
	// server: attempt 1: POST {"item":7} key=order-7
	// server: attempt 2: POST {"item":7} key=order-7
	// client: 201 Created
}

func ExampleDefaultRetryStatus() {
	for _, code := range []int{200, 404, 408, 429, 500, 501, 502, 503, 504, 505} {
		fmt.Println(code, retryhttp.DefaultRetryStatus(code))
	}
	// Output:
	// 200 false
	// 404 false
	// 408 true
	// 429 true
	// 500 true
	// 501 false
	// 502 true
	// 503 true
	// 504 true
	// 505 false
}
