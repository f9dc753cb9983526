package retryhttp

import (
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// get sends a GET to url through rt and returns the status, or 0 and the
// error.
func get(t *testing.T, rt http.RoundTripper, url string) (int, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

func TestBreakerPerHost(t *testing.T) {
	clock := retry.NewFakeClock(t0)
	down := newServer(t, status(http.StatusServiceUnavailable))
	up := newServer(t, status(http.StatusOK))
	var changes, hosts []string
	tr := NewTransport(nil, retry.Constant(time.Second).Take(3), retry.WithClock(clock))
	tr.Breaker = PerHost(func(host string) *retry.Breaker {
		hosts = append(hosts, host)
		return retry.NewBreaker(retry.BreakerMinCalls(2), retry.BreakerOpenPeriods(retry.Constant(time.Minute)),
			retry.BreakerClock(clock), retry.OnStateChange(func(from, to retry.BreakerState) {
				changes = append(changes, from.String()+"→"+to.String())
			}))
	})
	// Two 503s open the down host's breaker: the call stops before its
	// second wait, with the last response.
	code, err := get(t, tr, down.URL)
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Len(t, down.requests(), 2)
	assert.Equal(t, []string{"closed→open"}, changes)
	// Open: nothing is sent.
	_, err = get(t, tr, down.URL)
	assert.ErrorIs(t, err, retry.ErrBreakerOpen)
	assert.Len(t, down.requests(), 2)
	// Another host has its own breaker.
	code, err = get(t, tr, up.URL)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, []string{strings.TrimPrefix(down.URL, "http://"), strings.TrimPrefix(up.URL, "http://")}, hosts,
		"one Breaker per host, made with its name")

	t.Run("a POST sent once counts its 503", func(t *testing.T) {
		srv := newServer(t, status(http.StatusServiceUnavailable))
		tr := NewTransport(nil, retry.Constant(0).Take(3))
		b := retry.NewBreaker(retry.BreakerMinCalls(2))
		tr.Breaker = func(string) *retry.Breaker { return b }
		for range 2 {
			resp, err := tr.RoundTrip(mustRequest(t, http.MethodPost, srv.URL, "x"))
			require.NoError(t, err)
			assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "the response, not retried")
			resp.Body.Close()
		}
		assert.Len(t, srv.requests(), 2)
		assert.Equal(t, retry.BreakerOpen, b.State())
		_, err := tr.RoundTrip(mustRequest(t, http.MethodPost, srv.URL, "x"))
		assert.ErrorIs(t, err, retry.ErrBreakerOpen)
		assert.Len(t, srv.requests(), 2)
	})
}

// TestOverloadWhatCounts pins what a host's answer is: a 4xx is, a 429, a
// 503 and a reset connection are not.
func TestOverloadWhatCounts(t *testing.T) {
	for _, tt := range []struct {
		name    string
		handler http.HandlerFunc
		opens   bool
	}{
		{"200", status(http.StatusOK), false},
		{"404", status(http.StatusNotFound), false},
		{"400", status(http.StatusBadRequest), false},
		{"501", status(http.StatusNotImplemented), false},
		{"429", status(http.StatusTooManyRequests), true},
		{"503", status(http.StatusServiceUnavailable), true},
		{"500", status(http.StatusInternalServerError), true},
		{"reset", reset, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.handler)
			b := retry.NewBreaker(retry.BreakerMinCalls(1), retry.BreakerRatio(1))
			tr := NewTransport(nil, retry.Delays())
			tr.Breaker = func(string) *retry.Breaker { return b }
			_, _ = get(t, tr, srv.URL)
			assert.Equal(t, tt.opens, b.State() == retry.BreakerOpen)
		})
	}
}

func TestThrottlePerHost(t *testing.T) {
	srv := newServer(t, status(http.StatusServiceUnavailable))
	clock := retry.NewFakeClock(t0)
	var th *retry.Throttle
	tr := NewTransport(nil, retry.Delays(), retry.WithClock(clock))
	hosts := map[string]int{}
	tr.Throttle = func(host string) *retry.Throttle {
		hosts[host]++
		if th == nil {
			th = retry.NewThrottle(retry.ThrottleClock(clock), retry.ThrottleRand(rand.NewPCG(1, 2)))
		}
		return th
	}
	throttled := 0
	for range 100 {
		// A Throttle's probability changes once per step of its window
		// (5s/16), and is at most 0.9.
		clock.Advance(50 * time.Millisecond)
		if _, err := get(t, tr, srv.URL); errors.Is(err, retry.ErrThrottled) {
			throttled++
		}
	}
	assert.Equal(t, 100-throttled, len(srv.requests()))
	assert.Greater(t, throttled, 70)
	assert.Equal(t, map[string]int{strings.TrimPrefix(srv.URL, "http://"): 100}, hosts, "keyed by host:port")

	t.Run("hedging", func(t *testing.T) {
		srv := newServer(t, status(http.StatusServiceUnavailable))
		b := retry.NewBreaker(retry.BreakerMinCalls(1), retry.BreakerOpenPeriods(retry.Constant(time.Hour)))
		tr := NewHedgingTransport(nil, retry.Constant(time.Hour).Take(1))
		tr.Breaker = func(string) *retry.Breaker { return b }
		code, err := get(t, tr, srv.URL)
		require.NoError(t, err)
		assert.Equal(t, http.StatusServiceUnavailable, code)
		_, err = get(t, tr, srv.URL)
		assert.ErrorIs(t, err, retry.ErrBreakerOpen)
		assert.Len(t, srv.requests(), 1)
	})
}

func mustRequest(t *testing.T, method, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	require.NoError(t, err)
	return req
}
