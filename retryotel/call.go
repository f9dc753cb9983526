package retryotel

import (
	"context"
	"sync/atomic"

	"github.com/seed-b8c8f69d/retry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Retry is retry.Retry with t's metrics (its Options) and traces: by
// default, an event named "retry" on the caller's span (the span of ctx)
// before each wait, with the attributes retry.attempt (the number of the
// attempt that failed), retry.delay (the wait, in seconds) and error.type;
// with AttemptSpans, a span per attempt instead. opts are passed on after
// t's options.
//
// When the caller's span is not recording (there is none, or it is not
// sampled) and t makes no attempt spans, Retry traces nothing and
// allocates nothing of its own: it is retry.Retry with t's Options. Tracing
// a call allocates its hooks (or its attempts' wrapper), along with what
// the tracer allocates for the events or spans.
func Retry[T any](ctx context.Context, t *Telemetry, s retry.Schedule, fn func(context.Context) (T, error), opts ...retry.Option) (T, error) {
	if len(opts) == 0 && !t.tracing(ctx) {
		return retry.Retry(ctx, s, fn, t.opts...)
	}
	return retryTraced(ctx, t, s, fn, opts)
}

// retryTraced is Retry with options or traces. It is apart from Retry so
// that the common call does not clear buf.
func retryTraced[T any](ctx context.Context, t *Telemetry, s retry.Schedule, fn func(context.Context) (T, error), opts []retry.Option) (T, error) {
	var buf [8]retry.Option
	if !t.tracing(ctx) {
		return retry.Retry(ctx, s, fn, t.with(&buf, t.opts, opts)...)
	}
	if t.spans {
		return retry.Retry(ctx, s, wrap(t, fn), t.with(&buf, t.opts, opts)...)
	}
	ev := &events{span: trace.SpanFromContext(ctx), class: t.class}
	return retry.Retry(ctx, s, fn, t.with(&buf, t.opts, opts, retry.OnRetry(ev.retry))...)
}

// Do is Retry for functions that return only an error, as retry.Do is.
func Do(ctx context.Context, t *Telemetry, s retry.Schedule, fn func(context.Context) error, opts ...retry.Option) error {
	if len(opts) == 0 && !t.tracing(ctx) {
		return retry.Do(ctx, s, fn, t.opts...)
	}
	return doTraced(ctx, t, s, fn, opts)
}

// doTraced is retryTraced for Do.
func doTraced(ctx context.Context, t *Telemetry, s retry.Schedule, fn func(context.Context) error, opts []retry.Option) error {
	var buf [8]retry.Option
	if !t.tracing(ctx) {
		return retry.Do(ctx, s, fn, t.with(&buf, t.opts, opts)...)
	}
	if t.spans {
		_, err := retry.Retry(ctx, s, wrap(t, func(ctx context.Context) (struct{}, error) { return struct{}{}, fn(ctx) }),
			t.with(&buf, t.opts, opts)...)
		return err
	}
	ev := &events{span: trace.SpanFromContext(ctx), class: t.class}
	return retry.Do(ctx, s, fn, t.with(&buf, t.opts, opts, retry.OnRetry(ev.retry))...)
}

// Hedge is retry.Hedge with t's HedgeOptions and traces: by default, an
// event named "hedge" on the caller's span as each hedge starts, with the
// attributes retry.attempt (the number of the attempt starting),
// retry.hedge.trigger ("delay" or "failure") and, after a failure, its
// error.type; with AttemptSpans, a span per attempt instead, a child of
// the caller's, concurrent with the others. What it allocates is as for
// Retry.
func Hedge[T any](ctx context.Context, t *Telemetry, s retry.Schedule, fn func(context.Context) (T, error), opts ...retry.Option) (T, error) {
	if len(opts) == 0 && !t.tracing(ctx) {
		return retry.Hedge(ctx, s, fn, t.hedge...)
	}
	return hedgeTraced(ctx, t, s, fn, opts)
}

// hedgeTraced is retryTraced for Hedge.
func hedgeTraced[T any](ctx context.Context, t *Telemetry, s retry.Schedule, fn func(context.Context) (T, error), opts []retry.Option) (T, error) {
	var buf [8]retry.Option
	if !t.tracing(ctx) {
		return retry.Hedge(ctx, s, fn, t.with(&buf, t.hedge, opts)...)
	}
	if t.spans {
		return retry.Hedge(ctx, s, wrap(t, fn), t.with(&buf, t.hedge, opts)...)
	}
	ev := &events{span: trace.SpanFromContext(ctx), class: t.class}
	return retry.Hedge(ctx, s, fn, t.with(&buf, t.hedge, opts, retry.OnRetry(ev.hedge))...)
}

// tracing reports whether a call under ctx is traced.
func (t *Telemetry) tracing(ctx context.Context) bool {
	if !t.traces || t.spans {
		return t.traces
	}
	return trace.SpanFromContext(ctx).IsRecording()
}

// with returns own followed by opts and extra, in buf if they fit.
func (t *Telemetry) with(buf *[8]retry.Option, own, opts []retry.Option, extra ...retry.Option) []retry.Option {
	if len(opts) == 0 && len(extra) == 0 {
		return own
	}
	all := buf[:0]
	if n := len(own) + len(opts) + len(extra); n > len(buf) {
		all = make([]retry.Option, 0, n)
	}
	all = append(all, own...)
	all = append(all, opts...)
	return append(all, extra...)
}

// events adds the events of one call to its caller's span.
type events struct {
	span  trace.Span
	class func(error) string
}

func (e *events) retry(a retry.Attempt) {
	kvs := []attribute.KeyValue{
		attribute.Int(AttrAttempt, a.Number),
		attribute.Float64(AttrDelay, seconds(a.Delay)),
	}
	if a.Err != nil {
		kvs = append(kvs, attribute.String(AttrErrorType, e.class(a.Err)))
	}
	e.span.AddEvent("retry", trace.WithAttributes(kvs...))
}

func (e *events) hedge(a retry.Attempt) {
	kvs := []attribute.KeyValue{attribute.Int(AttrAttempt, a.Number+1), attribute.String(AttrHedgeTrigger, "delay")}
	if a.Err != nil {
		kvs[1] = attribute.String(AttrHedgeTrigger, "failure")
		kvs = append(kvs, attribute.String(AttrErrorType, e.class(a.Err)))
	}
	e.span.AddEvent("hedge", trace.WithAttributes(kvs...))
}

// wrap returns fn, each of whose calls runs in a span of its own.
func wrap[T any](t *Telemetry, fn func(context.Context) (T, error)) func(context.Context) (T, error) {
	var n atomic.Int64
	return func(ctx context.Context) (T, error) {
		ctx, span := t.tracer.Start(ctx, "retry.attempt",
			trace.WithAttributes(t.dep, attribute.Int64(AttrAttempt, n.Add(1))))
		defer span.End() // also if fn panics
		v, err := fn(ctx)
		if err != nil {
			class := t.class(err)
			span.SetAttributes(attribute.String(AttrErrorType, class))
			span.SetStatus(codes.Error, class)
		}
		return v, err
	}
}
