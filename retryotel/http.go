package retryotel

import (
	"net/http"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// AttrResendCount is OpenTelemetry's http.request.resend_count: the
// number of times the request was sent before this attempt.
const AttrResendCount = "http.request.resend_count"

// NewTransport returns retryhttp.NewTransport(t.HTTPAttempts(base), s,
// opts...) with t's Options before opts: a retrying Transport whose
// retries t records as metrics, and traces as HTTPAttempts says.
//
// To keep otelhttp's span and http.client.request.duration per attempt,
// make base an otelhttp.Transport, and put ResendCount beneath it:
//
//	base := otelhttp.NewTransport(retryotel.ResendCount(http.DefaultTransport))
//	client := &http.Client{Transport: t.NewTransport(base, policy)}
//
// Each attempt is then one otelhttp span and one measurement, counted
// once, and retryotel's retry.attempts counts it once as well. Wrapping
// the Transport in otelhttp instead makes one otelhttp span and one
// measurement per call, which then carries the "retry" events.
func (t *Telemetry) NewTransport(base http.RoundTripper, s retry.Schedule, opts ...retry.Option) *retryhttp.Transport {
	return retryhttp.NewTransport(t.HTTPAttempts(base), s, append(t.Options(), opts...)...)
}

// NewHedgingTransport is NewTransport for retryhttp.NewHedgingTransport,
// with t's HedgeOptions: hedges started and won are counted too.
func (t *Telemetry) NewHedgingTransport(base http.RoundTripper, s retry.Schedule, opts ...retry.Option) *retryhttp.Transport {
	return retryhttp.NewHedgingTransport(&attempts{t: t, next: base, event: "hedge"}, s, append(t.HedgeOptions(), opts...)...)
}

// HTTPAttempts returns a RoundTripper to use as the base of a
// retryhttp.Transport, which traces each attempt through next (nil means
// http.DefaultTransport). By default, before an attempt that resends a
// request (its retryhttp.AttemptNumber is above 1), it adds to the span of
// the request's context, the caller's, an event named "retry" with the
// attribute http.request.resend_count. With AttemptSpans, it sends every
// attempt in a span of its own, named "retry.attempt", with the attributes
// retry.attempt, retry.dependency and, on a resend,
// http.request.resend_count; a failed attempt (an error, or a status of
// 500 or more) sets error.type and the status Error. The span ends when
// next returns the response's headers.
//
// The returned RoundTripper allocates nothing of its own for an attempt
// that is not traced.
func (t *Telemetry) HTTPAttempts(next http.RoundTripper) http.RoundTripper {
	return &attempts{t: t, next: next, event: "retry"}
}

type attempts struct {
	t     *Telemetry
	next  http.RoundTripper
	event string
}

func (a *attempts) RoundTrip(req *http.Request) (*http.Response, error) {
	next := a.next
	if next == nil {
		next = http.DefaultTransport
	}
	ctx := req.Context()
	n := retryhttp.AttemptNumber(ctx)
	if !a.t.spans {
		if n > 1 {
			if span := trace.SpanFromContext(ctx); span.IsRecording() {
				span.AddEvent(a.event, trace.WithAttributes(attribute.Int(AttrResendCount, n-1)))
			}
		}
		return next.RoundTrip(req)
	}
	if !a.t.traces {
		return next.RoundTrip(req)
	}
	kvs := []attribute.KeyValue{a.t.dep, attribute.Int(AttrAttempt, n)}
	if n > 1 {
		kvs = append(kvs, attribute.Int(AttrResendCount, n-1))
	}
	ctx, span := a.t.tracer.Start(ctx, "retry.attempt", trace.WithAttributes(kvs...))
	defer span.End()
	resp, err := next.RoundTrip(req.WithContext(ctx))
	switch {
	case err != nil:
		class := a.t.class(err)
		span.SetAttributes(attribute.String(AttrErrorType, class))
		span.SetStatus(codes.Error, class)
	case resp.StatusCode >= 500:
		class := a.t.class(&retryhttp.StatusError{StatusCode: resp.StatusCode})
		span.SetAttributes(attribute.String(AttrErrorType, class))
		span.SetStatus(codes.Error, class)
	}
	return resp, err
}

// ResendCount returns a RoundTripper that sends requests through next (nil
// means http.DefaultTransport) and, on a request that a
// retryhttp.Transport resends (its retryhttp.AttemptNumber is above 1),
// sets http.request.resend_count on the span of the request's context.
// Put it beneath a RoundTripper that makes a span per request, such as
// otelhttp's Transport, itself the base of a retryhttp.Transport: the
// span is then that attempt's. It allocates nothing on a first attempt.
func ResendCount(next http.RoundTripper) http.RoundTripper {
	return resendCount{next}
}

type resendCount struct{ next http.RoundTripper }

func (r resendCount) RoundTrip(req *http.Request) (*http.Response, error) {
	next := r.next
	if next == nil {
		next = http.DefaultTransport
	}
	if n := retryhttp.AttemptNumber(req.Context()); n > 1 {
		if span := trace.SpanFromContext(req.Context()); span.IsRecording() {
			span.SetAttributes(attribute.Int(AttrResendCount, n-1))
		}
	}
	return next.RoundTrip(req)
}
