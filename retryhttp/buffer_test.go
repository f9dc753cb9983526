package retryhttp

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readCounter is a request body without GetBody that counts the bytes read
// from it and its Close calls. http.Transport reads and closes a request body
// on a goroutine of its own, hence the atomics.
type readCounter struct {
	r      io.Reader
	read   atomic.Int64
	closed atomic.Int32
}

func (b *readCounter) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read.Add(int64(n))
	return n, err
}

func (b *readCounter) Close() error { b.closed.Add(1); return nil }

// unrewindable returns a request whose body, r, has no GetBody.
func unrewindable(t *testing.T, method, url string, r io.Reader) (*http.Request, *readCounter) {
	t.Helper()
	body := &readCounter{r: r}
	req, err := http.NewRequest(method, url, body)
	require.NoError(t, err)
	require.Nil(t, req.GetBody)
	return req, body
}

func TestBufferBody(t *testing.T) {
	const limit = 1024
	for _, tt := range []struct {
		name     string
		size     int
		retried  bool
		length   string // the Content-Length the server sees
		attempts int
	}{
		{"one below the limit", limit - 1, true, strconv.Itoa(limit - 1), 3},
		{"exactly at the limit", limit, true, strconv.Itoa(limit), 3},
		{"one above the limit", limit + 1, false, "", 1},
		{"far above the limit", 100 * limit, false, "", 1},
		{"empty", 0, true, "0", 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			payload := strings.Repeat("0123456789abcdef", tt.size/16+1)[:tt.size]
			srv := newServer(t, status(503), status(500), status(200))
			rt := NewTransport(newBase(t), zero(3), retry.WithClock(retry.NewFakeClock(t0)))
			rt.BufferBody = limit
			req, body := unrewindable(t, http.MethodPut, srv.URL, strings.NewReader(payload))
			resp, err := rt.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
			reqs := srv.requests()
			require.Len(t, reqs, tt.attempts)
			for i, r := range reqs {
				assert.True(t, r.body == payload, "attempt %d: body of %d bytes, want %d", i+1, len(r.body), len(payload))
				assert.Equal(t, tt.length, r.header.Get("Content-Length"), "attempt %d", i+1)
			}
			if tt.retried {
				assert.Equal(t, 200, resp.StatusCode)
			} else {
				assert.Equal(t, 503, resp.StatusCode)
			}
			// The server got every byte, so all were read, once.
			assert.EqualValues(t, len(payload), body.read.Load())
			if tt.retried {
				// Buffered, the body was closed before the first attempt;
				// streamed, it is http.Transport's to close, in its own time.
				assert.EqualValues(t, 1, body.closed.Load())
			}
			assert.Nil(t, req.GetBody, "the caller's request is unchanged")
		})
	}
}

// readingBase is a base that reads and closes each request's body before
// answering with code, as a server that reads everything would, and records
// the requests and their bodies.
type readingBase struct {
	code   int
	sent   []*http.Request
	bodies []string
	err    error // of the last body read
}

func (b *readingBase) RoundTrip(req *http.Request) (*http.Response, error) {
	b.sent = append(b.sent, req)
	var body []byte
	if req.Body != nil {
		body, b.err = io.ReadAll(req.Body)
		req.Body.Close()
		if b.err != nil {
			return nil, b.err
		}
	}
	b.bodies = append(b.bodies, string(body))
	return &http.Response{StatusCode: b.code, Body: http.NoBody}, nil
}

// TestBufferBodyStreamed checks a body past the limit, read and closed by
// the base: it arrives whole, the bytes read ahead first, and closing it
// closes the caller's.
func TestBufferBodyStreamed(t *testing.T) {
	payload := strings.Repeat("0123456789abcdef", 100)
	base := &readingBase{code: 503}
	rt := NewTransport(base, zero(3), retry.WithClock(retry.NewFakeClock(t0)))
	rt.BufferBody = 100
	req, body := unrewindable(t, http.MethodPut, "http://example.test/", iotest.HalfReader(strings.NewReader(payload)))
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, 503, resp.StatusCode)
	assert.Same(t, req, resp.Request)
	require.Equal(t, []string{payload}, base.bodies)
	assert.NotSame(t, req, base.sent[0], "a copy, whose body starts with the bytes read ahead")
	assert.EqualValues(t, len(payload), body.read.Load())
	assert.EqualValues(t, 1, body.closed.Load())
}

func TestBufferBodyKnownLength(t *testing.T) {
	base := &readingBase{code: 503}
	rt := NewTransport(base, zero(3), retry.WithClock(retry.NewFakeClock(t0)))
	rt.BufferBody = 10
	req, body := unrewindable(t, http.MethodPut, "http://example.test/", strings.NewReader("0123456789a"))
	req.ContentLength = 11
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, 503, resp.StatusCode)
	require.Len(t, base.sent, 1)
	assert.Same(t, req, base.sent[0], "too long by its ContentLength: sent as it is, nothing read ahead")
	assert.Equal(t, []string{"0123456789a"}, base.bodies)
	assert.EqualValues(t, 1, body.closed.Load())
}

// TestBufferBodyContentLength checks that a buffered body keeps a known
// ContentLength and gets its length when it was unknown.
func TestBufferBodyContentLength(t *testing.T) {
	for _, cl := range []int64{-1, 0, 5} {
		t.Run(strconv.FormatInt(cl, 10), func(t *testing.T) {
			base := &readingBase{code: 503}
			rt := NewTransport(base, zero(1), retry.WithClock(retry.NewFakeClock(t0)))
			rt.BufferBody = 10
			req, _ := unrewindable(t, http.MethodPut, "http://example.test/", strings.NewReader("01234"))
			req.ContentLength = cl
			_, err := rt.RoundTrip(req)
			require.NoError(t, err)
			require.Len(t, base.sent, 2)
			for _, r := range base.sent {
				assert.EqualValues(t, 5, r.ContentLength)
			}
			assert.Equal(t, []string{"01234", "01234"}, base.bodies)
			assert.Equal(t, cl, req.ContentLength)
		})
	}
}

func TestBufferBodyOnlyIfRetryable(t *testing.T) {
	base := &readingBase{code: 503}
	rt := NewTransport(base, zero(3), retry.WithClock(retry.NewFakeClock(t0)))
	rt.BufferBody = 1 << 20
	req, _ := unrewindable(t, http.MethodPost, "http://example.test/", strings.NewReader("order"))
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, 503, resp.StatusCode)
	require.Len(t, base.sent, 1)
	assert.Same(t, req, base.sent[0], "a POST without a key is not buffered")
}

func TestBufferBodyReadError(t *testing.T) {
	errBroken := errors.New("disk on fire")
	const limit = 100
	t.Run("within the limit: nothing sent", func(t *testing.T) {
		srv := newServer(t, status(200))
		rt := NewTransport(newBase(t), zero(3), retry.WithClock(retry.NewFakeClock(t0)))
		rt.BufferBody = limit
		req, body := unrewindable(t, http.MethodPut, srv.URL,
			io.MultiReader(strings.NewReader("partial"), iotest.ErrReader(errBroken)))
		resp, err := rt.RoundTrip(req)
		assert.Nil(t, resp)
		assert.Equal(t, errBroken, err, "the read error as it is")
		assert.EqualValues(t, 1, body.closed.Load())
		assert.Empty(t, srv.requests())
	})
	t.Run("past the limit: sent once, the error from the base", func(t *testing.T) {
		base := &readingBase{code: 200}
		rt := NewTransport(base, zero(3), retry.WithClock(retry.NewFakeClock(t0)))
		rt.BufferBody = limit
		req, body := unrewindable(t, http.MethodPut, "http://example.test/",
			io.MultiReader(strings.NewReader(strings.Repeat("x", 2*limit)), iotest.ErrReader(errBroken)))
		resp, err := rt.RoundTrip(req)
		assert.Nil(t, resp)
		assert.Equal(t, errBroken, err)
		assert.Len(t, base.sent, 1)
		assert.EqualValues(t, 2*limit, body.read.Load(), "every byte, none skipped or repeated")
		assert.EqualValues(t, 1, body.closed.Load())
	})
	t.Run("past the limit, over the network", func(t *testing.T) {
		srv := newServer(t, status(200))
		rt := NewTransport(newBase(t), zero(3), retry.WithClock(retry.NewFakeClock(t0)))
		rt.BufferBody = limit
		req, _ := unrewindable(t, http.MethodPut, srv.URL,
			io.MultiReader(strings.NewReader(strings.Repeat("x", 2*limit)), iotest.ErrReader(errBroken)))
		resp, err := rt.RoundTrip(req)
		assert.Nil(t, resp)
		assert.ErrorIs(t, err, errBroken, "http.Transport reports the body's error")
		assert.LessOrEqual(t, len(srv.requests()), 1)
	})
}

func TestBufferBodyOff(t *testing.T) {
	for _, limit := range []int64{0, -1} {
		t.Run(strconv.FormatInt(limit, 10), func(t *testing.T) {
			srv := newServer(t, status(503), status(200))
			rt := NewTransport(newBase(t), zero(3), retry.WithClock(retry.NewFakeClock(t0)))
			rt.BufferBody = limit
			req, _ := unrewindable(t, http.MethodPut, srv.URL, strings.NewReader("x"))
			resp, err := rt.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, 503, resp.StatusCode)
			assert.Len(t, srv.requests(), 1)
		})
	}
}
