package retryconnect_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/seed-b8c8f69d/retry"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

type msg = wrapperspb.StringValue

// The procedures of the test server: the same handler under three
// idempotency levels, which is what the client's retry rule reads.
const (
	getProcedure  = "/test.v1.Echo/Get"  // no side effects
	putProcedure  = "/test.v1.Echo/Put"  // idempotent
	postProcedure = "/test.v1.Echo/Post" // unknown
	listProcedure = "/test.v1.Echo/List" // server streaming
)

var levels = map[string]connect.IdempotencyLevel{
	getProcedure:  connect.IdempotencyNoSideEffects,
	putProcedure:  connect.IdempotencyIdempotent,
	postProcedure: connect.IdempotencyUnknown,
}

// answer is what the server does for one request: fail with err, or, with
// a nil err, echo the request; block makes it wait for the request's
// context to end instead.
type answer struct {
	err   *connect.Error
	block bool
}

func unavailable() answer {
	return answer{err: connect.NewError(connect.CodeUnavailable, errors.New("busy"))}
}

func withPushback(a answer, v string) answer {
	a.err.Meta().Set("Grpc-Retry-Pushback-Ms", v)
	return a
}

func code(c connect.Code) answer { return answer{err: connect.NewError(c, errors.New("scripted"))} }

var success = answer{}

// server is a loopback Connect server (HTTP/2 over TLS, so that it speaks
// the Connect, gRPC and gRPC-Web protocols) that answers each request with
// the next answer of its script, the last one again once the script runs
// out, and records the requests.
type server struct {
	*httptest.Server
	mu        sync.Mutex
	script    []answer
	n         int
	previous  []string      // PreviousAttemptsKey of each request
	headers   []string      // the X-Caller, X-Inner and X-Extra-5 headers of each request
	cancelled chan struct{} // a value for each request whose context ended before an answer
}

func newServer(t testing.TB, script ...answer) *server {
	t.Helper()
	s := &server{script: script, cancelled: make(chan struct{}, 100)}
	mux := http.NewServeMux()
	for p, level := range levels {
		mux.Handle(p, connect.NewUnaryHandler(p, s.unary, connect.WithIdempotency(level)))
	}
	mux.Handle(listProcedure, connect.NewServerStreamHandler(listProcedure, s.list))
	s.Server = httptest.NewUnstartedServer(mux)
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// next records a request and returns its answer.
func (s *server) next(h http.Header) answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.script[min(s.n, len(s.script)-1)]
	s.n++
	s.previous = append(s.previous, h.Get("Grpc-Previous-Rpc-Attempts"))
	s.headers = append(s.headers, strings.Join(h.Values("X-Caller"), " ")+"|"+strings.Join(h.Values("X-Inner"), " ")+"|"+h.Get("X-Extra-5"))
	return a
}

func (s *server) unary(ctx context.Context, req *connect.Request[msg]) (*connect.Response[msg], error) {
	a := s.next(req.Header())
	if a.block {
		<-ctx.Done()
		s.cancelled <- struct{}{}
		return nil, connect.NewError(connect.CodeCanceled, ctx.Err())
	}
	if a.err != nil {
		return nil, a.err
	}
	return connect.NewResponse(wrapperspb.String("echo " + req.Msg.GetValue())), nil
}

func (s *server) list(ctx context.Context, req *connect.Request[msg], stream *connect.ServerStream[msg]) error {
	a := s.next(req.Header())
	if a.err != nil {
		return a.err
	}
	return stream.Send(wrapperspb.String("echo " + req.Msg.GetValue()))
}

// previousAttempts returns the PreviousAttemptsKey of each request.
func (s *server) previousAttempts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.previous...)
}

// seenHeaders returns the X-Caller, X-Inner and X-Extra-5 headers of each
// request, as "caller values|inner values|extra".
func (s *server) seenHeaders() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.headers...)
}

func (s *server) attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// protocols are the client options of the three protocols Connect speaks.
var protocols = []struct {
	name string
	opt  connect.ClientOption
}{
	{"connect", connect.WithClientOptions()},
	{"grpc", connect.WithGRPC()},
	{"grpcweb", connect.WithGRPCWeb()},
}

// client returns a client of procedure on s, with the procedure's
// idempotency level and the given options.
func (s *server) client(procedure string, opts ...connect.ClientOption) *connect.Client[msg, msg] {
	opts = append([]connect.ClientOption{connect.WithIdempotency(levels[procedure])}, opts...)
	return connect.NewClient[msg, msg](s.Client(), s.URL+procedure, opts...)
}

// call makes one unary call with the value "hi".
func call(ctx context.Context, c *connect.Client[msg, msg]) (string, error) {
	resp, err := c.CallUnary(ctx, connect.NewRequest(wrapperspb.String("hi")))
	if err != nil {
		return "", err
	}
	return resp.Msg.GetValue(), nil
}

// fakeClock returns a FakeClock and the option that makes calls wait on it.
func fakeClock() (*retry.FakeClock, retry.Option) {
	c := retry.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return c, retry.WithClock(c)
}
