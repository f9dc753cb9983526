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
	"github.com/seed-b8c8f69d/retry/retryhttp"
	"github.com/seed-b8c8f69d/retry/retryotel"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
)

// ResendCount beneath otelhttp, itself the base of a retrying Transport:
// otelhttp makes one span per attempt, and the resends carry
// http.request.resend_count.
func ExampleResendCount() {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n++; n < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	tel, _, spans, tp := sdk()
	base := otelhttp.NewTransport(retryotel.ResendCount(srv.Client().Transport), otelhttp.WithTracerProvider(tp),
		otelhttp.WithSpanNameFormatter(func(string, *http.Request) string { return "GET /" }))
	client := &http.Client{Transport: tel.NewTransport(base, retry.Constant(100*time.Millisecond).Take(2),
		retry.WithClock(retry.NewFakeClock(time.Unix(0, 0))))}
	resp, err := client.Get(srv.URL)
	if err != nil {
		panic(err)
	}
	_ = resp.Body.Close()
	for _, s := range spans.Ended() {
		count := "-"
		for _, kv := range s.Attributes() {
			if kv.Key == retryotel.AttrResendCount {
				count = kv.Value.String()
			}
		}
		fmt.Println(s.Name(), "resend count", count)
	}
	// Output:
	// GET / resend count -
	// GET / resend count 1
	// GET / resend count 2
}

// HTTPAttempts as the base of a Transport made by hand, with AttemptSpans:
// a span per attempt.
func ExampleTelemetry_HTTPAttempts() {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n++; n == 1 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	tel, _, spans, _ := sdk(retryotel.AttemptSpans())
	rt := retryhttp.NewTransport(tel.HTTPAttempts(srv.Client().Transport), retry.Constant(time.Millisecond).Take(1),
		append(tel.Options(), retry.WithClock(retry.NewFakeClock(time.Unix(0, 0))))...)
	rt.RetryStatus = func(code int) bool { return code == http.StatusBadGateway }
	resp, err := (&http.Client{Transport: rt}).Get(srv.URL)
	if err != nil {
		panic(err)
	}
	_ = resp.Body.Close()
	printSpans(spans.Ended())
	// Output:
	// span retry.attempt {error.type=502 retry.attempt=1 retry.dependency=payments} Error
	// span retry.attempt {http.request.resend_count=1 retry.attempt=2 retry.dependency=payments} Unset
}

// A hedging Transport counts its hedges.
func ExampleTelemetry_NewHedgingTransport() {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n++; n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	tel, reader, _, _ := sdk()
	client := &http.Client{Transport: tel.NewHedgingTransport(srv.Client().Transport, retry.Constant(time.Second).Take(1),
		retry.WithClock(retry.NewFakeClock(time.Unix(0, 0))))}
	resp, err := client.Get(srv.URL)
	if err != nil {
		panic(err)
	}
	_ = resp.Body.Close()
	printMetrics(reader)
	// Output:
	// retry.attempts{retry.attempt.outcome=retryable retry.dependency=payments} 1
	// retry.attempts{retry.attempt.outcome=success retry.dependency=payments} 1
	// retry.call.duration{retry.dependency=payments retry.reason=success} count=1 sum=0
	// retry.calls{retry.dependency=payments retry.reason=success} 1
	// retry.hedge.wins{retry.dependency=payments} 1
	// retry.hedges{retry.dependency=payments} 1
}

// WithReason names the reason of a layer of your own: here the cause of a
// context cancelled on shutdown.
func ExampleWithReason() {
	errShutdown := errors.New("shutting down")
	tel, reader, _, _ := sdk(retryotel.WithReason(errShutdown, "shutdown"))
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errShutdown)
	err := retry.Do(ctx, retry.Constant(time.Second), func(context.Context) error { return nil }, tel.Options()...)
	fmt.Println(errors.Is(err, errShutdown))
	printMetrics(reader)
	// Output:
	// true
	// retry.call.duration{retry.dependency=payments retry.reason=shutdown} count=1 sum=0
	// retry.calls{retry.dependency=payments retry.reason=shutdown} 1
}

// Options records metrics on any call of package retry, with no change to
// the call but its options; HedgeOptions does the same for Hedge.
func ExampleTelemetry_Options() {
	tel, reader, _, _ := sdk()
	clock := retry.WithClock(retry.NewFakeClock(time.Unix(0, 0)))
	err := retry.Do(context.Background(), retry.Constant(time.Second).Take(1), func(context.Context) error {
		return retry.Permanent(errReset)
	}, append(tel.Options(), clock)...)
	fmt.Println(err)
	_, _ = retry.Hedge(context.Background(), retry.Constant(time.Second), func(context.Context) (int, error) {
		return 1, nil
	}, append(tel.HedgeOptions(), clock)...)
	printMetrics(reader)
	// Output:
	// connection reset
	// retry.attempts{error.type=_OTHER retry.attempt.outcome=permanent retry.dependency=payments} 1
	// retry.attempts{retry.attempt.outcome=success retry.dependency=payments} 1
	// retry.call.duration{retry.dependency=payments retry.reason=not_retried} count=1 sum=0
	// retry.call.duration{retry.dependency=payments retry.reason=success} count=1 sum=0
	// retry.calls{error.type=_OTHER retry.dependency=payments retry.reason=not_retried} 1
	// retry.calls{retry.dependency=payments retry.reason=success} 1
}
