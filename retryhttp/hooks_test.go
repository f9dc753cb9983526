package retryhttp

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
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
