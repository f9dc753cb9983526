package retryotel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryotel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// sdk returns a Telemetry on SDK providers whose metrics and spans the
// examples print.
func sdk(opts ...retryotel.Option) (*retryotel.Telemetry, *sdkmetric.ManualReader, *tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	reader, spans := sdkmetric.NewManualReader(), tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	opts = append([]retryotel.Option{
		retryotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
		retryotel.WithTracerProvider(tp),
	}, opts...)
	tel, err := retryotel.New("payments", opts...)
	if err != nil {
		panic(err)
	}
	return tel, reader, spans, tp
}

var errReset = errors.New("connection reset")

// Do records the call's metrics and adds a "retry" event to the caller's
// span before each wait.
func ExampleDo() {
	tel, reader, spans, tp := sdk(retryotel.WithErrorClass(func(err error) string {
		if errors.Is(err, errReset) {
			return "reset"
		}
		return retryotel.DefaultErrorClass(err)
	}))
	ctx, span := tp.Tracer("app").Start(context.Background(), "checkout")
	calls := 0
	err := retryotel.Do(ctx, tel, retry.Constant(time.Second).Take(3), func(context.Context) error {
		if calls++; calls < 3 {
			return errReset
		}
		return nil
	}, retry.WithClock(retry.NewFakeClock(time.Unix(0, 0))))
	span.End()
	fmt.Println("err:", err)
	printSpans(spans.Ended())
	printMetrics(reader)
	// Output:
	// err: <nil>
	// span checkout {} Unset
	//   event retry {error.type=reset retry.attempt=1 retry.delay=1}
	//   event retry {error.type=reset retry.attempt=2 retry.delay=1}
	// retry.attempts{error.type=reset retry.attempt.outcome=retryable retry.dependency=payments} 2
	// retry.attempts{retry.attempt.outcome=success retry.dependency=payments} 1
	// retry.call.duration{retry.dependency=payments retry.reason=success} count=1 sum=2
	// retry.calls{retry.dependency=payments retry.reason=success} 1
	// retry.wait.duration{error.type=reset retry.dependency=payments} count=2 sum=2
}

// With AttemptSpans, each attempt runs in a span of its own.
func ExampleAttemptSpans() {
	tel, _, spans, tp := sdk(retryotel.AttemptSpans())
	ctx, span := tp.Tracer("app").Start(context.Background(), "checkout")
	calls := 0
	v, err := retryotel.Retry(ctx, tel, retry.Constant(time.Second), func(context.Context) (string, error) {
		if calls++; calls < 2 {
			return "", context.DeadlineExceeded
		}
		return "paid", nil
	}, retry.WithClock(retry.NewFakeClock(time.Unix(0, 0))))
	span.End()
	fmt.Println(v, err)
	printSpans(spans.Ended())
	// Output:
	// paid <nil>
	// span retry.attempt {error.type=timeout retry.attempt=1 retry.dependency=payments} Error
	// span retry.attempt {retry.attempt=2 retry.dependency=payments} Unset
	// span checkout {} Unset
}

// Hedge counts the hedges started and those that won.
func ExampleHedge() {
	tel, reader, _, _ := sdk()
	calls := 0
	v, err := retryotel.Hedge(context.Background(), tel, retry.Constant(50*time.Millisecond).Take(2), func(context.Context) (string, error) {
		if calls++; calls < 2 {
			return "", errReset
		}
		return "fast", nil
	}, retry.WithClock(retry.NewFakeClock(time.Unix(0, 0))))
	fmt.Println(v, err)
	printMetrics(reader)
	// Output:
	// fast <nil>
	// retry.attempts{retry.attempt.outcome=retryable retry.dependency=payments} 1
	// retry.attempts{retry.attempt.outcome=success retry.dependency=payments} 1
	// retry.call.duration{retry.dependency=payments retry.reason=success} count=1 sum=0
	// retry.calls{retry.dependency=payments retry.reason=success} 1
	// retry.hedge.wins{retry.dependency=payments} 1
	// retry.hedges{retry.dependency=payments} 1
}

// A Budget's tokens, as a gauge.
func ExampleWithBudget() {
	budget := retry.NewBudget(0.1, 5)
	_, reader, _, _ := sdk(retryotel.WithBudget(budget))
	printMetrics(reader)
	// Output:
	// retry.budget.tokens{retry.dependency=payments} 5
}

// A retrying Transport with its attempts recorded: the server fails the
// first request with 503.
func ExampleTelemetry_NewTransport() {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n++; n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	tel, reader, spans, tp := sdk()
	client := &http.Client{Transport: tel.NewTransport(srv.Client().Transport, retry.Constant(100*time.Millisecond).Take(2),
		retry.WithClock(retry.NewFakeClock(time.Unix(0, 0))))}
	ctx, span := tp.Tracer("app").Start(context.Background(), "checkout")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := client.Do(req)
	if err != nil {
		panic(err)
	}
	_ = resp.Body.Close()
	span.End()
	fmt.Println(resp.Status)
	printSpans(spans.Ended())
	printMetrics(reader)
	// Output:
	// 200 OK
	// span checkout {} Unset
	//   event retry {http.request.resend_count=1}
	// retry.attempts{error.type=503 retry.attempt.outcome=retryable retry.dependency=payments} 1
	// retry.attempts{retry.attempt.outcome=success retry.dependency=payments} 1
	// retry.call.duration{retry.dependency=payments retry.reason=success} count=1 sum=0.1
	// retry.calls{retry.dependency=payments retry.reason=success} 1
	// retry.wait.duration{error.type=503 retry.dependency=payments} count=1 sum=0.1
}

// DefaultErrorClass names errors from a closed set.
func ExampleDefaultErrorClass() {
	for _, err := range []error{
		context.DeadlineExceeded,
		context.Canceled,
		errors.New("a message that is never a class"),
	} {
		fmt.Println(retryotel.DefaultErrorClass(err))
	}
	// Output:
	// timeout
	// canceled
	// _OTHER
}

// A Throttle's rejection probability and a Breaker's state, as gauges.
func ExampleWithThrottle() {
	th := retry.NewThrottle()
	br := retry.NewBreaker()
	_, reader, _, _ := sdk(retryotel.WithThrottle(th), retryotel.WithBreaker(br))
	printMetrics(reader)
	// Output:
	// retry.breaker.state{retry.breaker.state=closed retry.dependency=payments} 1
	// retry.breaker.state{retry.breaker.state=half_open retry.dependency=payments} 0
	// retry.breaker.state{retry.breaker.state=open retry.dependency=payments} 0
	// retry.throttle.probability{retry.dependency=payments} 0
}
