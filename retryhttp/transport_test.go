package retryhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStatusSequences(t *testing.T) {
	tests := []struct {
		name     string
		handlers []http.HandlerFunc
		retries  int // schedule length
		attempts int // requests the server should see
		code     int // of the response returned
	}{
		{"200 at once", []http.HandlerFunc{status(200)}, 4, 1, 200},
		{"503 then 200", []http.HandlerFunc{status(503), status(200)}, 4, 2, 200},
		{"every default status then 200", []http.HandlerFunc{status(408), status(429), status(500), status(502), status(503), status(504), status(200)}, 6, 7, 200},
		{"500 until exhausted", []http.HandlerFunc{status(500)}, 2, 3, 500},
		{"503 then 404", []http.HandlerFunc{status(503), status(404)}, 4, 2, 404},
		{"204 no content", []http.HandlerFunc{status(204)}, 4, 1, 204},
		{"302 not followed", []http.HandlerFunc{status(302, "Location", "/elsewhere")}, 4, 1, 302},
		{"400 not retried", []http.HandlerFunc{status(400), status(200)}, 4, 1, 400},
		{"401 not retried", []http.HandlerFunc{status(401), status(200)}, 4, 1, 401},
		{"404 not retried", []http.HandlerFunc{status(404), status(200)}, 4, 1, 404},
		{"409 not retried", []http.HandlerFunc{status(409), status(200)}, 4, 1, 409},
		{"501 not retried", []http.HandlerFunc{status(501), status(200)}, 4, 1, 501},
		{"505 not retried", []http.HandlerFunc{status(505), status(200)}, 4, 1, 505},
		{"no retries allowed", []http.HandlerFunc{status(503), status(200)}, 0, 1, 503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.handlers...)
			tr := &tracker{base: newBase(t)}
			clock := retry.NewFakeClock(t0)
			rt := NewTransport(tr, zero(tt.retries), retry.WithClock(clock))
			req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
			require.NoError(t, err)

			resp, err := rt.RoundTrip(req)
			require.NoError(t, err)
			assert.Equal(t, tt.code, resp.StatusCode)
			assert.Same(t, req, resp.Request)
			assert.Len(t, srv.requests(), tt.attempts)
			assert.Len(t, clock.Sleeps(), tt.attempts-1)

			// The failed attempts were drained and closed before the next
			// one; the final response is untouched.
			assert.Equal(t, wantEvents(tt.attempts), tr.events())
			for i := range tt.attempts - 1 {
				assert.Positive(t, tr.body(i).read.Load(), "attempt %d not drained", i+1)
			}
			final := tr.body(tt.attempts - 1)
			assert.Zero(t, final.read.Load())
			assert.False(t, final.closed.Load())

			n := strconv.Itoa(tt.attempts)
			assert.Equal(t, n, resp.Header.Get("X-Attempt"))
			want := "attempt " + n
			if tt.code == 204 {
				want = ""
			}
			assert.Equal(t, want, readAll(t, resp))
		})
	}
}

func TestMethods(t *testing.T) {
	tests := []struct {
		method  string
		header  http.Header
		retried bool
	}{
		{http.MethodGet, nil, true},
		{http.MethodHead, nil, true},
		{http.MethodOptions, nil, true},
		{http.MethodTrace, nil, true},
		{http.MethodPut, nil, true},
		{http.MethodDelete, nil, true},
		{http.MethodPost, nil, false},
		{http.MethodPatch, nil, false},
		{"PROPFIND", nil, false},
		{http.MethodPost, http.Header{"Idempotency-Key": {"k-123"}}, true},
		{http.MethodPatch, http.Header{"X-Idempotency-Key": {"k-456"}}, true},
		{http.MethodPost, http.Header{"Idempotency-Key": nil}, true}, // marked, not sent
	}
	for _, tt := range tests {
		name := tt.method
		for k, v := range tt.header {
			name += " with " + k + "=" + strings.Join(v, ",")
		}
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, status(503), status(200))
			rt := NewTransport(newBase(t), zero(3), retry.WithClock(retry.NewFakeClock(t0)))
			req, err := http.NewRequest(tt.method, srv.URL, nil)
			require.NoError(t, err)
			req.Header = tt.header.Clone()
			if req.Header == nil {
				req.Header = http.Header{}
			}

			resp, err := rt.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
			reqs := srv.requests()
			if !tt.retried {
				assert.Equal(t, 503, resp.StatusCode)
				assert.Len(t, reqs, 1)
				return
			}
			assert.Equal(t, 200, resp.StatusCode)
			require.Len(t, reqs, 2)
			for _, r := range reqs {
				assert.Equal(t, tt.method, r.method)
				for k, v := range tt.header {
					assert.Equal(t, v, r.header[k], "header %s", k)
				}
			}
		})
	}
}

func TestPostBody(t *testing.T) {
	const payload = `{"order":42}`
	t.Run("without Idempotency-Key sent once", func(t *testing.T) {
		srv := newServer(t, status(503), status(200))
		rt := NewTransport(newBase(t), zero(3), retry.WithClock(retry.NewFakeClock(t0)))
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(payload))
		require.NoError(t, err)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, 503, resp.StatusCode)
		assert.Equal(t, "attempt 1", readAll(t, resp))
		reqs := srv.requests()
		require.Len(t, reqs, 1)
		assert.Equal(t, payload, reqs[0].body)
	})
	t.Run("with Idempotency-Key retried with the same key and body", func(t *testing.T) {
		srv := newServer(t, status(503), status(502), status(201))
		rt := NewTransport(newBase(t), zero(3), retry.WithClock(retry.NewFakeClock(t0)))
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(payload))
		require.NoError(t, err)
		req.Header.Set("Idempotency-Key", "8e03978e-40d5-43e8-bc93-6894a57f9324")
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, 201, resp.StatusCode)
		resp.Body.Close()
		reqs := srv.requests()
		require.Len(t, reqs, 3)
		for _, r := range reqs {
			assert.Equal(t, payload, r.body)
			assert.Equal(t, "8e03978e-40d5-43e8-bc93-6894a57f9324", r.header.Get("Idempotency-Key"))
		}
	})
}

// plainReader hides the concrete type of its reader, so http.NewRequest
// cannot set GetBody.
type plainReader struct{ io.Reader }

func TestPutBody(t *testing.T) {
	payload := strings.Repeat("0123456789abcdef", 1<<13) // 128 KiB, more than one write
	t.Run("arrives intact on every attempt", func(t *testing.T) {
		srv := newServer(t, status(500), status(502), status(504), status(200))
		rt := NewTransport(newBase(t), zero(5), retry.WithClock(retry.NewFakeClock(t0)))
		req, err := http.NewRequest(http.MethodPut, srv.URL, strings.NewReader(payload))
		require.NoError(t, err)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode)
		resp.Body.Close()
		reqs := srv.requests()
		require.Len(t, reqs, 4)
		for i, r := range reqs {
			assert.Equal(t, len(payload), len(r.body), "attempt %d", i+1)
			assert.True(t, r.body == payload, "attempt %d: body differs", i+1)
		}
	})
	t.Run("without GetBody sent once", func(t *testing.T) {
		srv := newServer(t, status(500), status(200))
		rt := NewTransport(newBase(t), zero(5), retry.WithClock(retry.NewFakeClock(t0)))
		req, err := http.NewRequest(http.MethodPut, srv.URL, plainReader{strings.NewReader(payload)})
		require.NoError(t, err)
		require.Nil(t, req.GetBody)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, 500, resp.StatusCode)
		resp.Body.Close()
		reqs := srv.requests()
		require.Len(t, reqs, 1)
		assert.True(t, reqs[0].body == payload)
	})
	t.Run("GetBody failure ends the retries", func(t *testing.T) {
		srv := newServer(t, status(500), status(200))
		rt := NewTransport(newBase(t), zero(5), retry.WithClock(retry.NewFakeClock(t0)))
		req, err := http.NewRequest(http.MethodPut, srv.URL, strings.NewReader(payload))
		require.NoError(t, err)
		errGone := errors.New("payload gone")
		req.GetBody = func() (io.ReadCloser, error) { return nil, errGone }
		resp, err := rt.RoundTrip(req)
		assert.Nil(t, resp)
		assert.ErrorIs(t, err, errGone)
		assert.Len(t, srv.requests(), 1)
	})
}

func TestTransportErrors(t *testing.T) {
	t.Run("connection reset then 200", func(t *testing.T) {
		srv := newServer(t, reset, reset, status(200))
		var errs []error
		rt := NewTransport(newBase(t), zero(3), retry.WithClock(retry.NewFakeClock(t0)),
			retry.OnRetry(func(a retry.Attempt) { errs = append(errs, a.Err) }))
		resp, err := rt.RoundTrip(mustGet(t, srv.URL))
		require.NoError(t, err)
		assert.Equal(t, "attempt 3", readAll(t, resp))
		assert.Len(t, srv.requests(), 3)
		require.Len(t, errs, 2)
		for _, err := range errs {
			assert.ErrorIs(t, err, syscall.ECONNRESET)
		}
	})
	t.Run("connection reset until exhausted", func(t *testing.T) {
		srv := newServer(t, reset)
		rt := NewTransport(newBase(t), zero(2), retry.WithClock(retry.NewFakeClock(t0)))
		resp, err := rt.RoundTrip(mustGet(t, srv.URL))
		assert.Nil(t, resp)
		assert.ErrorIs(t, err, syscall.ECONNRESET)
		var re *retry.Error
		assert.False(t, errors.As(err, &re), "the base's error, not a *retry.Error: %v", err)
		assert.Len(t, srv.requests(), 3)
	})
	t.Run("connection refused retried", func(t *testing.T) {
		clock := retry.NewFakeClock(t0)
		rt := NewTransport(newBase(t), zero(2), retry.WithClock(clock))
		resp, err := rt.RoundTrip(mustGet(t, "http://"+closedPort(t)))
		assert.Nil(t, resp)
		assert.ErrorIs(t, err, syscall.ECONNREFUSED)
		assert.Len(t, clock.Sleeps(), 2)
	})
	t.Run("malformed response not retried", func(t *testing.T) {
		srv := newServer(t, malformed, status(200))
		rt := NewTransport(newBase(t), zero(3), retry.WithClock(retry.NewFakeClock(t0)))
		resp, err := rt.RoundTrip(mustGet(t, srv.URL))
		assert.Nil(t, resp)
		assert.ErrorContains(t, err, "malformed HTTP")
		assert.Len(t, srv.requests(), 1)
	})
	t.Run("clean hang-up not retried by default", func(t *testing.T) {
		srv := newServer(t, hangUp, status(200))
		rt := NewTransport(newBase(t), zero(3), retry.WithClock(retry.NewFakeClock(t0)))
		resp, err := rt.RoundTrip(mustGet(t, srv.URL))
		assert.Nil(t, resp)
		assert.ErrorIs(t, err, io.EOF)
		assert.Len(t, srv.requests(), 1)
	})
	t.Run("RetryError widens what is retried", func(t *testing.T) {
		srv := newServer(t, hangUp, status(200))
		rt := NewTransport(newBase(t), zero(3), retry.WithClock(retry.NewFakeClock(t0)))
		rt.RetryError = func(err error) bool { return errors.Is(err, io.EOF) || retry.IsTransient(err) }
		resp, err := rt.RoundTrip(mustGet(t, srv.URL))
		require.NoError(t, err)
		assert.Equal(t, "attempt 2", readAll(t, resp))
	})
}

func TestRetryStatus(t *testing.T) {
	srv := newServer(t, status(409), status(503), status(200))
	rt := NewTransport(newBase(t), zero(3), retry.WithClock(retry.NewFakeClock(t0)))
	rt.RetryStatus = func(code int) bool { return code == 409 }
	resp, err := rt.RoundTrip(mustGet(t, srv.URL))
	require.NoError(t, err)
	assert.Equal(t, 503, resp.StatusCode, "503 is not in the custom set")
	assert.Equal(t, "attempt 2", readAll(t, resp))
}

func TestDefaultRetryStatus(t *testing.T) {
	retried := map[int]bool{408: true, 429: true, 500: true, 502: true, 503: true, 504: true}
	for code := 100; code < 600; code++ {
		assert.Equal(t, retried[code], DefaultRetryStatus(code), "status %d", code)
	}
	assert.False(t, DefaultRetryStatus(-1))
	assert.False(t, DefaultRetryStatus(0))
}

func TestOnRetrySeesStatusError(t *testing.T) {
	srv := newServer(t, status(503), status(500), status(429), status(200))
	var codes []int
	var delays []time.Duration
	rt := NewTransport(newBase(t), retry.Delays(time.Second, 2*time.Second, 3*time.Second),
		retry.WithClock(retry.NewFakeClock(t0)),
		retry.OnRetry(func(a retry.Attempt) {
			var se *StatusError
			if assert.ErrorAs(t, a.Err, &se) {
				codes = append(codes, se.StatusCode)
			}
			delays = append(delays, a.Delay)
		}))
	resp, err := rt.RoundTrip(mustGet(t, srv.URL))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, []int{503, 500, 429}, codes)
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}, delays)
}

func TestIfOption(t *testing.T) {
	srv := newServer(t, status(503), status(500), status(200))
	// The caller's If narrows what is retried: here only 503s.
	rt := NewTransport(newBase(t), zero(3), retry.WithClock(retry.NewFakeClock(t0)),
		retry.If(func(err error) bool {
			var se *StatusError
			return errors.As(err, &se) && se.StatusCode == 503
		}))
	resp, err := rt.RoundTrip(mustGet(t, srv.URL))
	require.NoError(t, err, "a rejected status still returns its response")
	assert.Equal(t, 500, resp.StatusCode)
	assert.Equal(t, "attempt 2", readAll(t, resp))
}

func TestStatusErrorText(t *testing.T) {
	assert.Equal(t, "retryhttp: response status 503 Service Unavailable", (&StatusError{StatusCode: 503}).Error())
	assert.Equal(t, "retryhttp: response status 599", (&StatusError{StatusCode: 599}).Error())
}

// TestRequestUnchanged checks the RoundTripper contract: RoundTrip does not
// modify the caller's request, whatever the attempts did.
func TestRequestUnchanged(t *testing.T) {
	srv := newServer(t, status(503), status(503), status(200))
	rt := NewTransport(newBase(t), zero(3), retry.WithClock(retry.NewFakeClock(t0)), retry.AttemptTimeout(time.Minute))
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "v")
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, srv.URL, strings.NewReader("payload"))
	require.NoError(t, err)
	req.Header.Set("X-Custom", "1")
	before := *req
	headerBefore := req.Header.Clone()

	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, before.Method, req.Method)
	assert.Same(t, before.URL, req.URL)
	assert.Equal(t, before.Body, req.Body)
	assert.Equal(t, ctx, req.Context())
	assert.Equal(t, headerBefore, req.Header)
	assert.Equal(t, before.ContentLength, req.ContentLength)
	assert.Len(t, srv.requests(), 3)
}

func TestZeroTransport(t *testing.T) {
	srv := newServer(t, status(200))
	var rt Transport
	t.Cleanup(rt.CloseIdleConnections)
	resp, err := rt.RoundTrip(mustGet(t, srv.URL))
	require.NoError(t, err)
	assert.Equal(t, "attempt 1", readAll(t, resp))
}

func TestNewClientDefaultSchedule(t *testing.T) {
	srv := newServer(t, status(503))
	clock := retry.NewFakeClock(t0)
	client := NewClient(nil, retry.WithClock(clock))
	t.Cleanup(client.CloseIdleConnections)
	resp, err := client.Get(srv.URL)
	require.NoError(t, err)
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, "attempt 5", readAll(t, resp))
	sleeps := clock.Sleeps()
	require.Len(t, sleeps, 4)
	for i, d := range sleeps {
		assert.True(t, d >= 0 && d <= 100*time.Millisecond<<i, "wait %d: %v", i, d)
	}
}

// countingBase is a RoundTripper that counts CloseIdleConnections calls.
type countingBase struct {
	http.RoundTripper
	closed int
}

func (b *countingBase) CloseIdleConnections() { b.closed++ }

func TestCloseIdleConnections(t *testing.T) {
	base := &countingBase{RoundTripper: newBase(t)}
	client := &http.Client{Transport: NewTransport(base, nil)}
	client.CloseIdleConnections()
	assert.Equal(t, 1, base.closed)

	// A base without the method is fine too.
	NewTransport(struct{ http.RoundTripper }{base}, nil).CloseIdleConnections()
}

func mustGet(t testing.TB, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	return req
}

// TestRewindOnlyWhatWasSent checks a request whose Body is nil or
// http.NoBody but whose GetBody is set: every attempt is sent without a body,
// as the first one was, and GetBody is never called, as in net/http, which
// rewinds only a body it sent.
func TestRewindOnlyWhatWasSent(t *testing.T) {
	for _, tt := range []struct {
		name string
		body io.ReadCloser
	}{{"nil Body", nil}, {"NoBody", http.NoBody}} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, status(503), status(502), status(200))
			rt := NewTransport(newBase(t), zero(3), retry.WithClock(retry.NewFakeClock(t0)))
			req, err := http.NewRequest(http.MethodPut, srv.URL, nil)
			require.NoError(t, err)
			req.Body = tt.body
			rewound := 0
			req.GetBody = func() (io.ReadCloser, error) {
				rewound++
				return io.NopCloser(strings.NewReader("payload")), nil
			}
			resp, err := rt.RoundTrip(req)
			require.NoError(t, err)
			assert.Equal(t, "attempt 3", readAll(t, resp))
			reqs := srv.requests()
			require.Len(t, reqs, 3)
			for i, r := range reqs {
				assert.Empty(t, r.body, "attempt %d", i+1)
			}
			assert.Zero(t, rewound, "GetBody called")
		})
	}
}

// TestBrokenBase checks a base that breaks the RoundTripper contract:
// neither a response nor an error is an error, not retried, and never a
// panic; both a response and an error is the error, the response closed.
func TestBrokenBase(t *testing.T) {
	t.Run("nil, nil", func(t *testing.T) {
		calls := 0
		base := funcBase(func(*http.Request) (*http.Response, error) { calls++; return nil, nil })
		for _, rt := range []*Transport{
			NewTransport(base, zero(3), retry.WithClock(retry.NewFakeClock(t0))),
			func() *Transport {
				rt := NewTransport(base, zero(3), retry.WithClock(retry.NewFakeClock(t0)))
				rt.ShouldRetry = func(resp *http.Response, err error) bool {
					assert.Nil(t, resp)
					return DefaultShouldRetry(resp, err)
				}
				return rt
			}(),
		} {
			calls = 0
			resp, err := rt.RoundTrip(mustGet(t, "http://example.test/"))
			assert.Nil(t, resp)
			assert.ErrorContains(t, err, "nil *http.Response with a nil error")
			assert.Equal(t, 1, calls)
		}
	})
	t.Run("response and error", func(t *testing.T) {
		errBoth := errors.New("both")
		body := &closeRecorder{Reader: strings.NewReader("x")}
		base := funcBase(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Body: body}, errBoth
		})
		rt := NewTransport(base, zero(3), retry.WithClock(retry.NewFakeClock(t0)))
		resp, err := rt.RoundTrip(mustGet(t, "http://example.test/"))
		assert.Nil(t, resp)
		assert.Equal(t, errBoth, err)
		assert.True(t, body.closed)
	})
}
