package retrygrpc_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/seed-b8c8f69d/retry/retrygrpc"
)

// TestMain fails the package's tests if any goroutine outlives them: no
// interceptor goroutine, stream or connection may be left behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// t0 is the start of every fake clock.
var t0 = time.Date(2030, time.January, 2, 3, 4, 5, 0, time.UTC)

// server is a real grpc.Server on a TCP loopback listener, serving the
// health service and the hand-written Echo service; each test scripts both
// through the fields it sets, with the attempt's number (from 1).
type server struct {
	healthpb.UnimplementedHealthServer

	check   func(n int, ctx context.Context) (*healthpb.HealthCheckResponse, error)
	collect func(n int, s grpc.ServerStream) error
	split   func(n int, in string, s grpc.ServerStream) error
	chat    func(n int, s grpc.ServerStream) error

	mu       sync.Mutex
	attempts []string // grpc-previous-rpc-attempts of each call, "" if absent
}

// record notes a call and returns its number, from 1.
func (s *server) record(ctx context.Context) int {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts = append(s.attempts, strings.Join(md.Get(retrygrpc.PreviousAttemptsKey), ","))
	return len(s.attempts)
}

// seen returns grpc-previous-rpc-attempts of every call so far.
func (s *server) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.attempts...)
}

func (s *server) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return s.check(s.record(ctx), ctx)
}

// echoDesc is a service with a method of each streaming kind, on
// wrapperspb.StringValue messages, so that no protoc step is needed.
var echoDesc = grpc.ServiceDesc{
	ServiceName: "retrygrpc.test.Echo",
	HandlerType: (*any)(nil),
	Streams: []grpc.StreamDesc{
		{StreamName: "Collect", ClientStreams: true, Handler: func(srv any, ss grpc.ServerStream) error {
			s := srv.(*server)
			return s.collect(s.record(ss.Context()), ss)
		}},
		{StreamName: "Split", ServerStreams: true, Handler: func(srv any, ss grpc.ServerStream) error {
			s := srv.(*server)
			n := s.record(ss.Context())
			in := new(wrapperspb.StringValue)
			if err := ss.RecvMsg(in); err != nil {
				return err
			}
			return s.split(n, in.Value, ss)
		}},
		{StreamName: "Chat", ClientStreams: true, ServerStreams: true, Handler: func(srv any, ss grpc.ServerStream) error {
			s := srv.(*server)
			return s.chat(s.record(ss.Context()), ss)
		}},
	},
}

var (
	collectDesc = &echoDesc.Streams[0]
	splitDesc   = &echoDesc.Streams[1]
	chatDesc    = &echoDesc.Streams[2]
)

const (
	checkMethod   = "/grpc.health.v1.Health/Check"
	collectMethod = "/retrygrpc.test.Echo/Collect"
	splitMethod   = "/retrygrpc.test.Echo/Split"
	chatMethod    = "/retrygrpc.test.Echo/Chat"
)

// start serves s on 127.0.0.1:0 and returns a client connection to it,
// made with grpc-go's own retries disabled and the given options. Both are
// closed when the test ends.
func start(tb testing.TB, s *server, opts ...grpc.DialOption) *grpc.ClientConn {
	tb.Helper()
	return startServer(tb, s, nil, opts...)
}

// startServer is start with the given server options.
func startServer(tb testing.TB, s *server, srvOpts []grpc.ServerOption, opts ...grpc.DialOption) *grpc.ClientConn {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := grpc.NewServer(srvOpts...)
	healthpb.RegisterHealthServer(srv, s)
	srv.RegisterService(&echoDesc, s)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(lis)
	}()
	opts = append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDisableRetry(),
	}, opts...)
	cc, err := grpc.NewClient("passthrough:///"+lis.Addr().String(), opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cc.Close()
		srv.Stop()
		<-served
	})
	return cc
}

// check makes one health Check call.
func check(ctx context.Context, cc *grpc.ClientConn, opts ...grpc.CallOption) (*healthpb.HealthCheckResponse, error) {
	return healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: "svc"}, opts...)
}

// serving is a successful Check response.
func serving() (*healthpb.HealthCheckResponse, error) {
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// str wraps s in a message.
func str(s string) *wrapperspb.StringValue { return wrapperspb.String(s) }

// recvAll reads a server stream's messages until an error, and returns them
// with the error (nil for io.EOF).
func recvAll(s grpc.ClientStream) ([]string, error) {
	var out []string
	for {
		m := new(wrapperspb.StringValue)
		if err := s.RecvMsg(m); err != nil {
			if err.Error() == "EOF" {
				return out, nil
			}
			return out, err
		}
		out = append(out, m.Value)
	}
}
