package retryhttp

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// blockingClock is a Clock whose Sleep signals on sleeping, then waits for
// its context to end.
type blockingClock struct{ sleeping chan time.Duration }

func (c blockingClock) Now() time.Time { return t0 }

func (c blockingClock) Sleep(ctx context.Context, d time.Duration) error {
	c.sleeping <- d
	<-ctx.Done()
	return ctx.Err()
}

func TestCancelWhileWaiting(t *testing.T) {
	errCause := errors.New("caller lost interest")
	for _, first := range []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"after a 503", status(503, "Retry-After", "5")},
		{"after a reset", reset},
	} {
		t.Run(first.name, func(t *testing.T) {
			srv := newServer(t, first.handler, status(200))
			tr := &tracker{base: newBase(t)}
			clock := blockingClock{make(chan time.Duration)}
			rt := NewTransport(tr, retry.Constant(time.Second), retry.WithClock(clock))
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			require.NoError(t, err)

			type result struct {
				resp *http.Response
				err  error
			}
			done := make(chan result)
			go func() {
				resp, err := rt.RoundTrip(req)
				done <- result{resp, err}
			}()
			<-clock.sleeping
			// The failed attempt's response was closed before the wait began.
			if first.name == "after a 503" {
				assert.Equal(t, []string{"send 1", "close 1"}, tr.events())
				assert.True(t, tr.body(0).closed.Load())
			}
			cancel(errCause)
			r := <-done
			assert.Nil(t, r.resp)
			assert.ErrorIs(t, r.err, errCause)
			assert.Len(t, srv.requests(), 1)
		})
	}
}

// closeRecorder is a request body that records being closed.
type closeRecorder struct {
	io.Reader
	closed bool
}

func (b *closeRecorder) Close() error { b.closed = true; return nil }

func TestContextDoneBeforeFirstAttempt(t *testing.T) {
	srv := newServer(t, status(200))
	rt := NewTransport(newBase(t), zero(3))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	body := &closeRecorder{Reader: strings.NewReader("payload")}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, srv.URL, body)
	require.NoError(t, err)
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("payload")), nil }
	resp, err := rt.RoundTrip(req)
	assert.Nil(t, resp)
	assert.ErrorIs(t, err, context.Canceled)
	assert.True(t, body.closed, "RoundTrip must close the request body")
	assert.Empty(t, srv.requests())
}

// TestAttemptTimeout runs a server that never answers the first attempt
// against retry.AttemptTimeout: the attempt is abandoned after the timeout
// and retried, and the body of the second attempt's response, written only
// once the test has the response in hand, is readable long after that
// attempt's timeout would have ended. In a synctest bubble on an in-memory
// network every duration is exact.
func TestAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 10 * time.Millisecond
		bodyGo := make(chan struct{})
		hang := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
		slowBody := func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			<-bodyGo
			io.WriteString(w, "worth the wait")
		}
		srv, base := newPipeServer(t, hang, slowBody)
		var errs []error
		rt := NewTransport(base, zero(3), retry.WithClock(retry.NewFakeClock(t0)),
			retry.AttemptTimeout(timeout),
			retry.If(func(error) bool { return false }), // the timeout is retried anyway
			retry.OnRetry(func(a retry.Attempt) { errs = append(errs, a.Err) }))

		start := time.Now()
		resp, err := rt.RoundTrip(mustGet(t, srv.URL))
		require.NoError(t, err)
		assert.Equal(t, timeout, time.Since(start), "one timeout, then the headers at once")
		assert.Equal(t, 200, resp.StatusCode)
		require.Len(t, errs, 1)
		assert.ErrorIs(t, errs[0], context.DeadlineExceeded)
		var ne net.Error
		if assert.ErrorAs(t, errs[0], &ne) {
			assert.True(t, ne.Timeout())
		}

		time.Sleep(time.Hour) // far past the second attempt's timeout
		close(bodyGo)
		assert.Equal(t, "worth the wait", readAll(t, resp))
		assert.Len(t, srv.requests(), 2)
	})
}

func TestAttemptTimeoutEveryAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 5 * time.Millisecond
		srv, base := newPipeServer(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		rt := NewTransport(base, zero(2), retry.WithClock(retry.NewFakeClock(t0)), retry.AttemptTimeout(timeout))
		client := &http.Client{Transport: rt}
		start := time.Now()
		resp, err := client.Get(srv.URL)
		assert.Nil(t, resp)
		assert.Equal(t, 3*timeout, time.Since(start))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		var ue interface{ Timeout() bool }
		if assert.ErrorAs(t, err, &ue) {
			assert.True(t, ue.Timeout())
		}
		// Each request reached the server before its attempt's timeout: in the
		// bubble, the clock moves only once everything else is blocked.
		assert.Len(t, srv.requests(), 3)
	})
}

// TestAttemptTimeoutSentOnce checks that retry.AttemptTimeout applies to a
// request that is sent only once, such as a POST without an idempotency key:
// its one attempt is bounded by the timeout, its timeout error is returned
// and it is not retried; a response that arrives in time keeps its body
// readable under the request's context alone.
func TestAttemptTimeoutSentOnce(t *testing.T) {
	const timeout = 50 * time.Millisecond
	post := func(t *testing.T, url string) *http.Request {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"order":42}`))
		require.NoError(t, err)
		return req
	}
	t.Run("timed out", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, base := newPipeServer(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
			var retried int
			rt := NewTransport(base, zero(3), retry.AttemptTimeout(timeout),
				retry.OnRetry(func(retry.Attempt) { retried++ }))
			start := time.Now()
			resp, err := rt.RoundTrip(post(t, srv.URL))
			assert.Equal(t, timeout, time.Since(start))
			assert.Nil(t, resp)
			assert.Equal(t, errAttemptTimeout, err, "the timeout error itself, not a *retry.Error")
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			synctest.Wait()
			reqs := srv.requests()
			require.Len(t, reqs, 1)
			assert.Equal(t, `{"order":42}`, reqs[0].body)
			assert.Zero(t, retried)
		})
	})
	t.Run("answered in time", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			bodyGo := make(chan struct{})
			srv, base := newPipeServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusServiceUnavailable)
				w.(http.Flusher).Flush()
				<-bodyGo
				io.WriteString(w, "try again later")
			})
			rt := NewTransport(base, zero(3), retry.AttemptTimeout(timeout))
			resp, err := rt.RoundTrip(post(t, srv.URL))
			require.NoError(t, err)
			assert.Equal(t, 503, resp.StatusCode, "a POST without a key is not retried")
			time.Sleep(time.Hour)
			close(bodyGo)
			assert.Equal(t, "try again later", readAll(t, resp))
			assert.Len(t, srv.requests(), 1)
		})
	})
}

// TestAttemptTimeoutResponses checks responses that got their headers in
// time under an AttemptTimeout: a body-less one and a failed attempt's one
// are released, and a 101 response keeps its writable body.
func TestAttemptTimeoutResponses(t *testing.T) {
	opts := []retry.Option{retry.WithClock(retry.NewFakeClock(t0)), retry.AttemptTimeout(time.Minute)}
	t.Run("HEAD", func(t *testing.T) {
		srv := newServer(t, status(503), status(200))
		rt := NewTransport(newBase(t), zero(2), opts...)
		req, err := http.NewRequest(http.MethodHead, srv.URL, nil)
		require.NoError(t, err)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, http.NoBody, resp.Body)
	})
	t.Run("timeout beyond the request's deadline", func(t *testing.T) {
		srv := newServer(t, status(503), status(200))
		rt := NewTransport(newBase(t), zero(2), retry.WithClock(retry.NewFakeClock(t0)), retry.AttemptTimeout(time.Hour))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		require.NoError(t, err)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, "attempt 2", readAll(t, resp))
	})
	t.Run("keep-alive reuse", func(t *testing.T) {
		srv := newServer(t, status(503), status(500), status(200))
		rt := NewTransport(newBase(t), zero(2), opts...)
		resp, err := rt.RoundTrip(mustGet(t, srv.URL))
		require.NoError(t, err)
		assert.Equal(t, "attempt 3", readAll(t, resp))
		assert.EqualValues(t, 1, srv.conns.Load())
	})
	t.Run("101 Switching Protocols", func(t *testing.T) {
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			c, brw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				panic(err)
			}
			defer c.Close()
			io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
			line, _ := brw.ReadString('\n')
			io.WriteString(c, strings.ToUpper(line))
		})
		rt := NewTransport(newBase(t), zero(2), opts...)
		req := mustGet(t, srv.URL)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "echo")
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		require.Equal(t, 101, resp.StatusCode)
		rw, ok := resp.Body.(io.ReadWriteCloser)
		require.True(t, ok, "the body of a 101 must stay writable, got %T", resp.Body)
		_, err = io.WriteString(rw, "hello\n")
		require.NoError(t, err)
		got, err := io.ReadAll(rw)
		require.NoError(t, err)
		assert.Equal(t, "HELLO\n", string(got))
		require.NoError(t, rw.Close())
	})
}
