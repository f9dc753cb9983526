package retryhttp

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWithLogger: retry.WithLogger on a Transport logs each retry, with
// the status error, and the give-up on a too long pushback.
func TestWithLogger(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
	srv := newServer(t, status(503), status(429, "Retry-After", "3600"))
	clock := retry.NewFakeClock(t0)
	rt := NewTransport(newBase(t), retry.Constant(time.Second).Take(3), retry.WithClock(clock), retry.WithLogger(logger))
	resp, err := rt.RoundTrip(mustGet(t, srv.URL))
	require.NoError(t, err)
	assert.Equal(t, 429, resp.StatusCode)
	resp.Body.Close()
	assert.Equal(t, `level=INFO msg=retry retry.attempt=1 retry.delay=1s error="retryhttp: response status 503 Service Unavailable"
level=WARN msg="retry gave up" retry.reason=pushback_too_long retry.attempts=2 retry.call.duration=1s error="retry: gave up after 2 attempts: server asked to wait 1h0m0s, more than MaxPushback (1m0s): last error: retryhttp: response status 429 Too Many Requests"
`, buf.String())
}
