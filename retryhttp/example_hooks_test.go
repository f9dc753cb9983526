package retryhttp_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryhttp"
)

// An API that answers 200 with an error in the payload while it rebuilds
// its index: ShouldRetry peeks at the start of every 200's body and retries
// those, and the caller still reads the final body whole. The fake clock
// makes the waits instant; leave WithClock out in real code.
func ExamplePeekBody() {
	var calls atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			fmt.Fprint(w, `{"error":"index rebuilding"}`)
			return
		}
		fmt.Fprint(w, `{"items":[1,2,3]}`)
	}))
	defer api.Close()

	rt := retryhttp.NewTransport(nil, retry.Constant(time.Second).Take(3),
		retry.WithClock(retry.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))),
		retry.OnRetry(func(a retry.Attempt) { fmt.Printf("attempt %d: %v\n", a.Number, a.Err) }))
	rt.ShouldRetry = func(resp *http.Response, err error) bool {
		if err == nil && resp.StatusCode == http.StatusOK {
			head, _ := retryhttp.PeekBody(resp, 16)
			if bytes.HasPrefix(head, []byte(`{"error":`)) {
				return true
			}
		}
		return retryhttp.DefaultShouldRetry(resp, err)
	}
	client := &http.Client{Transport: rt}
	defer client.CloseIdleConnections()

	resp, err := client.Get(api.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, string(body))
	// Output:
	// attempt 1: retryhttp: response status 200 OK
	// 200 OK {"items":[1,2,3]}
}

func ExampleDefaultShouldRetry() {
	fmt.Println(retryhttp.DefaultShouldRetry(&http.Response{StatusCode: 503}, nil))
	fmt.Println(retryhttp.DefaultShouldRetry(&http.Response{StatusCode: 404}, nil))
	fmt.Println(retryhttp.DefaultShouldRetry(nil, context.DeadlineExceeded))
	fmt.Println(retryhttp.DefaultShouldRetry(nil, io.EOF))
	// Output:
	// true
	// false
	// true
	// false
}
