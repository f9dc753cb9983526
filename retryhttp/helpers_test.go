package retryhttp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// t0 is the start of every fake clock: whole seconds, so HTTP-dates built
// from it are exact.
var t0 = time.Date(2030, time.January, 2, 3, 4, 5, 0, time.UTC)

// recorded is what a test server saw of one request.
type recorded struct {
	method string
	header http.Header
	body   string
}

// server is an HTTP server that answers its n-th request (from 0) with the
// n-th handler, repeating the last one, and records every request and every
// new connection.
type server struct {
	URL      string
	mu       sync.Mutex
	reqs     []recorded
	conns    atomic.Int32
	handlers []http.HandlerFunc
}

// newServer starts a server on a loopback port, closed when the test ends.
func newServer(t testing.TB, handlers ...http.HandlerFunc) *server {
	t.Helper()
	s := &server{handlers: handlers}
	hs := httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	hs.Config.ConnState = s.connState
	hs.Start()
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	return s
}

func (s *server) connState(_ net.Conn, st http.ConnState) {
	if st == http.StateNew {
		s.conns.Add(1)
	}
}

// newPipeServer starts a server on an in-memory network, for tests inside a
// testing/synctest bubble, where a goroutine blocked on a real socket would
// keep the bubble's clock from advancing: every connection is a net.Pipe,
// whose reads and writes block on channels. It returns the server and a base
// http.Transport that dials it whatever the URL's host; both are closed when
// the test ends. Call it inside the bubble.
func newPipeServer(t testing.TB, handlers ...http.HandlerFunc) (*server, *http.Transport) {
	t.Helper()
	s := &server{handlers: handlers, URL: "http://pipe.test"}
	ln := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	hs := &http.Server{Handler: http.HandlerFunc(s.serve), ConnState: s.connState}
	go hs.Serve(ln)
	base := &http.Transport{DialContext: ln.dial, MaxIdleConnsPerHost: 256}
	t.Cleanup(func() {
		base.CloseIdleConnections()
		hs.Close()
	})
	return s, base
}

// pipeListener is a net.Listener whose connections come from its dial method.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, srv := net.Pipe()
	select {
	case l.conns <- srv:
		return client, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe.test:80" }

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, recorded{method: r.Method, header: r.Header.Clone(), body: string(body)})
	s.mu.Unlock()
	w.Header().Set("X-Attempt", strconv.Itoa(n+1))
	s.handlers[min(n, len(s.handlers)-1)](w, r)
}

// requests returns the requests received so far.
func (s *server) requests() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.reqs...)
}

// status answers with code, the extra headers kv (name, value, …) and the
// body "attempt N".
func status(code int, kv ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(kv); i += 2 {
			w.Header().Set(kv[i], kv[i+1])
		}
		w.WriteHeader(code)
		fmt.Fprintf(w, "attempt %s", w.Header().Get("X-Attempt"))
	}
}

// reset closes the connection with an RST, so the client sees ECONNRESET.
func reset(w http.ResponseWriter, r *http.Request) {
	c, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	_ = c.(*net.TCPConn).SetLinger(0)
	c.Close()
}

// hangUp closes the connection cleanly, so the client sees an EOF.
func hangUp(w http.ResponseWriter, r *http.Request) {
	c, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	c.Close()
}

// malformed answers with a response that is not HTTP.
func malformed(w http.ResponseWriter, r *http.Request) {
	c, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	_, _ = io.WriteString(c, "HTTP/1.1 ninety-nine problems\r\n\r\n")
	c.Close()
}

// endless answers with code and a body that never ends, until the client
// goes away.
func endless(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(code)
		chunk := bytes.Repeat([]byte("x"), 4096)
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
}

// newBase returns a fresh http.Transport whose idle connections are closed
// when the test ends.
func newBase(t testing.TB) *http.Transport {
	base := &http.Transport{MaxIdleConnsPerHost: 256}
	t.Cleanup(base.CloseIdleConnections)
	return base
}

// zero is a Schedule of n retries without waiting.
func zero(n int) retry.Schedule { return retry.Constant(0).Take(n) }

// tracker wraps a base RoundTripper and logs, in order, each attempt it
// sends ("send N") and each response body closed ("close N"), so tests can
// check that every failed attempt's response is closed before the next
// attempt and the final one is left alone.
type tracker struct {
	base   http.RoundTripper
	mu     sync.Mutex
	n      int
	log    []string
	bodies []*trackedBody
}

func (tr *tracker) RoundTrip(req *http.Request) (*http.Response, error) {
	tr.mu.Lock()
	tr.n++
	n := tr.n
	tr.log = append(tr.log, "send "+strconv.Itoa(n))
	tr.mu.Unlock()
	resp, err := tr.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b := &trackedBody{ReadCloser: resp.Body, tr: tr, n: n}
	tr.mu.Lock()
	tr.bodies = append(tr.bodies, b)
	tr.mu.Unlock()
	resp.Body = b
	return resp, nil
}

func (tr *tracker) events() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.log...)
}

func (tr *tracker) body(i int) *trackedBody {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.bodies[i]
}

type trackedBody struct {
	io.ReadCloser
	tr     *tracker
	n      int
	read   atomic.Int64
	closed atomic.Bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read.Add(int64(n))
	return n, err
}

func (b *trackedBody) Close() error {
	if !b.closed.Swap(true) {
		b.tr.mu.Lock()
		b.tr.log = append(b.tr.log, "close "+strconv.Itoa(b.n))
		b.tr.mu.Unlock()
	}
	return b.ReadCloser.Close()
}

// wantEvents is the tracker log of n attempts that all got a response, the
// last one left open.
func wantEvents(n int) []string {
	var log []string
	for i := 1; i <= n; i++ {
		log = append(log, "send "+strconv.Itoa(i))
		if i < n {
			log = append(log, "close "+strconv.Itoa(i))
		}
	}
	return log
}

// readAll reads and closes resp's body.
func readAll(t testing.TB, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	if err := resp.Body.Close(); err != nil {
		t.Fatalf("closing body: %v", err)
	}
	return string(b)
}

// closedPort returns the address of a loopback port where nothing listens.
func closedPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// stubBase answers every request with the same response, allocating nothing.
type stubBase struct{ resp *http.Response }

func (b stubBase) RoundTrip(*http.Request) (*http.Response, error) { return b.resp, nil }

// attemptLog is a base RoundTripper middleware that records the
// AttemptNumber of every request it sends, as tracing middleware would.
type attemptLog struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen []int
}

func (l *attemptLog) RoundTrip(req *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.seen = append(l.seen, AttemptNumber(req.Context()))
	l.mu.Unlock()
	return l.base.RoundTrip(req)
}
