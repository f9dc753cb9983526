package retryhttp

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// body answers with code and the given body.
func body(code int, text string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(code)
		io.WriteString(w, text)
	}
}

// errorPayload is a ShouldRetry that retries a 200 whose body starts with
// {"error", peeking at 9 bytes, and otherwise decides as the default.
func errorPayload(resp *http.Response, err error) bool {
	if err == nil && resp.StatusCode == http.StatusOK {
		head, _ := PeekBody(resp, 9)
		if bytes.Equal(head, []byte(`{"error"`+`:`)) {
			return true
		}
	}
	return DefaultShouldRetry(resp, err)
}

func TestShouldRetryPayload(t *testing.T) {
	busy := `{"error":"busy, try again"}`
	t.Run("2xx with an error retried", func(t *testing.T) {
		srv := newServer(t, body(200, busy), body(200, busy), body(200, `{"ok":true}`))
		tr := &tracker{base: newBase(t)}
		var codes []int
		rt := NewTransport(tr, zero(5), retry.WithClock(retry.NewFakeClock(t0)),
			retry.OnRetry(func(a retry.Attempt) {
				var se *StatusError
				if assert.ErrorAs(t, a.Err, &se) {
					codes = append(codes, se.StatusCode)
				}
			}))
		rt.ShouldRetry = errorPayload
		resp, err := rt.RoundTrip(mustGet(t, srv.URL))
		require.NoError(t, err)
		assert.Equal(t, `{"ok":true}`, readAll(t, resp))
		assert.Equal(t, wantEvents(3), tr.events()[:5])
		for i := range 2 {
			assert.Equal(t, int64(len(busy)), tr.body(i).read.Load(), "attempt %d drained", i+1)
		}
		assert.Equal(t, []int{200, 200}, codes)
	})
	t.Run("until exhausted: the last response, body whole", func(t *testing.T) {
		big := `{"error":"busy"}` + strings.Repeat(" ", 100_000)
		srv := newServer(t, body(200, big))
		rt := NewTransport(newBase(t), zero(2), retry.WithClock(retry.NewFakeClock(t0)))
		rt.ShouldRetry = errorPayload
		resp, err := rt.RoundTrip(mustGet(t, srv.URL))
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode)
		assert.True(t, readAll(t, resp) == big, "the body reached the caller changed")
		assert.Len(t, srv.requests(), 3)
	})
	t.Run("decided by the status alone, nothing peeked", func(t *testing.T) {
		srv := newServer(t, status(503), status(404))
		tr := &tracker{base: newBase(t)}
		rt := NewTransport(tr, zero(5), retry.WithClock(retry.NewFakeClock(t0)))
		rt.ShouldRetry = errorPayload
		resp, err := rt.RoundTrip(mustGet(t, srv.URL))
		require.NoError(t, err)
		assert.Equal(t, 404, resp.StatusCode)
		assert.IsType(t, &trackedBody{}, resp.Body, "the body was not wrapped")
		assert.Equal(t, "attempt 2", readAll(t, resp))
	})
}

func TestShouldRetryReplacesRetryStatusAndRetryError(t *testing.T) {
	t.Run("statuses", func(t *testing.T) {
		srv := newServer(t, status(409), status(503), status(200))
		rt := NewTransport(newBase(t), zero(5), retry.WithClock(retry.NewFakeClock(t0)))
		rt.RetryStatus = func(int) bool { t.Error("RetryStatus called"); return true }
		rt.ShouldRetry = func(resp *http.Response, err error) bool {
			require.NoError(t, err)
			return resp.StatusCode == 409
		}
		resp, err := rt.RoundTrip(mustGet(t, srv.URL))
		require.NoError(t, err)
		assert.Equal(t, 503, resp.StatusCode, "503 is not retried by this ShouldRetry")
		assert.Equal(t, "attempt 2", readAll(t, resp))
	})
	t.Run("errors", func(t *testing.T) {
		srv := newServer(t, hangUp, reset, status(200))
		rt := NewTransport(newBase(t), zero(5), retry.WithClock(retry.NewFakeClock(t0)))
		rt.RetryError = func(error) bool { t.Error("RetryError called"); return true }
		var seen []error
		rt.ShouldRetry = func(resp *http.Response, err error) bool {
			assert.Nil(t, resp)
			seen = append(seen, err)
			return errors.Is(err, io.EOF) // not a reset
		}
		resp, err := rt.RoundTrip(mustGet(t, srv.URL))
		assert.Nil(t, resp)
		assert.ErrorIs(t, err, syscall.ECONNRESET, "the error ShouldRetry refused, as it is")
		var re *retry.Error
		assert.False(t, errors.As(err, &re))
		assert.Len(t, seen, 2)
		assert.Len(t, srv.requests(), 2)
	})
}

func TestShouldRetryKeepsTheRules(t *testing.T) {
	always := func(*http.Response, error) bool { return true }
	t.Run("Retry-After", func(t *testing.T) {
		srv := newServer(t, status(503, "Retry-After", "7"), status(200))
		clock := retry.NewFakeClock(t0)
		rt := NewTransport(newBase(t), retry.Constant(time.Second).Take(3), retry.WithClock(clock))
		rt.ShouldRetry = errorPayload
		resp, err := rt.RoundTrip(mustGet(t, srv.URL))
		require.NoError(t, err)
		assert.Equal(t, "attempt 2", readAll(t, resp))
		assert.Equal(t, []time.Duration{7 * time.Second}, clock.Sleeps())
	})
	t.Run("a POST without a key is sent once, not judged", func(t *testing.T) {
		srv := newServer(t, status(503), status(200))
		rt := NewTransport(newBase(t), zero(3), retry.WithClock(retry.NewFakeClock(t0)))
		rt.ShouldRetry = func(*http.Response, error) bool { t.Error("ShouldRetry called"); return true }
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("x"))
		require.NoError(t, err)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, 503, resp.StatusCode)
		resp.Body.Close()
		assert.Len(t, srv.requests(), 1)
	})
	t.Run("a body without GetBody is sent once", func(t *testing.T) {
		srv := newServer(t, status(503), status(200))
		rt := NewTransport(newBase(t), zero(3), retry.WithClock(retry.NewFakeClock(t0)))
		rt.ShouldRetry = always
		req, err := http.NewRequest(http.MethodPut, srv.URL, plainReader{strings.NewReader("x")})
		require.NoError(t, err)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, 503, resp.StatusCode)
		resp.Body.Close()
		assert.Len(t, srv.requests(), 1)
	})
}

// TestShouldRetryUnderAttemptTimeout checks that an attempt cut short by
// AttemptTimeout is retried without ShouldRetry's say, and that the timeout
// bounds ShouldRetry's peek at a body that stalls.
func TestShouldRetryUnderAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 20 * time.Millisecond
		hang := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
		stall := func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(200)
			io.WriteString(w, `{"err`)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
		srv, base := newPipeServer(t, hang, stall, body(200, `{"ok":true}`))
		var judged []string
		rt := NewTransport(base, zero(5), retry.WithClock(retry.NewFakeClock(t0)), retry.AttemptTimeout(timeout))
		rt.ShouldRetry = func(resp *http.Response, err error) bool {
			if err != nil {
				judged = append(judged, "error: "+err.Error())
				return false
			}
			head, err := PeekBody(resp, 9)
			judged = append(judged, string(head))
			return err != nil || string(head) == `{"error":`
		}
		start := time.Now()
		resp, err := rt.RoundTrip(mustGet(t, srv.URL))
		require.NoError(t, err)
		assert.Equal(t, 2*timeout, time.Since(start), "two timeouts, the second in the peek")
		assert.Equal(t, `{"ok":true}`, readAll(t, resp))
		assert.Equal(t, []string{`{"err`, `{"ok":tru`}, judged)
		assert.Len(t, srv.requests(), 3)
	})
}

// TestShouldRetryPanics checks that a panicking ShouldRetry leaves no
// response body open.
func TestShouldRetryPanics(t *testing.T) {
	srv := newServer(t, status(200))
	tr := &tracker{base: newBase(t)}
	rt := NewTransport(tr, zero(3), retry.WithClock(retry.NewFakeClock(t0)))
	rt.ShouldRetry = func(resp *http.Response, err error) bool {
		PeekBody(resp, 3)
		panic("classifier bug")
	}
	assert.PanicsWithValue(t, "classifier bug", func() { rt.RoundTrip(mustGet(t, srv.URL)) })
	assert.Equal(t, []string{"send 1", "close 1"}, tr.events())
}

func TestDefaultShouldRetry(t *testing.T) {
	for code := 100; code < 600; code++ {
		assert.Equal(t, DefaultRetryStatus(code), DefaultShouldRetry(&http.Response{StatusCode: code}, nil), "status %d", code)
	}
	assert.True(t, DefaultShouldRetry(nil, syscall.ECONNRESET))
	assert.False(t, DefaultShouldRetry(nil, io.EOF))
	assert.False(t, DefaultShouldRetry(nil, retry.Permanent(syscall.ECONNRESET)))
}
