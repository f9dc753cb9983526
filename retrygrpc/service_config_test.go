package retrygrpc_test

import (
	"context"
	"io"
	"math"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
)

// throttlingConfig is the service config of grpc-go's TestRetryThrottling
// (test/retry_test.go), for the health service.
const throttlingConfig = `{
    "methodConfig": [{
      "name": [{"service": "grpc.health.v1.Health"}],
      "waitForReady": true,
      "retryPolicy": {
        "MaxAttempts": 4,
        "InitialBackoff": ".01s",
        "MaxBackoff": ".01s",
        "BackoffMultiplier": 1.0,
        "RetryableStatusCodes": [ "UNAVAILABLE" ]
      }
    }],
    "retryThrottling": {
      "maxTokens": 10,
      "tokenRatio": 0.5
    }
}`

// scriptServer answers Check with OK for the requests whose 0-based index
// is in ok, Unavailable for the others, and records when each arrived.
type scriptServer struct {
	healthpb.UnimplementedHealthServer
	ok       []int
	mu       sync.Mutex
	arrivals []time.Time
}

func (s *scriptServer) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := len(s.arrivals)
	s.arrivals = append(s.arrivals, time.Now())
	if slices.Contains(s.ok, i) {
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	}
	return nil, status.Error(codes.Unavailable, "retryable error")
}

// reset forgets the requests seen, and returns their arrival times.
func (s *scriptServer) reset() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.arrivals
	s.arrivals = nil
	return a
}

func (s *scriptServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.arrivals) - 1
}

// listen starts a health server on a loopback port, stopped when the test
// ends, and returns its address.
func listen(t *testing.T, hs healthpb.HealthServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-served
	})
	return lis.Addr().String()
}

func dial(t *testing.T, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// TestServiceConfigThrottlingLikeGRPC runs grpc-go's TestRetryThrottling
// (its server script, config and expected table) against one loopback
// server twice: through grpc-go's built-in retry, and through our
// ServiceConfig's interceptor with grpc-go's retry disabled. Each call must
// end with the same code after the same number of attempts in both, as the
// table says; the waits are compared too: grpc-go's are 0.8–1.2 times the
// 10 ms backoff (a lower bound is all a loaded machine lets us check of
// real time), ours, on a FakeClock, A6's uniform [0, 10 ms].
func TestServiceConfigThrottlingLikeGRPC(t *testing.T) {
	srv := &scriptServer{ok: []int{0, 3, 6, 10, 11, 12, 13, 14, 16, 18}}
	addr := listen(t, srv)
	want := []struct {
		code  codes.Code
		count int // the index of the server's last request
	}{
		{codes.OK, 0},           // tokens = 10
		{codes.OK, 3},           // tokens = 8.5 (10 - 2 failures + 0.5 success)
		{codes.OK, 6},           // tokens = 6
		{codes.Unavailable, 8},  // tokens = 5: the first attempt is retried; the second not
		{codes.Unavailable, 9},  // tokens = 4
		{codes.OK, 10},          // tokens = 4.5
		{codes.OK, 11},          // tokens = 5
		{codes.OK, 12},          // tokens = 5.5
		{codes.OK, 13},          // tokens = 6
		{codes.OK, 14},          // tokens = 6.5
		{codes.OK, 16},          // tokens = 5.5
		{codes.Unavailable, 17}, // tokens = 4.5
	}
	sc, err := retrygrpc.ParseServiceConfig(throttlingConfig)
	if err != nil {
		t.Fatal(err)
	}
	clock := retry.NewFakeClock(t0)
	clients := []struct {
		name string
		cc   *grpc.ClientConn
	}{
		{"grpc-go", dial(t, addr, grpc.WithDefaultServiceConfig(throttlingConfig))},
		{"retrygrpc", dial(t, addr, grpc.WithDefaultServiceConfig(throttlingConfig), grpc.WithDisableRetry(),
			grpc.WithUnaryInterceptor(sc.UnaryClientInterceptor(retrygrpc.With(retry.WithClock(clock)))))},
	}
	attempts := map[string][]int{}
	for _, c := range clients {
		srv.reset()
		client := healthpb.NewHealthClient(c.cc)
		var gaps []time.Duration
		for i, w := range want {
			before := srv.count()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
			cancel()
			if got := status.Code(err); got != w.code {
				t.Errorf("%s: call %d: code %v (%v), want %v", c.name, i, got, err, w.code)
			}
			if got := srv.count(); got != w.count {
				t.Errorf("%s: call %d: server at request %d, want %d", c.name, i, got, w.count)
			}
			attempts[c.name] = append(attempts[c.name], srv.count()-before)
		}
		arrivals := srv.reset()
		if c.name == "grpc-go" {
			// Gaps between the attempts of one call: the requests of
			// calls 1, 2, 3 and 10 after their first.
			for _, i := range []int{2, 3, 5, 6, 8, 16} {
				gaps = append(gaps, arrivals[i].Sub(arrivals[i-1]))
			}
			for _, g := range gaps {
				if g < 8*time.Millisecond {
					t.Errorf("grpc-go waited %v between attempts, less than 0.8 × 10 ms", g)
				}
			}
			t.Logf("grpc-go's waits: %v", gaps)
		} else {
			sleeps := clock.Sleeps()
			if len(sleeps) != 6 {
				t.Errorf("retrygrpc waited %d times, want 6: %v", len(sleeps), sleeps)
			}
			for _, d := range sleeps {
				if d < 0 || d > 10*time.Millisecond {
					t.Errorf("retrygrpc waited %v, outside A6's [0, 10ms]", d)
				}
			}
			t.Logf("retrygrpc's waits: %v", sleeps)
		}
	}
	if !slices.Equal(attempts["grpc-go"], attempts["retrygrpc"]) {
		t.Errorf("attempts per call: grpc-go %v, retrygrpc %v", attempts["grpc-go"], attempts["retrygrpc"])
	}
	t.Logf("attempts per call, both: %v", attempts["retrygrpc"])
}

// TestServiceConfigMaxAttemptsLikeGRPC: a maxAttempts of 8 is cut to 5 by
// both, against a server that always fails (grpc-go's TestMaxCallAttempts).
func TestServiceConfigMaxAttemptsLikeGRPC(t *testing.T) {
	const js = `{"methodConfig": [{"name": [{"service": "grpc.health.v1.Health"}],
		"retryPolicy": {"maxAttempts": 8, "initialBackoff": "0.001s", "maxBackoff": "0.002s", "backoffMultiplier": 2,
		"retryableStatusCodes": ["UNAVAILABLE"]}}]}`
	srv := &scriptServer{}
	addr := listen(t, srv)
	sc, err := retrygrpc.ParseServiceConfig(js)
	if err != nil {
		t.Fatal(err)
	}
	clock := retry.NewFakeClock(t0)
	for _, cc := range []*grpc.ClientConn{
		dial(t, addr, grpc.WithDefaultServiceConfig(js)),
		dial(t, addr, grpc.WithDisableRetry(), grpc.WithUnaryInterceptor(sc.UnaryClientInterceptor(retrygrpc.With(retry.WithClock(clock))))),
	} {
		srv.reset()
		_, err := healthpb.NewHealthClient(cc).Check(t.Context(), &healthpb.HealthCheckRequest{})
		if status.Code(err) != codes.Unavailable {
			t.Errorf("error %v, want Unavailable", err)
		}
		if n := srv.count() + 1; n != 5 {
			t.Errorf("%d attempts, want 5", n)
		}
	}
	// Ours: A6's bounds, min(1ms·2ⁿ⁻¹, 2ms).
	bounds := []time.Duration{time.Millisecond, 2 * time.Millisecond, 2 * time.Millisecond, 2 * time.Millisecond}
	sleeps := clock.Sleeps()
	if len(sleeps) != len(bounds) {
		t.Fatalf("waits %v, want 4", sleeps)
	}
	for i, d := range sleeps {
		if d < 0 || d > bounds[i] {
			t.Errorf("wait %d: %v, outside [0, %v]", i+1, d, bounds[i])
		}
	}
}

// TestServiceConfigNameMatching: the method's own config, then its
// service's, then the default, as grpc-go's getMethodConfig.
func TestServiceConfigNameMatching(t *testing.T) {
	sc, err := retrygrpc.ParseServiceConfig(`{"methodConfig": [
		{"name": [{"service": "a.S", "method": "Get"}], "retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 1, "retryableStatusCodes": [14]}},
		{"name": [{"service": "a.S"}], "retryPolicy": {"maxAttempts": 3, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 1, "retryableStatusCodes": [14]}},
		{"name": [{"service": "b.T", "method": "Put"}], "waitForReady": true},
		{"name": [{}], "hedgingPolicy": {"maxAttempts": 4, "hedgingDelay": "0.1s"}}
	]}`)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method  string
		delays  int // retries, or hedges
		hedging bool
		ok      bool
	}{
		{"/a.S/Get", 1, false, true},  // its own
		{"/a.S/List", 2, false, true}, // its service's
		{"/b.T/Get", 3, true, true},   // the default
		{"/b.T/Put", 0, false, false}, // its own, which has no policy: the default does not apply
		{"/c.U/Any", 3, true, true},   // the default
		{"/a.S.x/Get", 3, true, true}, // not a.S's
		{"/a.S/Get/x", 3, true, true}, // not a method of a.S
		{"malformed", 3, true, true},  // the default
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			s, opts, hedging, ok := sc.MethodPolicy(tt.method)
			if ok != tt.ok || hedging != tt.hedging {
				t.Fatalf("ok %v hedging %v, want %v %v", ok, hedging, tt.ok, tt.hedging)
			}
			if !ok {
				return
			}
			if len(opts) == 0 {
				t.Error("no options")
			}
			n := 0
			for range s {
				n++
			}
			if n != tt.delays {
				t.Errorf("%d delays, want %d", n, tt.delays)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	t.Run("A6's bounds", func(t *testing.T) {
		bounds := []time.Duration{100, 150, 225, 300, 300, 300}
		var top [6]time.Duration
		for range 2000 {
			i := 0
			for d := range retrygrpc.Backoff(100, 300, 1.5, 6) {
				if d < 0 || d > bounds[i] {
					t.Fatalf("delay %d: %v outside [0, %v]", i+1, d, bounds[i])
				}
				top[i] = max(top[i], d)
				i++
			}
			if i != 6 {
				t.Fatalf("%d delays, want 6", i)
			}
		}
		for i, d := range top {
			if d < bounds[i]*9/10 {
				t.Errorf("delay %d: at most %v in 2000 draws: not uniform over [0, %v]", i+1, d, bounds[i])
			}
		}
	})
	t.Run("a multiplier below 1", func(t *testing.T) {
		i := 0
		for d := range retrygrpc.Backoff(time.Second, time.Second, 0.5, 3) {
			if bound := time.Second >> i; d > bound {
				t.Errorf("delay %d: %v above %v", i+1, d, bound)
			}
			i++
		}
	})
	t.Run("the largest bounds", func(t *testing.T) {
		// A service config's durations saturate at the largest Duration:
		// its delays must neither panic nor go negative.
		for _, initial := range []time.Duration{time.Second, math.MaxInt64 - 1000, math.MaxInt64} {
			n := 0
			for d := range retrygrpc.Backoff(initial, math.MaxInt64, 2, 80) {
				if d < 0 {
					t.Fatalf("Backoff(%v, max): delay %d is %v", initial, n+1, d)
				}
				n++
			}
			if n != 80 {
				t.Errorf("Backoff(%v, max): %d delays, want 80", initial, n)
			}
		}
	})
	t.Run("early break", func(t *testing.T) {
		n := 0
		for range retrygrpc.Backoff(1, 1, 2, 5) {
			if n++; n == 2 {
				break
			}
		}
		if n != 2 {
			t.Errorf("%d delays", n)
		}
	})
	t.Run("invalid arguments panic", func(t *testing.T) {
		for _, args := range [][4]float64{{0, 1, 1, 1}, {1, 0, 1, 1}, {1, 1, 0, 1}, {1, 1, -1, 1}, {1, 1, 1, -1}} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("Backoff%v did not panic", args)
					}
				}()
				retrygrpc.Backoff(time.Duration(args[0]), time.Duration(args[1]), args[2], int(args[3]))
			}()
		}
	})
}

// TestServiceConfigHedging: a hedgingPolicy hedges unary calls (here
// after each failure: the delay is longer than the test), and
// retryThrottling stops sending hedges once too few tokens are left.
func TestServiceConfigHedging(t *testing.T) {
	const js = `{"methodConfig": [{"name": [{"service": "grpc.health.v1.Health"}],
		"hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "100s", "nonFatalStatusCodes": ["UNAVAILABLE"]}}],
		"retryThrottling": {"maxTokens": 10, "tokenRatio": 1}}`
	sc, err := retrygrpc.ParseServiceConfig(js)
	if err != nil {
		t.Fatal(err)
	}
	srv := &scriptServer{ok: []int{2}}
	cc := dial(t, listen(t, srv), grpc.WithDisableRetry(), grpc.WithUnaryInterceptor(sc.UnaryClientInterceptor()))
	client := healthpb.NewHealthClient(cc)
	calls := []struct {
		code     codes.Code
		attempts int
	}{
		{codes.OK, 3},          // tokens 10 → 9 → 8, the third succeeds: 9
		{codes.Unavailable, 3}, // 9 → 8 → 7 → 6
		{codes.Unavailable, 1}, // 6 → 5, half of 10: no hedge
	}
	for i, c := range calls {
		srv.reset()
		if i > 0 {
			srv.ok = nil
		}
		_, err := client.Check(t.Context(), &healthpb.HealthCheckRequest{})
		if status.Code(err) != c.code {
			t.Errorf("call %d: %v, want %v", i+1, err, c.code)
		}
		if err != nil && status.Convert(err).Message() != "retryable error" {
			t.Errorf("call %d: %v, want the server's error", i+1, err)
		}
		if n := srv.count() + 1; n != c.attempts {
			t.Errorf("call %d: %d attempts, want %d", i+1, n, c.attempts)
		}
	}
}

// watchServer's Watch fails with Unavailable while fail is set, and
// otherwise sends SERVING and ends; it counts the streams it saw.
type watchServer struct {
	healthpb.UnimplementedHealthServer
	mu      sync.Mutex
	fail    bool
	streams int
}

func (w *watchServer) Watch(_ *healthpb.HealthCheckRequest, ss grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	w.mu.Lock()
	w.streams++
	fail := w.fail
	w.mu.Unlock()
	if fail {
		return status.Error(codes.Unavailable, "down")
	}
	return ss.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING})
}

func (w *watchServer) set(fail bool) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.streams
	w.fail, w.streams = fail, 0
	return n
}

// TestServiceConfigStreamThrottling: a stream's failures count against
// retryThrottling, and a stream that ends with an OK status counts as a
// success (tokens 4, threshold 2, ratio 3).
func TestServiceConfigStreamThrottling(t *testing.T) {
	const js = `{"methodConfig": [{"name": [{"service": "grpc.health.v1.Health"}],
		"retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.001s", "maxBackoff": "0.001s", "backoffMultiplier": 1,
		"retryableStatusCodes": ["UNAVAILABLE"]}}],
		"retryThrottling": {"maxTokens": 4, "tokenRatio": 3}}`
	sc, err := retrygrpc.ParseServiceConfig(js)
	if err != nil {
		t.Fatal(err)
	}
	srv := &watchServer{}
	cc := dial(t, listen(t, srv), grpc.WithDisableRetry(),
		grpc.WithStreamInterceptor(sc.StreamClientInterceptor(retrygrpc.With(retry.WithClock(retry.NewFakeClock(t0))))))
	client := healthpb.NewHealthClient(cc)
	watch := func() error {
		ws, err := client.Watch(t.Context(), &healthpb.HealthCheckRequest{})
		if err != nil {
			return err
		}
		for {
			if _, err := ws.Recv(); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
		}
	}
	steps := []struct {
		fail     bool
		streams  int
		wantCode codes.Code
	}{
		{true, 2, codes.Unavailable}, // tokens 4 → 3, retried → 2: no more
		{true, 1, codes.Unavailable}, // 2 → 1: not retried
		{false, 1, codes.OK},         // a success: 1 + 3 = 4
		{true, 2, codes.Unavailable}, // 4 → 3, retried → 2: no more
	}
	srv.set(steps[0].fail)
	for i, s := range steps {
		err := watch()
		if status.Code(err) != s.wantCode {
			t.Errorf("stream %d: %v, want %v", i+1, err, s.wantCode)
		}
		next := false
		if i+1 < len(steps) {
			next = steps[i+1].fail
		}
		if n := srv.set(next); n != s.streams {
			t.Errorf("stream %d: %d attempts, want %d", i+1, n, s.streams)
		}
	}
}
