package retrygrpc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
)

// flakyHealth is a health server whose first calls fail: Check fails
// twice, Watch once, each time with Unavailable.
type flakyHealth struct {
	healthpb.UnimplementedHealthServer
	checks, watches int
	pushback        string // the trailer PushbackKey of Check's failures, if any
}

func (h *flakyHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if h.checks++; h.checks <= 2 {
		if h.pushback != "" {
			_ = grpc.SetTrailer(ctx, metadata.Pairs(retrygrpc.PushbackKey, h.pushback))
		}
		return nil, status.Errorf(codes.Unavailable, "warming up (call %d)", h.checks)
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func (h *flakyHealth) Watch(_ *healthpb.HealthCheckRequest, ss grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	if h.watches++; h.watches == 1 {
		return status.Error(codes.Unavailable, "warming up")
	}
	for _, s := range []healthpb.HealthCheckResponse_ServingStatus{healthpb.HealthCheckResponse_NOT_SERVING, healthpb.HealthCheckResponse_SERVING} {
		if err := ss.Send(&healthpb.HealthCheckResponse{Status: s}); err != nil {
			return err
		}
	}
	return nil
}

// serve starts a gRPC server with h on a loopback port and returns its
// address and a function that stops it.
func serve(h healthpb.HealthServer) (string, func()) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, h)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	return lis.Addr().String(), func() { srv.Stop(); <-done }
}

// A client whose unary calls are retried on an exponential schedule. The
// fake clock makes the waits instant and the output exact; leave it out in
// real code.
func ExampleUnaryClientInterceptor() {
	addr, stop := serve(&flakyHealth{})
	defer stop()

	clock := retry.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	policy := retry.Exponential(100 * time.Millisecond).Take(4)
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDisableRetry(), // one retry layer, not two
		grpc.WithUnaryInterceptor(retrygrpc.UnaryClientInterceptor(policy,
			retrygrpc.With(
				retry.WithClock(clock),
				retry.OnRetry(func(a retry.Attempt) {
					fmt.Printf("attempt %d: %s; retrying in %v\n", a.Number, status.Convert(a.Err).Message(), a.Delay)
				})))))
	if err != nil {
		panic(err)
	}
	defer conn.Close()

	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Status)
	// Output:
	// attempt 1: warming up (call 1); retrying in 100ms
	// attempt 2: warming up (call 2); retrying in 200ms
	// SERVING
}

// A server that pushes back: its trailer grpc-retry-pushback-ms asks for
// 1.5 s, longer than the schedule's delay, and the client waits that long.
func ExampleUnaryClientInterceptor_pushback() {
	addr, stop := serve(&flakyHealth{pushback: "1500"})
	defer stop()

	clock := retry.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDisableRetry(),
		grpc.WithUnaryInterceptor(retrygrpc.UnaryClientInterceptor(retry.Constant(time.Second).Take(4),
			retrygrpc.With(retry.WithClock(clock), retry.MaxPushback(time.Minute)))))
	if err != nil {
		panic(err)
	}
	defer conn.Close()

	_, err = healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	fmt.Println("error:", err)
	fmt.Println("waits:", clock.Sleeps())
	// Output:
	// error: <nil>
	// waits: [1.5s 1.5s]
}

// A method that must not be sent twice is excluded: its failure comes back
// at once, while other methods are retried.
func ExampleMethods() {
	addr, stop := serve(&flakyHealth{})
	defer stop()

	notCheck := retrygrpc.Methods(func(method string) bool {
		return method != healthpb.Health_Check_FullMethodName
	})
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDisableRetry(),
		grpc.WithUnaryInterceptor(retrygrpc.UnaryClientInterceptor(retry.Constant(0).Take(4), notCheck)))
	if err != nil {
		panic(err)
	}
	defer conn.Close()

	_, err = healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	fmt.Println(status.Code(err), status.Convert(err).Message())
	// Output:
	// Unavailable warming up (call 1)
}

// A server-streaming call whose first attempt fails before any response is
// retried; every message the caller receives comes from the attempt that
// succeeded.
func ExampleStreamClientInterceptor() {
	addr, stop := serve(&flakyHealth{})
	defer stop()

	clock := retry.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDisableRetry(),
		grpc.WithStreamInterceptor(retrygrpc.StreamClientInterceptor(retry.Exponential(100*time.Millisecond).Take(4),
			retrygrpc.With(retry.WithClock(clock)))))
	if err != nil {
		panic(err)
	}
	defer conn.Close()

	watch, err := healthpb.NewHealthClient(conn).Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for {
		resp, err := watch.Recv()
		if err != nil {
			fmt.Println("end:", err)
			break
		}
		fmt.Println(resp.Status)
	}
	fmt.Println("waits:", clock.Sleeps())
	// Output:
	// NOT_SERVING
	// SERVING
	// end: EOF
	// waits: [100ms]
}

// Retrying other codes than Unavailable: here ResourceExhausted as well.
func ExampleCodes() {
	ic := retrygrpc.UnaryClientInterceptor(retry.Constant(0).Take(2),
		retrygrpc.Codes(codes.Unavailable, codes.ResourceExhausted))
	calls := 0
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
		calls++
		return status.Error(codes.ResourceExhausted, "quota")
	}
	err := ic(context.Background(), "/pkg.Service/Method", nil, nil, nil, invoker)
	fmt.Println(calls, "calls:", status.Code(err), errors.Is(err, retry.ErrExhausted))
	// Output:
	// 3 calls: ResourceExhausted true
}

// A client-streaming upload survives a server that fails half-way: the
// messages sent before the failure are sent again on the retry, as long as
// they fit in the replay limit. Past the limit the call is committed and the
// failure comes back as it is.
func ExampleReplayLimit() {
	// The first attempt of every call reads one message and fails; later
	// ones answer with everything they received.
	var calls atomic.Int32
	srv := &server{collect: func(n int, ss grpc.ServerStream) error {
		calls.Add(1)
		if n%2 == 1 {
			_ = ss.RecvMsg(str(""))
			return status.Error(codes.Unavailable, "restarting")
		}
		got, err := collectAll(ss)
		if err != nil {
			return err
		}
		return ss.SendMsg(str(got))
	}}
	addr, stop := serveEcho(srv)
	defer stop()

	for _, limit := range []int{retrygrpc.DefaultReplayLimit, 4} {
		conn, err := grpc.NewClient("passthrough:///"+addr,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDisableRetry(),
			grpc.WithStreamInterceptor(retrygrpc.StreamClientInterceptor(retry.Constant(0).Take(2),
				retrygrpc.ReplayLimit(limit))))
		if err != nil {
			panic(err)
		}
		calls.Store(0)
		got, err := upload(context.Background(), conn, "alpha", "beta", "gamma")
		fmt.Printf("limit %d: %q, %v, %d calls\n", limit, got, status.Code(err), calls.Load())
		conn.Close()
	}
	// Output:
	// limit 262144: "alpha,beta,gamma", OK, 2 calls
	// limit 4: "", Unavailable, 1 calls
}

// serveEcho starts a gRPC server with the Echo service of s on a loopback
// port and returns its address and a function that stops it.
func serveEcho(s *server) (string, func()) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := grpc.NewServer()
	srv.RegisterService(&echoDesc, s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	return lis.Addr().String(), func() { srv.Stop(); <-done }
}

// twoReplicas answers Check like two replicas behind one address: the first
// attempt of a call stalls until it is cancelled, a hedge answers as soon
// as the first attempt has arrived (so that the example's output never
// depends on timing).
type twoReplicas struct {
	healthpb.UnimplementedHealthServer
	arrived, cancelled chan struct{}
}

func (r *twoReplicas) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if len(md.Get(retrygrpc.PreviousAttemptsKey)) == 0 {
		close(r.arrived)
		<-ctx.Done() // the slow replica
		close(r.cancelled)
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	<-r.arrived
	_ = grpc.SetHeader(ctx, metadata.Pairs("replica", "fast"))
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// A hedged call: when the first attempt has not answered after the delay, a
// second one is sent, and the first answer wins. The slow attempt is
// cancelled.
func ExampleHedgeUnaryClientInterceptor() {
	replicas := &twoReplicas{arrived: make(chan struct{}), cancelled: make(chan struct{})}
	addr, stop := serve(replicas)
	defer stop()

	// One hedge after 1 ms; in production, a delay near the method's p95
	// latency (retry.NewLatency can track it).
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDisableRetry(),
		grpc.WithUnaryInterceptor(retrygrpc.HedgeUnaryClientInterceptor(retry.Constant(time.Millisecond).Take(1))))
	if err != nil {
		panic(err)
	}
	defer conn.Close()

	var header metadata.MD
	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{}, grpc.Header(&header))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Status, "from the", header.Get("replica")[0], "replica")
	<-replicas.cancelled
	fmt.Println("slow attempt cancelled")
	// Output:
	// SERVING from the fast replica
	// slow attempt cancelled
}
