package retryhttp

import (
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSharedBudget runs 200 concurrent clients, each with its own Transport
// and all sharing one Budget, against a server that is down (503) for a while
// and then recovers. Every request the server receives is counted: however
// the retries interleave, they stay within the Budget's bound of
// requests·(1+ratio) + reserve, where without a Budget the outage would have
// drawn four attempts per request.
func TestSharedBudget(t *testing.T) {
	const (
		clients = 200
		during  = 3 // requests per client while the server is down
		after   = 2 // requests per client once it has recovered
		ratio   = 0.1
		reserve = 10
		retries = 3
	)
	var down atomic.Bool
	down.Store(true)
	var received atomic.Int64
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		if down.Load() {
			status(503)(w, r)
			return
		}
		status(200)(w, r)
	})
	budget := retry.NewBudget(ratio, reserve)
	base := newBase(t)
	var retried atomic.Int64
	transports := make([]*Transport, clients)
	for i := range transports {
		transports[i] = NewTransport(base, zero(retries), retry.WithBudget(budget),
			retry.OnRetry(func(retry.Attempt) { retried.Add(1) }))
	}

	// run sends n requests from every client at once and returns how many
	// responses had each status.
	run := func(n int) map[int]int {
		var mu sync.Mutex
		codes := map[int]int{}
		var wg sync.WaitGroup
		for _, rt := range transports {
			wg.Go(func() {
				client := &http.Client{Transport: rt}
				for range n {
					resp, err := client.Get(srv.URL)
					if !assert.NoError(t, err) {
						return
					}
					readAll(t, resp)
					mu.Lock()
					codes[resp.StatusCode]++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return codes
	}

	codes := run(during)
	assert.Equal(t, map[int]int{503: clients * during}, codes)
	gotDuring := received.Load()
	requests := int64(clients * during)
	bound := int64(float64(requests)*(1+ratio)) + reserve
	t.Logf("outage: %d requests, %d reached the server (bound %d, %d without a budget)",
		requests, gotDuring, bound, requests*(1+retries))
	assert.GreaterOrEqual(t, gotDuring, requests)
	assert.LessOrEqual(t, gotDuring, bound)
	assert.Equal(t, gotDuring-requests, retried.Load())

	down.Store(false)
	codes = run(after)
	assert.Equal(t, map[int]int{200: clients * after}, codes)

	requests += clients * after
	total := received.Load()
	require.Len(t, srv.requests(), int(total))
	assert.LessOrEqual(t, total, int64(float64(requests)*(1+ratio))+reserve)
	assert.Equal(t, total-requests, retried.Load(), "a healthy server needs no retries")
}

// funcBase is a base RoundTripper that answers with a function.
type funcBase func(*http.Request) (*http.Response, error)

func (f funcBase) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestSentOnceOutsideBudget checks that a request sent once, which goes
// through retry.Retry when the Transport has options (so that
// AttemptTimeout applies to it), still neither deposits into the Transport's
// Budget nor draws from it, and that no If predicate sees its error.
func TestSentOnceOutsideBudget(t *testing.T) {
	var answers []int // status codes still to give, then 200
	base := funcBase(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodPost {
			return nil, errors.New("POST failed")
		}
		code := 200
		if len(answers) > 0 {
			code, answers = answers[0], answers[1:]
		}
		return &http.Response{StatusCode: code, Body: http.NoBody, Request: req}, nil
	})
	var judged []error
	// Each call deposits half a token, a retry costs one, the reserve is one.
	rt := NewTransport(base, zero(1), retry.WithClock(retry.NewFakeClock(t0)),
		retry.WithBudget(retry.NewBudget(0.5, 1)), retry.AttemptTimeout(time.Minute),
		retry.If(func(err error) bool { judged = append(judged, err); return true }))
	get := func() int {
		t.Helper()
		resp, err := rt.RoundTrip(mustGet(t, "http://example.test/"))
		require.NoError(t, err)
		return resp.StatusCode
	}

	answers = []int{503}
	require.Equal(t, 200, get(), "the reserve pays for the first retry")
	for range 4 {
		req, err := http.NewRequest(http.MethodPost, "http://example.test/", nil)
		require.NoError(t, err)
		resp, err := rt.RoundTrip(req)
		assert.Nil(t, resp)
		assert.EqualError(t, err, "POST failed")
	}
	// Had the four POSTs deposited, the balance would be back to one token.
	answers = []int{503}
	assert.Equal(t, 503, get(), "half a token does not pay for a retry")
	require.Len(t, judged, 2, "If sees only the GETs' failures")
}
