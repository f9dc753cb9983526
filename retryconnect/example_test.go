package retryconnect_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryconnect"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// flakyServer starts a loopback Connect server whose procedure /demo.v1.Greeter/Greet
// fails with the errors errs, one per request, then greets.
func flakyServer(errs ...*connect.Error) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	h := connect.NewUnaryHandler("/demo.v1.Greeter/Greet",
		func(ctx context.Context, req *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
			if i := n.Add(1); int(i) <= len(errs) {
				return nil, errs[i-1]
			}
			return connect.NewResponse(wrapperspb.String("hello " + req.Msg.GetValue())), nil
		})
	return httptest.NewServer(h), &n
}

func busy() *connect.Error { return connect.NewError(connect.CodeUnavailable, errors.New("busy")) }

func ExampleNewInterceptor() {
	srv, requests := flakyServer(busy(), busy())
	defer srv.Close()

	clock := retry.NewFakeClock(time.Time{}) // tests wait in no time; omit for the real clock
	policy := retry.Exponential(100 * time.Millisecond).Take(4)
	client := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](srv.Client(), srv.URL+"/demo.v1.Greeter/Greet",
		connect.WithIdempotency(connect.IdempotencyNoSideEffects), // safe to send twice
		connect.WithInterceptors(retryconnect.NewInterceptor(policy, retryconnect.With(retry.WithClock(clock)))))

	resp, err := client.CallUnary(context.Background(), connect.NewRequest(wrapperspb.String("Ada")))
	fmt.Println(resp.Msg.GetValue(), err, requests.Load(), clock.Sleeps())
	// Output:
	// hello Ada <nil> 3 [100ms 200ms]
}

func ExampleCodes() {
	srv, requests := flakyServer(connect.NewError(connect.CodeResourceExhausted, errors.New("quota")))
	defer srv.Close()

	i := retryconnect.NewInterceptor(retry.Constant(time.Millisecond).Take(2),
		retryconnect.Codes(connect.CodeUnavailable, connect.CodeResourceExhausted))
	client := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](srv.Client(), srv.URL+"/demo.v1.Greeter/Greet",
		connect.WithIdempotency(connect.IdempotencyIdempotent), connect.WithInterceptors(i))

	resp, err := client.CallUnary(context.Background(), connect.NewRequest(wrapperspb.String("Grace")))
	fmt.Println(resp.Msg.GetValue(), err, requests.Load())
	// Output:
	// hello Grace <nil> 2
}

func ExampleProcedures() {
	srv, requests := flakyServer(busy())
	defer srv.Close()

	// This procedure has no idempotency level, but carries an idempotency
	// key that the server deduplicates on: retry it anyway.
	i := retryconnect.NewInterceptor(retry.Constant(time.Millisecond).Take(2),
		retryconnect.Procedures(func(spec connect.Spec) bool { return spec.Procedure == "/demo.v1.Greeter/Greet" }))
	client := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](srv.Client(), srv.URL+"/demo.v1.Greeter/Greet",
		connect.WithInterceptors(i))

	req := connect.NewRequest(wrapperspb.String("Edsger"))
	req.Header().Set("Idempotency-Key", "4f9c")
	resp, err := client.CallUnary(context.Background(), req)
	fmt.Println(resp.Msg.GetValue(), err, requests.Load())
	// Output:
	// hello Edsger <nil> 2
}

func ExampleWith() {
	srv, requests := flakyServer(busy(), busy(), busy())
	defer srv.Close()

	budget := retry.NewBudget(0, 1) // one retry in all, never refilled
	i := retryconnect.NewInterceptor(retry.Constant(time.Millisecond).Take(5),
		retryconnect.With(retry.WithBudget(budget)))
	client := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](srv.Client(), srv.URL+"/demo.v1.Greeter/Greet",
		connect.WithIdempotency(connect.IdempotencyNoSideEffects), connect.WithInterceptors(i))

	_, err := client.CallUnary(context.Background(), connect.NewRequest(wrapperspb.String("Barbara")))
	fmt.Println(errors.Is(err, retry.ErrBudgetExhausted), connect.CodeOf(err), requests.Load())
	// Output:
	// true unavailable 2
}

func ExampleHedge() {
	// The first request hangs until it is cancelled; the hedge answers.
	var requests atomic.Int64
	h := connect.NewUnaryHandler("/demo.v1.Greeter/Greet",
		func(ctx context.Context, req *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
			if requests.Add(1) == 1 {
				<-ctx.Done()
				return nil, connect.NewError(connect.CodeCanceled, ctx.Err())
			}
			return connect.NewResponse(wrapperspb.String("hello " + req.Msg.GetValue())), nil
		})
	srv := httptest.NewServer(h)
	defer srv.Close()

	client := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](srv.Client(), srv.URL+"/demo.v1.Greeter/Greet",
		connect.WithIdempotency(connect.IdempotencyNoSideEffects))
	hedgeAfter := retry.Constant(time.Millisecond).Take(1) // in production: a Latency's Quantile(0.95)
	resp, err := retryconnect.Hedge(context.Background(), hedgeAfter, client.CallUnary,
		connect.NewRequest(wrapperspb.String("Barbara")))
	fmt.Println(resp.Msg.GetValue(), err, requests.Load())
	// Output:
	// hello Barbara <nil> 2
}
