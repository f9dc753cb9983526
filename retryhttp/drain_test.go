package retryhttp

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKeepAlive counts the connections the server accepted: drained failed
// attempts give their connection back to the pool, closing them unread or
// stopping at the drain limit costs a connection each.
func TestKeepAlive(t *testing.T) {
	// big answers with a 4 KiB body of known length: the client sees its
	// end with its last byte, so a drain that reads exactly 4 KiB frees
	// the connection. (Chunked, the final empty chunk may arrive after
	// the drain stops, and the connection would be lost or not by luck.)
	big := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "4096")
			w.WriteHeader(code)
			io.WriteString(w, strings.Repeat("e", 4096))
		}
	}
	tests := []struct {
		name       string
		handlers   []http.HandlerFunc
		drainLimit int64
		conns      int32
	}{
		{"small bodies drained", []http.HandlerFunc{status(503), status(500), status(502), status(200)}, 0, 1},
		{"bodies within the limit", []http.HandlerFunc{big(503), big(500), status(200)}, 4096, 1},
		{"bodies over the limit", []http.HandlerFunc{big(503), big(500), status(200)}, 1024, 3},
		{"no draining", []http.HandlerFunc{status(503), status(500), status(200)}, -1, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.handlers...)
			tr := &tracker{base: newBase(t)}
			rt := NewTransport(tr, zero(5), retry.WithClock(retry.NewFakeClock(t0)))
			rt.DrainLimit = tt.drainLimit
			resp, err := rt.RoundTrip(mustGet(t, srv.URL))
			require.NoError(t, err)
			assert.Equal(t, 200, resp.StatusCode)
			readAll(t, resp)
			n := len(tt.handlers)
			events := tr.events()
			require.GreaterOrEqual(t, len(events), 2*n-1, "events %q", events)
			assert.Equal(t, wantEvents(n), events[:2*n-1])
			for i := range n - 1 {
				read := tr.body(i).read.Load()
				switch {
				case tt.drainLimit < 0:
					assert.Zero(t, read)
				case tt.drainLimit > 0:
					assert.LessOrEqual(t, read, tt.drainLimit)
				}
			}
			assert.Equal(t, tt.conns, srv.conns.Load())
		})
	}
}

// TestEndlessBody runs a server whose 503s never end their body: each failed
// attempt costs at most DefaultDrainLimit bytes and its connection, never a
// hang, and the final endless response reaches the caller unread.
func TestEndlessBody(t *testing.T) {
	t.Run("then 200", func(t *testing.T) {
		srv := newServer(t, endless(503), endless(503), status(200))
		tr := &tracker{base: newBase(t)}
		rt := NewTransport(tr, zero(3), retry.WithClock(retry.NewFakeClock(t0)))
		resp, err := rt.RoundTrip(mustGet(t, srv.URL))
		require.NoError(t, err)
		assert.Equal(t, "attempt 3", readAll(t, resp))
		for i := range 2 {
			assert.Equal(t, int64(DefaultDrainLimit), tr.body(i).read.Load())
		}
		events := tr.events()
		require.GreaterOrEqual(t, len(events), 5, "events %q", events)
		assert.Equal(t, wantEvents(3), events[:5])
	})
	t.Run("until exhausted", func(t *testing.T) {
		srv := newServer(t, endless(503))
		tr := &tracker{base: newBase(t)}
		rt := NewTransport(tr, zero(2), retry.WithClock(retry.NewFakeClock(t0)))
		resp, err := rt.RoundTrip(mustGet(t, srv.URL))
		require.NoError(t, err)
		assert.Equal(t, 503, resp.StatusCode)
		assert.Zero(t, tr.body(2).read.Load())
		buf := make([]byte, 100_000)
		n, err := io.ReadFull(resp.Body, buf)
		require.NoError(t, err)
		assert.Equal(t, strings.Repeat("x", n), string(buf))
		require.NoError(t, resp.Body.Close())
		assert.Len(t, srv.requests(), 3)
	})
}
