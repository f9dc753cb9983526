package bench_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryhttp"
)

// Example_retryablehttpBefore is the guide's hashicorp/go-retryablehttp
// snippet.
func Example_retryablehttpBefore() {
	api := flakyServer(2) // answers 503 twice, then 200 "hello"
	defer api.Close()

	client := retryablehttp.NewClient()
	client.RetryMax = 4
	client.RetryWaitMin = time.Millisecond
	client.RetryWaitMax = 10 * time.Millisecond
	client.Logger = nil
	client.RequestLogHook = func(_ retryablehttp.Logger, req *http.Request, attempt int) {
		fmt.Println("attempt", attempt+1)
	}
	resp, err := client.Get(api.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// attempt 1
	// attempt 2
	// attempt 3
	// 200 hello
}

// Example_retryablehttpAfter is the same request with retryhttp.
func Example_retryablehttpAfter() {
	api := flakyServer(2) // answers 503 twice, then 200 "hello"
	defer api.Close()

	rt := retryhttp.NewTransport(nil, retry.Exponential(time.Millisecond).Cap(10*time.Millisecond).Take(4))
	rt.OnAttempt = func(req *http.Request, attempt int) {
		fmt.Println("attempt", attempt)
	}
	client := &http.Client{Transport: rt}
	resp, err := client.Get(api.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// attempt 1
	// attempt 2
	// attempt 3
	// 200 hello
}

// script is an in-memory http.RoundTripper that answers each request with
// the next of its answers (the last one over and over) and records when each
// request came, so that timing runs in a synctest bubble without a network.
type script struct {
	start   time.Time
	answers []func(*http.Request) (*http.Response, error)
	at      []time.Duration
	bodies  []string
}

func (s *script) RoundTrip(req *http.Request) (*http.Response, error) {
	s.at = append(s.at, time.Since(s.start))
	if req.Body != nil {
		b, _ := io.ReadAll(req.Body)
		req.Body.Close()
		s.bodies = append(s.bodies, string(b))
	}
	answer := s.answers[min(len(s.at), len(s.answers))-1]
	return answer(req)
}

// status answers with code and the given header pairs.
func status(code int, header ...string) func(*http.Request) (*http.Response, error) {
	return func(req *http.Request) (*http.Response, error) {
		h := http.Header{}
		for i := 0; i+1 < len(header); i += 2 {
			h.Set(header[i], header[i+1])
		}
		return &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
	}
}

// fail answers with err.
func fail(err error) func(*http.Request) (*http.Response, error) {
	return func(*http.Request) (*http.Response, error) { return nil, err }
}

// theirs returns a retryablehttp client over s: waits of 10s, 20s, … up to
// 1m, 4 retries, no logger.
func theirs(s *script) *retryablehttp.Client {
	c := retryablehttp.NewClient()
	c.HTTPClient = &http.Client{Transport: s}
	c.RetryWaitMin, c.RetryWaitMax, c.RetryMax, c.Logger = 10*time.Second, time.Minute, 4, nil
	return c
}

// ours returns a retryhttp client over s with the same schedule.
func oursHTTP(s *script) *http.Client {
	return &http.Client{Transport: retryhttp.NewTransport(s, retry.Exponential(10*time.Second).Cap(time.Minute).Take(4))}
}

// TestRetryablehttpDifferences checks what the guide says a
// hashicorp/go-retryablehttp user will find different.
func TestRetryablehttpDifferences(t *testing.T) {
	const url = "http://api.example/"
	t.Run("Retry-After: exactly, or at least the schedule's delay", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			answers := []func(*http.Request) (*http.Response, error){status(429, "Retry-After", "1"), status(200)}
			s := &script{start: time.Now(), answers: answers}
			resp, err := theirs(s).Get(url)
			if err != nil || resp.StatusCode != 200 || !slices.Equal(s.at, []time.Duration{0, time.Second}) {
				t.Errorf("retryablehttp: %v, requests at %v; want 200 after exactly 1s", err, s.at)
			}
			s = &script{start: time.Now(), answers: answers}
			resp, err = oursHTTP(s).Get(url)
			if err != nil || resp.StatusCode != 200 || !slices.Equal(s.at, []time.Duration{0, 10 * time.Second}) {
				t.Errorf("retryhttp: %v, requests at %v; want 200 after max(1s, 10s)", err, s.at)
			}
		})
	})
	t.Run("a POST without an idempotency key", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			answers := []func(*http.Request) (*http.Response, error){status(503), status(200)}
			s := &script{start: time.Now(), answers: answers}
			theirs(s).Post(url, "text/plain", strings.NewReader("pay 10€"))
			if len(s.at) != 2 {
				t.Errorf("retryablehttp: %d requests, want 2", len(s.at))
			}
			s = &script{start: time.Now(), answers: answers}
			resp, err := oursHTTP(s).Post(url, "text/plain", strings.NewReader("pay 10€"))
			if len(s.at) != 1 || err != nil || resp.StatusCode != 503 {
				t.Errorf("retryhttp: %d requests, want 1 and the 503", len(s.at))
			}
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("pay 10€"))
			req.Header.Set("Idempotency-Key", "payment-42")
			s = &script{start: time.Now(), answers: answers}
			oursHTTP(s).Do(req)
			if len(s.at) != 2 || !slices.Equal(s.bodies, []string{"pay 10€", "pay 10€"}) {
				t.Errorf("retryhttp: %d requests with bodies %q; want 2 with the whole body", len(s.at), s.bodies)
			}
		})
	})
	t.Run("a body without GetBody", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			answers := []func(*http.Request) (*http.Response, error){status(503), status(200)}
			newReq := func() *http.Request {
				req, _ := http.NewRequest(http.MethodPut, url, io.MultiReader(strings.NewReader("data")))
				return req
			}
			s := &script{start: time.Now(), answers: answers}
			rreq, _ := retryablehttp.FromRequest(newReq())
			theirs(s).Do(rreq)
			if len(s.at) != 2 {
				t.Errorf("retryablehttp: %d requests, want 2 (it buffers every body)", len(s.at))
			}
			s = &script{start: time.Now(), answers: answers}
			oursHTTP(s).Do(newReq())
			if len(s.at) != 1 {
				t.Errorf("retryhttp: %d requests, want 1", len(s.at))
			}
			s = &script{start: time.Now(), answers: answers}
			rt := retryhttp.NewTransport(s, retry.Exponential(10*time.Second).Take(4))
			rt.BufferBody = 1 << 20
			(&http.Client{Transport: rt}).Do(newReq())
			if len(s.at) != 2 {
				t.Errorf("retryhttp with BufferBody: %d requests, want 2", len(s.at))
			}
		})
	})
	t.Run("transport errors: EOF", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			answers := []func(*http.Request) (*http.Response, error){fail(io.EOF), status(200)}
			s := &script{start: time.Now(), answers: answers}
			_, err := theirs(s).Get(url)
			if len(s.at) != 2 || err != nil {
				t.Errorf("retryablehttp: %d requests, %v; want 2 and success", len(s.at), err)
			}
			s = &script{start: time.Now(), answers: answers}
			_, err = oursHTTP(s).Get(url)
			if len(s.at) != 1 || err == nil {
				t.Errorf("retryhttp: %d requests, %v; want 1 and the EOF", len(s.at), err)
			}
		})
	})
	t.Run("giving up: an error, or the last response", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			answers := []func(*http.Request) (*http.Response, error){status(503)}
			s := &script{start: time.Now(), answers: answers}
			resp, err := theirs(s).Get(url)
			if resp != nil || err == nil || err.Error() != "GET http://api.example/ giving up after 5 attempt(s)" {
				t.Errorf("retryablehttp: %v, %v", resp, err)
			}
			s = &script{start: time.Now(), answers: answers}
			resp, err = oursHTTP(s).Get(url)
			if err != nil || resp.StatusCode != 503 || len(s.at) != 5 {
				t.Errorf("retryhttp: %v, %v after %d requests; want the 503 and no error after 5", resp, err, len(s.at))
			}
		})
	})
	t.Run("statuses: 408 and 505", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			for _, code := range []int{408, 505} {
				answers := []func(*http.Request) (*http.Response, error){status(code), status(200)}
				s := &script{start: time.Now(), answers: answers}
				theirs(s).Get(url)
				n := len(s.at)
				s = &script{start: time.Now(), answers: answers}
				oursHTTP(s).Get(url)
				// retryablehttp retries every 5xx but 501, and 429; retryhttp 408, 429, 500, 502, 503, 504.
				if want := map[int][2]int{408: {1, 2}, 505: {2, 1}}[code]; n != want[0] || len(s.at) != want[1] {
					t.Errorf("%d: retryablehttp %d requests, retryhttp %d; want %d and %d", code, n, len(s.at), want[0], want[1])
				}
			}
		})
	})
	t.Run("a context deadline: a wait in vain, or the last response at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			answers := []func(*http.Request) (*http.Response, error){status(503)}
			ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			s := &script{start: time.Now(), answers: answers}
			c := theirs(s)
			c.RetryWaitMin, c.RetryWaitMax, c.RetryMax = 25*time.Minute, 25*time.Minute, 10
			rreq, _ := retryablehttp.FromRequest(req)
			resp, err := c.Do(rreq)
			if took := time.Since(s.start); len(s.at) != 3 || took != time.Hour || resp != nil || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("retryablehttp: %d requests, %v, %v after %v; want 3 and the context's error after 1h", len(s.at), resp, err, took)
			}
			ctx, cancel = context.WithTimeout(t.Context(), time.Hour)
			defer cancel()
			s = &script{start: time.Now(), answers: answers}
			client := &http.Client{Transport: retryhttp.NewTransport(s, retry.Constant(25*time.Minute).Take(10))}
			resp, err = client.Do(req.WithContext(ctx))
			if took := time.Since(s.start); len(s.at) != 3 || took != 50*time.Minute || err != nil || resp.StatusCode != 503 {
				t.Errorf("retryhttp: %d requests, %v after %v; want 3 and the last 503 after 50m", len(s.at), err, took)
			}
		})
	})
	t.Run("defaults and attempt numbers", func(t *testing.T) {
		c := retryablehttp.NewClient()
		if c.RetryMax != 4 || c.RetryWaitMin != time.Second || c.RetryWaitMax != 30*time.Second {
			t.Errorf("retryablehttp defaults: %d retries, waits %v to %v", c.RetryMax, c.RetryWaitMin, c.RetryWaitMax)
		}
		synctest.Test(t, func(t *testing.T) {
			answers := []func(*http.Request) (*http.Response, error){status(503), status(200)}
			s := &script{start: time.Now(), answers: answers}
			c := theirs(s)
			var seen []int
			c.RequestLogHook = func(_ retryablehttp.Logger, _ *http.Request, n int) { seen = append(seen, n) }
			c.Get(url)
			s = &script{start: time.Now(), answers: answers}
			rt := retryhttp.NewTransport(s, retry.Exponential(10*time.Second).Take(4))
			var ours []int
			rt.OnAttempt = func(_ *http.Request, n int) { ours = append(ours, n) }
			(&http.Client{Transport: rt}).Get(url)
			if fmt.Sprint(seen, ours) != "[0 1] [1 2]" {
				t.Errorf("RequestLogHook saw %v, OnAttempt %v; want [0 1] and [1 2]", seen, ours)
			}
		})
	})
}
