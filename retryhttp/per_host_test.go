package retryhttp

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPerHost(t *testing.T) {
	var made []string
	f := PerHost(func(host string) *retry.Throttle { made = append(made, host); return retry.NewThrottle() })
	a, b := f("a:1"), f("b:1")
	assert.Same(t, a, f("a:1"))
	assert.NotSame(t, a, b)
	assert.Equal(t, []string{"a:1", "b:1"}, made, "newValue gets the host")
	assert.PanicsWithValue(t, "retryhttp: PerHost: nil function", func() { PerHost[retry.Breaker](nil) })

	t.Run("a panic in newValue leaves the host without a value", func(t *testing.T) {
		calls := 0
		f := PerHost(func(host string) *int {
			if calls++; calls == 1 {
				panic("boom")
			}
			return new(int)
		})
		assert.PanicsWithValue(t, "boom", func() { f("h") })
		assert.NotNil(t, f("h"), "the lock was released, and the next request makes the value")
	})
}

// TestPerHostConcurrentFirstUse sends concurrent first requests to a new
// host, on a real loopback server: newValue runs once, and every request
// counts in the same Breaker.
func TestPerHostConcurrentFirstUse(t *testing.T) {
	srv := newServer(t, status(http.StatusOK))
	var made atomic.Int32
	var breakers sync.Map
	tr := NewTransport(nil, retry.Delays())
	perHost := PerHost(func(host string) *retry.Breaker {
		made.Add(1)
		return retry.NewBreaker(retry.BreakerMinCalls(1000))
	})
	tr.Breaker = func(host string) *retry.Breaker {
		b := perHost(host)
		breakers.Store(b, true)
		return b
	}
	const n = 32
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			<-start
			code, err := get(t, tr, srv.URL)
			assert.NoError(t, err)
			assert.Equal(t, http.StatusOK, code)
		})
	}
	close(start)
	wg.Wait()
	assert.Equal(t, int32(1), made.Load())
	count := 0
	breakers.Range(func(k, _ any) bool {
		count++
		assert.Equal(t, uint64(n), k.(*retry.Breaker).Snapshot().Requests)
		return true
	})
	assert.Equal(t, 1, count)
	assert.Len(t, srv.requests(), n)
}

// TestPerHostBounded checks that the hosts kept are bounded, whatever the
// number asked for, and that a host in use keeps its value through a flood
// of hosts asked for once each.
func TestPerHostBounded(t *testing.T) {
	t.Run("PerHostLimit", func(t *testing.T) {
		made := 0
		p := &perHost[int]{newValue: func(string) *int { made++; return new(int) }, limit: PerHostLimit}
		for i := range 10 * PerHostLimit {
			p.get("host-" + strconv.Itoa(i) + ".example:443")
		}
		assert.Equal(t, 10*PerHostLimit, made)
		assert.Equal(t, PerHostLimit, p.n)
		kept := 0
		p.m.Range(func(any, any) bool { kept++; return true })
		assert.Equal(t, PerHostLimit, kept)
	})
	t.Run("a busy host survives a flood", func(t *testing.T) {
		made := map[string]int{}
		p := &perHost[int]{newValue: func(h string) *int { made[h]++; return new(int) }, limit: 4}
		busy := p.get("busy")
		for i := range 1000 {
			require.Same(t, busy, p.get("busy"), "flood host %d", i)
			p.get("flood-" + strconv.Itoa(i))
			require.LessOrEqual(t, p.n, 4)
		}
		assert.Equal(t, 1, made["busy"])
		assert.Len(t, made, 1001)
	})
	t.Run("a dropped host gets a fresh value", func(t *testing.T) {
		p := &perHost[int]{newValue: func(string) *int { return new(int) }, limit: 1}
		a := p.get("a")
		p.get("b") // drops a, the only host
		assert.NotSame(t, a, p.get("a"))
		assert.Equal(t, 1, p.n)
	})
}

// TestPerHostManyHosts sends requests for many hosts through a Transport
// with PerHost, as a proxy whose hosts come from its clients would: one
// real loopback server answers them all (the base transport dials it
// whatever the host), and the hosts kept stay bounded.
func TestPerHostManyHosts(t *testing.T) {
	srv := newServer(t, status(http.StatusOK))
	addr := strings.TrimPrefix(srv.URL, "http://")
	base := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(base.CloseIdleConnections)
	tr := NewTransport(base, retry.Delays())
	p := &perHost[retry.Breaker]{newValue: func(string) *retry.Breaker { return retry.NewBreaker() }, limit: 8}
	tr.Breaker = p.get
	for i := range 50 {
		code, err := get(t, tr, "http://host-"+strconv.Itoa(i)+".example/")
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, code)
	}
	assert.Len(t, srv.requests(), 50)
	assert.Equal(t, 8, p.n)
}
