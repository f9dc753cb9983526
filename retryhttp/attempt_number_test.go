package retryhttp

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
