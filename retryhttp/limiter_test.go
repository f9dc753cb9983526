package retryhttp

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLimiterPerHost checks that every attempt to a host holds a permit of
// that host's Limiter: a request that finds none is refused without being
// sent, another host is not affected, and all permits come back.
func TestLimiterPerHost(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	slow := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		w.WriteHeader(http.StatusOK)
	})
	fast := newServer(t, status(http.StatusOK))
	limiters := map[string]*retry.Limiter{}
	var mu sync.Mutex
	tr := NewTransport(nil, retry.Constant(0).Take(2))
	tr.Limiter = PerHost(func(string) *retry.Limiter { return retry.NewLimiter(retry.LimiterInitial(1)) })
	limiterOf := func(url string) *retry.Limiter {
		req := mustRequest(t, http.MethodGet, url, "")
		mu.Lock()
		defer mu.Unlock()
		if l, ok := limiters[req.URL.Host]; ok {
			return l
		}
		l := tr.Limiter(req.URL.Host)
		limiters[req.URL.Host] = l
		return l
	}
	done := make(chan int)
	go func() {
		code, err := get(t, tr, slow.URL)
		assert.NoError(t, err)
		done <- code
	}()
	<-entered
	assert.Equal(t, 1, limiterOf(slow.URL).InFlight())
	_, err := get(t, tr, slow.URL)
	assert.ErrorIs(t, err, retry.ErrLimited)
	code, err := get(t, tr, fast.URL)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code, "another host has its own Limiter")
	close(release)
	assert.Equal(t, http.StatusOK, <-done)
	assert.Len(t, slow.requests(), 1, "the refused request was not sent")
	assert.Zero(t, limiterOf(slow.URL).InFlight())
	assert.Zero(t, limiterOf(fast.URL).InFlight())
}

// TestLimiterHedging checks that a hedge finding no permit is not sent,
// and that the request is answered by the attempt in flight.
func TestLimiterHedging(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(10 * time.Millisecond) // outlasts the three hedge delays
		w.WriteHeader(http.StatusOK)
	})
	l := retry.NewLimiter(retry.LimiterInitial(1))
	tr := NewHedgingTransport(nil, retry.Constant(time.Millisecond).Take(3))
	tr.Limiter = func(string) *retry.Limiter { return l }
	code, err := get(t, tr, srv.URL)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	assert.Len(t, srv.requests(), 1, "no hedge was sent")
	assert.Zero(t, l.InFlight())
}
