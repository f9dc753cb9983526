// Package retryotel records the calls of package retry, retryhttp and
// retrygrpc in OpenTelemetry: attempts by outcome, calls by the reason they
// ended, waits, call durations, hedges started and won, a budget's tokens,
// span events before each retry or a span per attempt, and
// http.request.resend_count on HTTP attempts. Package retryotelgrpc adds
// gRPC's A66 and A96 metrics. The README lists every metric, attribute and
// value.
//
// Make a Telemetry per dependency with New, then either install its
// Options (HedgeOptions for Hedge) on the calls, for metrics, or make the
// calls through Retry, Do and Hedge of this package, for metrics and
// traces:
//
//	tel, err := retryotel.New("payments")
//	err = retry.Do(ctx, policy, charge, tel.Options()...)
//	err = retryotel.Do(ctx, tel, policy, charge)
//	client := &http.Client{Transport: tel.NewTransport(http.DefaultTransport, policy)}
//
// Every attribute value comes from a closed set, so that no metric grows
// without bound. With the no-op providers, nothing runs and nothing is
// allocated; with the SDK, a successful call allocates nothing beyond what
// the SDK allocates itself.
package retryotel
