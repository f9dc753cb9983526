package retryhttp_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
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

// A request signed with a timestamp, as many APIs require: the signature of
// the first attempt would be stale by the time of a retry, so PrepareRetry
// signs each retry again, on its own copy of the headers.
func ExampleTransport_prepareRetry() {
	key := []byte("shared secret")
	signature := func(method, path, ts string) string {
		mac := hmac.New(sha256.New, key)
		io.WriteString(mac, method+" "+path+" "+ts)
		return hex.EncodeToString(mac.Sum(nil))[:16]
	}
	var calls atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts := r.Header.Get("X-Timestamp")
		valid := r.Header.Get("X-Signature") == signature(r.Method, r.URL.Path, ts)
		fmt.Printf("server: signed at %s, valid %t\n", ts, valid)
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer api.Close()

	clock := retry.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	sign := func(req *http.Request) {
		ts := clock.Now().Format(time.TimeOnly)
		req.Header.Set("X-Timestamp", ts)
		req.Header.Set("X-Signature", signature(req.Method, req.URL.Path, ts))
	}
	rt := retryhttp.NewTransport(nil, retry.Constant(30*time.Second).Take(3), retry.WithClock(clock))
	rt.PrepareRetry = func(req *http.Request) error {
		sign(req) // an error returned here would end the call with it
		return nil
	}
	client := &http.Client{Transport: rt}
	defer client.CloseIdleConnections()

	req, _ := http.NewRequest(http.MethodDelete, api.URL+"/v1/items/7", nil)
	sign(req)
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println("client:", resp.Status)
	// Output:
	// server: signed at 00:00:00, valid true
	// server: signed at 00:00:30, valid true
	// client: 200 OK
}

// tracing is a base RoundTripper middleware that records each attempt as a
// span, with OpenTelemetry's http.request.resend_count attribute when the
// attempt is a retry.
type tracing struct{ next http.RoundTripper }

func (t tracing) RoundTrip(req *http.Request) (*http.Response, error) {
	span := req.Method + " " + req.URL.Path
	if resends := retryhttp.AttemptNumber(req.Context()) - 1; resends > 0 {
		span += fmt.Sprintf(" http.request.resend_count=%d", resends)
	}
	resp, err := t.next.RoundTrip(req)
	if err == nil {
		span += fmt.Sprintf(" http.response.status_code=%d", resp.StatusCode)
	}
	fmt.Println("span:", span)
	return resp, err
}

// Tracing middleware under a Transport reads each attempt's number from the
// request's context; OnAttempt logs every attempt, the first included.
func ExampleAttemptNumber() {
	var calls atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	defer api.Close()

	base := &http.Transport{}
	defer base.CloseIdleConnections()
	rt := retryhttp.NewTransport(tracing{base}, retry.Constant(time.Second).Take(3),
		retry.WithClock(retry.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))))
	rt.OnAttempt = func(req *http.Request, attempt int) {
		fmt.Printf("log: %s %s, attempt %d\n", req.Method, req.URL.Path, attempt)
	}
	client := &http.Client{Transport: rt}

	resp, err := client.Get(api.URL + "/items")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status)
	// Output:
	// log: GET /items, attempt 1
	// span: GET /items http.response.status_code=502
	// log: GET /items, attempt 2
	// span: GET /items http.request.resend_count=1 http.response.status_code=502
	// log: GET /items, attempt 3
	// span: GET /items http.request.resend_count=2 http.response.status_code=200
	// 200 OK
}

// A PUT whose body comes from a reader that http.NewRequest cannot rewind
// (it sets GetBody only for bytes, strings and their readers): BufferBody
// keeps up to 1 MiB of it in memory, so the request can be retried.
func ExampleTransport_bufferBody() {
	var calls atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Printf("server: %s %q\n", r.Method, body)
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer api.Close()

	rt := retryhttp.NewTransport(nil, retry.Constant(time.Second).Take(3),
		retry.WithClock(retry.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))))
	rt.BufferBody = 1 << 20
	client := &http.Client{Transport: rt}
	defer client.CloseIdleConnections()

	body := io.MultiReader(strings.NewReader("name=report&"), strings.NewReader("size=42"))
	req, _ := http.NewRequest(http.MethodPut, api.URL+"/files/report", body)
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println("client:", resp.Status)
	// Output:
	// server: PUT "name=report&size=42"
	// server: PUT "name=report&size=42"
	// client: 200 OK
}

// attemptsKey is the context key of a request's attempt count, for
// ExampleTransport_givingUp.
type attemptsKey struct{}

// A go-retryablehttp user expects an error like "giving up after 3
// attempt(s)" when the retries run out on a failed status. A Transport is an
// http.RoundTripper and keeps its contract: it returns the last response
// with a nil error, as a client without retries would. To get the error,
// check the status after Do, with the number of attempts that OnAttempt
// recorded through the request's context (it runs on the goroutine that
// called Do).
func ExampleTransport_givingUp() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer api.Close()

	rt := retryhttp.NewTransport(nil, retry.Constant(time.Second).Take(2),
		retry.WithClock(retry.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))))
	rt.OnAttempt = func(req *http.Request, attempt int) {
		if count, ok := req.Context().Value(attemptsKey{}).(*int); ok {
			*count = attempt
		}
	}
	client := &http.Client{Transport: rt}
	defer client.CloseIdleConnections()

	do := func(req *http.Request) (*http.Response, error) {
		attempts := new(int)
		req = req.WithContext(context.WithValue(req.Context(), attemptsKey{}, attempts))
		resp, err := client.Do(req)
		if err == nil && retryhttp.DefaultRetryStatus(resp.StatusCode) {
			resp.Body.Close()
			return nil, fmt.Errorf("%s %s giving up after %d attempt(s)", req.Method, req.URL.Path, *attempts)
		}
		return resp, err
	}

	req, _ := http.NewRequest(http.MethodGet, api.URL+"/flaky", nil)
	if _, err := do(req); err != nil {
		fmt.Println(err)
	}
	// Output:
	// GET /flaky giving up after 3 attempt(s)
}
