package retryhttp

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

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
