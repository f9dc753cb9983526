package retryhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrepareRetry(t *testing.T) {
	t.Run("re-signs every retry, on a copy of the caller's headers", func(t *testing.T) {
		srv := newServer(t, status(503), status(500), status(200))
		clock := retry.NewFakeClock(t0)
		rt := NewTransport(newBase(t), retry.Constant(time.Second).Take(3), retry.WithClock(clock))
		var prepared []int
		rt.PrepareRetry = func(req *http.Request) error {
			n := AttemptNumber(req.Context())
			prepared = append(prepared, n)
			assert.Equal(t, "original", req.Header.Get("X-Signed-At"), "a fresh clone of the caller's headers")
			body, err := io.ReadAll(req.Body)
			assert.NoError(t, err)
			assert.Equal(t, "payload", string(body), "the rewound body")
			req.Body = io.NopCloser(strings.NewReader(string(body))) // put back what was read
			req.Header.Set("X-Signed-At", clock.Now().Format(time.TimeOnly))
			req.Header.Set("X-Attempt", strconv.Itoa(n))
			return nil
		}
		req, err := http.NewRequest(http.MethodPut, srv.URL, strings.NewReader("payload"))
		require.NoError(t, err)
		req.Header.Set("X-Signed-At", "original")
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, "attempt 3", readAll(t, resp))
		assert.Equal(t, []int{2, 3}, prepared)
		var signed []string
		for _, r := range srv.requests() {
			signed = append(signed, r.header.Get("X-Signed-At"))
			assert.Equal(t, "payload", r.body)
		}
		assert.Equal(t, []string{"original", "03:04:06", "03:04:07"}, signed)
		assert.Equal(t, http.Header{"X-Signed-At": {"original"}}, req.Header, "the caller's request is unchanged")
	})
	t.Run("a request without headers", func(t *testing.T) {
		// http.Transport refuses a nil Header, but other bases may not.
		var seen []http.Header
		base := funcBase(func(req *http.Request) (*http.Response, error) {
			seen = append(seen, req.Header)
			code := 503
			if len(seen) > 1 {
				code = 200
			}
			return &http.Response{StatusCode: code, Body: http.NoBody}, nil
		})
		rt := NewTransport(base, zero(3), retry.WithClock(retry.NewFakeClock(t0)))
		rt.PrepareRetry = func(req *http.Request) error {
			req.Header.Set("Authorization", "Bearer fresh")
			return nil
		}
		req := mustGet(t, "http://example.test/")
		req.Header = nil
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, []http.Header{nil, {"Authorization": {"Bearer fresh"}, PreviousAttemptsHeader: {"1"}}}, seen, "a retry says it is one")
		assert.Nil(t, req.Header)
	})
	t.Run("an error ends the call", func(t *testing.T) {
		srv := newServer(t, status(503), status(200))
		tr := &tracker{base: newBase(t)}
		rt := NewTransport(tr, zero(3), retry.WithClock(retry.NewFakeClock(t0)))
		errNoToken := errors.New("token refresh failed")
		rt.PrepareRetry = func(*http.Request) error { return errNoToken }
		rewound := &closeRecorder{Reader: strings.NewReader("payload")}
		req, err := http.NewRequest(http.MethodPut, srv.URL, strings.NewReader("payload"))
		require.NoError(t, err)
		req.GetBody = func() (io.ReadCloser, error) { return rewound, nil }
		resp, err := rt.RoundTrip(req)
		assert.Nil(t, resp)
		assert.Equal(t, errNoToken, err, "the hook's error as it is")
		assert.Len(t, srv.requests(), 1)
		assert.Equal(t, []string{"send 1", "close 1"}, tr.events(), "the failed attempt's response was closed")
		assert.True(t, rewound.closed, "the rewound body was closed")
	})
	t.Run("a panic closes the rewound body", func(t *testing.T) {
		srv := newServer(t, status(503), status(200))
		rt := NewTransport(newBase(t), zero(3), retry.WithClock(retry.NewFakeClock(t0)))
		rt.PrepareRetry = func(*http.Request) error { panic("signer bug") }
		rewound := &closeRecorder{Reader: strings.NewReader("payload")}
		req, err := http.NewRequest(http.MethodPut, srv.URL, strings.NewReader("payload"))
		require.NoError(t, err)
		req.GetBody = func() (io.ReadCloser, error) { return rewound, nil }
		assert.PanicsWithValue(t, "signer bug", func() { rt.RoundTrip(req) })
		assert.True(t, rewound.closed)
	})
	t.Run("not called without a retry", func(t *testing.T) {
		srv := newServer(t, status(200))
		rt := NewTransport(newBase(t), zero(3), retry.WithClock(retry.NewFakeClock(t0)))
		rt.PrepareRetry = func(*http.Request) error { t.Error("PrepareRetry called"); return nil }
		resp, err := rt.RoundTrip(mustGet(t, srv.URL))
		require.NoError(t, err)
		resp.Body.Close()
	})
}

// attemptLog is a base RoundTripper middleware that records the
// AttemptNumber of every request it sends, as tracing middleware would.
type attemptLog struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen []int
}

func (l *attemptLog) RoundTrip(req *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.seen = append(l.seen, AttemptNumber(req.Context()))
	l.mu.Unlock()
	return l.base.RoundTrip(req)
}

func TestOnAttemptAndAttemptNumber(t *testing.T) {
	for _, tt := range []struct {
		name     string
		method   string
		opts     []retry.Option
		attempts int
	}{
		{"retried", http.MethodGet, []retry.Option{retry.WithClock(retry.NewFakeClock(t0))}, 3},
		{"retried, AttemptTimeout", http.MethodGet, []retry.Option{retry.WithClock(retry.NewFakeClock(t0)), retry.AttemptTimeout(time.Minute)}, 3},
		{"sent once", http.MethodPost, nil, 1},
		{"sent once, options", http.MethodPost, []retry.Option{retry.AttemptTimeout(time.Minute)}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, status(503), status(502), status(200))
			log := &attemptLog{base: newBase(t)}
			rt := NewTransport(log, zero(3), tt.opts...)
			var hooked []string
			rt.OnAttempt = func(req *http.Request, n int) {
				hooked = append(hooked, req.Method+" "+strconv.Itoa(n))
				assert.Equal(t, n, AttemptNumber(req.Context()))
			}
			req, err := http.NewRequest(tt.method, srv.URL, nil)
			require.NoError(t, err)
			resp, err := rt.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
			var want []string
			var numbers []int
			for n := 1; n <= tt.attempts; n++ {
				want = append(want, tt.method+" "+strconv.Itoa(n))
				numbers = append(numbers, n)
			}
			assert.Equal(t, want, hooked)
			assert.Equal(t, numbers, log.seen)
			assert.Equal(t, 1, AttemptNumber(req.Context()), "the caller's context is not marked")
		})
	}
}

// TestAttemptNumberNested checks a request made under the context of
// another Transport's attempt, as a base that fetches a token would: its own
// first attempt is number 1.
func TestAttemptNumberNested(t *testing.T) {
	srv := newServer(t, status(503), status(200))
	inner := NewTransport(newBase(t), zero(3), retry.WithClock(retry.NewFakeClock(t0)))
	var innerSeen []int
	inner.OnAttempt = func(req *http.Request, n int) {
		innerSeen = append(innerSeen, AttemptNumber(req.Context()))
	}
	outerBase := funcBase(func(req *http.Request) (*http.Response, error) {
		// The token request goes out under the outer attempt's context.
		tokenReq, err := http.NewRequestWithContext(req.Context(), http.MethodGet, srv.URL, nil)
		if err != nil {
			return nil, err
		}
		resp, err := inner.RoundTrip(tokenReq)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		return &http.Response{StatusCode: 503, Body: http.NoBody}, nil
	})
	outer := NewTransport(outerBase, zero(1), retry.WithClock(retry.NewFakeClock(t0)))
	resp, err := outer.RoundTrip(mustGet(t, "http://outer.test/"))
	require.NoError(t, err)
	assert.Equal(t, 503, resp.StatusCode)
	// Outer attempt 1: the inner request takes attempts 1 and 2 (503, 200).
	// Outer attempt 2: the server says 200 at once, inner attempt 1.
	assert.Equal(t, []int{1, 2, 1}, innerSeen)
}

func TestAttemptNumberOutside(t *testing.T) {
	assert.Equal(t, 1, AttemptNumber(context.Background()))
	assert.Equal(t, 1, AttemptNumber(context.WithValue(context.Background(), attemptKey{}, "not a number")))
}
