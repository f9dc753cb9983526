package retryhttp_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryhttp"
	"github.com/seed-b8c8f69d/retry/retryserver"
)

// protocols are the two ways a test server is reached: HTTP/1.1 in clear,
// HTTP/2 over TLS.
var protocols = []struct {
	name  string
	start func(*httptest.Server)
	major int
}{
	{"HTTP/1.1", (*httptest.Server).Start, 1},
	{"h2", func(s *httptest.Server) { s.EnableHTTP2 = true; s.StartTLS() }, 2},
}

// startServer starts h on a loopback port with the protocol p and returns
// it with a base RoundTripper that trusts it; both closed when t ends.
func startServer(t *testing.T, start func(*httptest.Server), h http.Handler) (*httptest.Server, *http.Transport) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	start(srv)
	base := srv.Client().Transport.(*http.Transport)
	t.Cleanup(func() {
		base.CloseIdleConnections()
		srv.Close()
	})
	return srv, base
}

// eventually polls cond every millisecond for up to 10 s: for what a real
// server does on its own goroutines (a ticket released after the handler
// returned, a context cancelled when a connection closes).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestServerEndToEnd: a client's Transport honours what NewHandler sends. The
// server serves one request at a time with no queue: while the first holds
// the slot, a second is refused with a pushback of 1 s, which the client
// waits (on a fake clock) before its retry, which says it is one and is
// served.
func TestServerEndToEnd(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			s := retryserver.New(retryserver.Concurrency(1), retryserver.QueueLimit(0))
			release, entered := make(chan struct{}), make(chan struct{}, 2)
			var mu sync.Mutex
			var seen []string
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.ProtoMajor != p.major {
					t.Errorf("request over %s, want HTTP/%d", r.Proto, p.major)
				}
				mu.Lock()
				seen = append(seen, r.URL.Path+" "+r.Header.Get(retryhttp.PreviousAttemptsHeader))
				mu.Unlock()
				if r.URL.Path == "/hold" {
					entered <- struct{}{}
					<-release
				}
				io.WriteString(w, "served "+r.URL.Path)
			})
			srv, base := startServer(t, p.start, retryhttp.NewHandler(h, s))

			holdDone := make(chan error, 1)
			go func() {
				resp, err := base.RoundTrip(mustRequest(t, srv.URL+"/hold"))
				if err == nil {
					resp.Body.Close()
				}
				holdDone <- err
			}()
			<-entered

			clock := retry.NewFakeClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
			var once sync.Once
			rt := retryhttp.NewTransport(base, retry.Constant(0).Take(2), retry.WithClock(clock),
				retry.OnRetry(func(retry.Attempt) {
					once.Do(func() {
						close(release)
						eventually(t, "the slot is free", func() bool { return s.Stats().InFlight == 0 })
					})
				}))
			resp, err := rt.RoundTrip(mustRequest(t, srv.URL+"/x"))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != "served /x" {
				t.Fatalf("got %d %q, want 200 \"served /x\"", resp.StatusCode, body)
			}
			if err := <-holdDone; err != nil {
				t.Fatal(err)
			}
			if got := clock.Sleeps(); len(got) != 1 || got[0] != time.Second {
				t.Errorf("the client waited %v, want [1s]: the server's Retry-After", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if want := []string{"/hold ", "/x 1"}; strings.Join(seen, ",") != strings.Join(want, ",") {
				t.Errorf("the server served %q, want %q (the refused first attempt never reached the handler)", seen, want)
			}
			if st := s.Stats(); st.Refused != 1 || st.Admitted != 2 || st.InFlight != 0 {
				t.Errorf("Stats = %+v, want 1 refused, 2 admitted, none in flight", st)
			}
		})
	}
}

// TestServerShouldRetryFalse: a 503 with X-Should-Retry: false ends the
// client's retries at once, and the caller gets that response.
func TestServerShouldRetryFalse(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			var n int
			var mu sync.Mutex
			srv, base := startServer(t, p.start, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				n++
				mu.Unlock()
				w.Header().Set(retryhttp.ShouldRetryHeader, "false")
				w.WriteHeader(http.StatusServiceUnavailable)
			}))
			rt := retryhttp.NewTransport(base, retry.Constant(0).Take(3))
			resp, err := rt.RoundTrip(mustRequest(t, srv.URL))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			if resp.StatusCode != 503 || n != 1 {
				t.Errorf("got %d after %d attempts, want 503 after 1", resp.StatusCode, n)
			}
		})
	}
}

// TestServerClientGoneWhileQueued: a request whose client goes away while
// it waits leaves the queue and never reaches the handler.
func TestServerClientGoneWhileQueued(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			s := retryserver.New(retryserver.Concurrency(1), retryserver.Interval(time.Minute), retryserver.Target(time.Minute))
			release, entered := make(chan struct{}), make(chan struct{}, 1)
			var mu sync.Mutex
			var paths []string
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				paths = append(paths, r.URL.Path)
				mu.Unlock()
				if r.URL.Path == "/hold" {
					entered <- struct{}{}
					<-release
				}
			})
			srv, base := startServer(t, p.start, retryhttp.NewHandler(h, s))
			holdDone := make(chan struct{})
			go func() {
				defer close(holdDone)
				if resp, err := base.RoundTrip(mustRequest(t, srv.URL+"/hold")); err == nil {
					resp.Body.Close()
				}
			}()
			<-entered
			ctx, cancel := context.WithCancel(context.Background())
			req := mustRequest(t, srv.URL+"/gone").WithContext(ctx)
			done := make(chan error, 1)
			go func() {
				resp, err := base.RoundTrip(req)
				if err == nil {
					resp.Body.Close()
				}
				done <- err
			}()
			eventually(t, "the request is queued", func() bool { return s.Stats().Queued == 1 })
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("client: %v, want context.Canceled", err)
			}
			eventually(t, "the server sees the client gone", func() bool { return s.Stats().Gone == 1 })
			close(release)
			<-holdDone
			eventually(t, "the slot is free", func() bool { return s.Stats().InFlight == 0 })
			mu.Lock()
			defer mu.Unlock()
			if len(paths) != 1 {
				t.Errorf("the handler served %q, want only /hold", paths)
			}
		})
	}
}

// TestServerStreamingAndHijack: NewHandler hands h the ResponseWriter that
// net/http made, so flushing and hijacking work through it.
func TestServerStreamingAndHijack(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name+" flush", func(t *testing.T) {
			s := retryserver.New(retryserver.Concurrency(1))
			next := make(chan struct{})
			srv, base := startServer(t, p.start, retryhttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "first\n")
				w.(http.Flusher).Flush()
				<-next
				io.WriteString(w, "second\n")
			}), s))
			resp, err := base.RoundTrip(mustRequest(t, srv.URL))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			if line, err := br.ReadString('\n'); line != "first\n" {
				t.Fatalf("first line %q, %v: want it flushed before the handler ends", line, err)
			}
			close(next)
			if rest, _ := io.ReadAll(br); string(rest) != "second\n" {
				t.Errorf("rest %q, want \"second\\n\"", rest)
			}
		})
	}
	t.Run("HTTP/1.1 hijack", func(t *testing.T) {
		s := retryserver.New(retryserver.Concurrency(1))
		srv, base := startServer(t, (*httptest.Server).Start, retryhttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, rw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("Hijack: %v", err)
				return
			}
			defer conn.Close()
			rw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nhijacked")
			rw.Flush()
		}), s))
		resp, err := base.RoundTrip(mustRequest(t, srv.URL))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "hijacked" {
			t.Errorf("body %q, want \"hijacked\"", body)
		}
		eventually(t, "the slot is free", func() bool { return s.Stats().InFlight == 0 })
	})
}

// TestHandlerRefusal checks NewHandler's answers without a network, in a
// synctest bubble where the Shedder's windows are exact.
func TestHandlerRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := retryserver.New(retryserver.Concurrency(1), retryserver.QueueLimit(0), retryserver.Interval(100*time.Millisecond))
		hold, entered := make(chan struct{}), make(chan struct{})
		h := retryhttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(entered)
			<-hold
		}), s)
		go h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
		<-entered

		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if rec.Code != 503 || rec.Header().Get("Retry-After") != "1" || rec.Header().Get(retryhttp.ShouldRetryHeader) != "" {
			t.Errorf("refusal: %d %v, want 503 with Retry-After: 1", rec.Code, rec.Header())
		}
		time.Sleep(100 * time.Millisecond) // the window refused half: shedding hard
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if rec.Code != 503 || rec.Header().Get("Retry-After") != "" || rec.Header().Get(retryhttp.ShouldRetryHeader) != "false" {
			t.Errorf("hard refusal: %d %v, want 503 with X-Should-Retry: false", rec.Code, rec.Header())
		}
		close(hold)
		synctest.Wait()

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil).WithContext(ctx))
		if rec.Code != 200 || rec.Flushed || len(rec.Header()) != 0 {
			t.Errorf("a gone client: %d %v, want nothing written", rec.Code, rec.Header())
		}
		dctx, dcancel := context.WithDeadline(context.Background(), time.Now())
		defer dcancel()
		synctest.Wait()
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil).WithContext(&liveContext{dctx}))
		if rec.Code != 503 || rec.Header().Get("Retry-After") != "" {
			t.Errorf("a passed deadline: %d %v, want 503 without Retry-After", rec.Code, rec.Header())
		}
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil).WithContext(dctx))
		if rec.Code != 503 || rec.Header().Get("Retry-After") != "" {
			t.Errorf("a passed deadline, its context done: %d %v, want 503 without Retry-After", rec.Code, rec.Header())
		}
	})
}

// liveContext is a context whose deadline has passed but which has not
// been told yet: Err is nil, as at the instant a timer is due.
type liveContext struct{ context.Context }

func (liveContext) Err() error { return nil }

func TestHandlerPanicReleases(t *testing.T) {
	s := retryserver.New(retryserver.Concurrency(1))
	h := retryhttp.NewHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic(http.ErrAbortHandler)
	}), s)
	func() {
		defer func() {
			if r := recover(); r != http.ErrAbortHandler {
				t.Errorf("recovered %v, want the handler's panic unchanged", r)
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}()
	if st := s.Stats(); st.InFlight != 0 || st.Admitted != 1 {
		t.Errorf("Stats = %+v, want the slot released", st)
	}
}

func TestTransportSendsPreviousAttempts(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		v, ok := r.Header[retryhttp.PreviousAttemptsHeader]
		if !ok {
			v = []string{"absent"}
		}
		got = append(got, strings.Join(v, ","))
		if len(got) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	rt := retryhttp.NewTransport(base, retry.Constant(0).Take(3))
	req := mustRequest(t, srv.URL)
	req.Header.Set("X-Keep", "1")
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if want := "absent 1 2"; strings.Join(got, " ") != want {
		t.Errorf("%s per attempt: %q, want %q", retryhttp.PreviousAttemptsHeader, got, want)
	}
	if _, ok := req.Header[retryhttp.PreviousAttemptsHeader]; ok {
		t.Error("the caller's request was changed")
	}
}

func mustRequest(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestHandlerAllocs checks that a first attempt admitted at once and served
// costs NewHandler no allocation.
func TestHandlerAllocs(t *testing.T) {
	h := retryhttp.NewHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), retryserver.New())
	w := &discardWriter{h: http.Header{}}
	r := httptest.NewRequest("GET", "/", nil)
	if n := testing.AllocsPerRun(1000, func() { h.ServeHTTP(w, r) }); n != 0 {
		t.Errorf("%v allocations per request served, want 0", n)
	}
}
