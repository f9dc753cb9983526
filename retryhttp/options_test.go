package retryhttp

import (
	"errors"
	"net/http"
	"testing"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCallOptions checks the core's options that concern a whole call:
// OnDone, MaxElapsed, MaxRetriesIf, and IfValue, which a Transport refuses.
func TestCallOptions(t *testing.T) {
	t.Run("IfValue panics at construction", func(t *testing.T) {
		reject := retry.IfValue(func(*http.Response) bool { return true })
		assert.PanicsWithValue(t,
			"retryhttp: NewTransport: retry.IfValue is not supported; set Transport.ShouldRetry, which sees the whole response",
			func() { NewTransport(nil, zero(1), reject) })
		assert.Panics(t, func() { NewClient(nil, retry.OnRetry(func(retry.Attempt) {}), reject) })
	})
	t.Run("OnDone sees the give-up, RoundTrip returns the last response", func(t *testing.T) {
		s := newServer(t, status(503))
		var got []retry.Outcome
		client := &http.Client{Transport: NewTransport(newBase(t), zero(2),
			retry.OnDone(func(o retry.Outcome) { got = append(got, o) }))}
		resp, err := client.Get(s.URL)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 503, resp.StatusCode)
		require.Len(t, got, 1)
		assert.Equal(t, 3, got[0].Attempts)
		assert.Equal(t, retry.ErrExhausted, got[0].Reason)
		var se *StatusError
		assert.True(t, errors.As(got[0].Err, &se))
	})
	t.Run("OnDone sees a request sent once", func(t *testing.T) {
		s := newServer(t, status(503))
		var got []retry.Outcome
		client := &http.Client{Transport: NewTransport(newBase(t), zero(2),
			retry.OnDone(func(o retry.Outcome) { got = append(got, o) }))}
		resp, err := client.Post(s.URL, "text/plain", http.NoBody)
		require.NoError(t, err)
		resp.Body.Close()
		require.Len(t, got, 1)
		assert.Equal(t, 1, got[0].Attempts)
		assert.Len(t, s.requests(), 1)
	})
	t.Run("MaxRetriesIf on a status", func(t *testing.T) {
		s := newServer(t, status(429), status(503), status(429), status(200))
		is429 := func(err error) bool {
			var se *StatusError
			return errors.As(err, &se) && se.StatusCode == http.StatusTooManyRequests
		}
		client := &http.Client{Transport: NewTransport(newBase(t), zero(9), retry.MaxRetriesIf(1, is429))}
		resp, err := client.Get(s.URL)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 429, resp.StatusCode, "the second 429 ends the retries and is returned")
		assert.Len(t, s.requests(), 3)
	})
}
