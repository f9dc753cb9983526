package retryotel

import (
	"context"
	"errors"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryotel/internal/scope"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of the meter and tracer that
// retryotel gets from its providers. The scope's version is the retryotel
// module's release the program was built with (none in a build of the
// module itself).
const ScopeName = "github.com/seed-b8c8f69d/retry/retryotel"

// A Telemetry records the retries, hedges and budgets of the calls to one
// dependency in OpenTelemetry: the metrics of the README's table, and
// span events or spans (see AttemptSpans). Make one per dependency with
// New, and install it on every call to that dependency: its Options on
// retry.Retry, retry.Do and their retryhttp and retrygrpc callers, its
// HedgeOptions on retry.Hedge, or the functions Retry, Do and Hedge of
// this package, which also trace.
//
// A Telemetry is safe for concurrent use by any number of calls and
// goroutines.
type Telemetry struct {
	dep      attribute.KeyValue
	classify func(error) string
	reasons  []reason
	mp       metric.MeterProvider
	tracer   trace.Tracer
	traces   bool         // tracer is not the no-op one
	spans    bool         // AttemptSpans: a span per attempt rather than an event per retry
	m        *instruments // nil: the meter provider is the no-op one
	opts     []retry.Option
	hedge    []retry.Option
}

// An Option configures New. Options are made only by this package.
type Option struct {
	apply func(*settings)
}

type settings struct {
	mp       metric.MeterProvider
	tp       trace.TracerProvider
	classify func(error) string
	budget   *retry.Budget
	throttle *retry.Throttle
	breaker  *retry.Breaker
	spans    bool
	reasons  []reason
}

// WithMeterProvider returns an Option that makes New get its meter from mp
// rather than from otel.GetMeterProvider(). With the no-op provider
// (go.opentelemetry.io/otel/metric/noop), the Telemetry records no metric
// and its Options are empty: the calls do no work for it at all.
//
// WithMeterProvider panics if mp is nil.
func WithMeterProvider(mp metric.MeterProvider) Option {
	if mp == nil {
		panic("retryotel: WithMeterProvider: nil provider")
	}
	return Option{func(s *settings) { s.mp = mp }}
}

// WithTracerProvider returns an Option that makes New get its tracer from
// tp rather than from otel.GetTracerProvider(); the tracer makes the
// attempt spans of AttemptSpans. Span events go to the caller's span
// whatever its provider. With the no-op provider
// (go.opentelemetry.io/otel/trace/noop), Retry, Do and Hedge trace
// nothing.
//
// WithTracerProvider panics if tp is nil.
func WithTracerProvider(tp trace.TracerProvider) Option {
	if tp == nil {
		panic("retryotel: WithTracerProvider: nil provider")
	}
	return Option{func(s *settings) { s.tp = tp }}
}

// WithErrorClass returns an Option that makes classify name the class of
// each failed attempt's error, the value of the error.type attribute, in
// place of DefaultErrorClass (call it to extend it). classify must return
// a value from a small closed set, never text taken from the error: past
// MaxErrorClasses distinct values, New's Telemetry records every new one
// as "_OTHER". It may be called concurrently; an empty result means
// "_OTHER".
//
// WithErrorClass panics if classify is nil.
func WithErrorClass(classify func(error) string) Option {
	if classify == nil {
		panic("retryotel: WithErrorClass: nil function")
	}
	return Option{func(s *settings) { s.classify = classify }}
}

// WithBudget returns an Option that reports b's tokens as the observable
// gauge retry.budget.tokens, read at each collection. Give the same
// Budget to the calls with retry.WithBudget; several Telemetry values may
// report one Budget under their own dependency names.
//
// WithBudget panics if b is nil.
func WithBudget(b *retry.Budget) Option {
	if b == nil {
		panic("retryotel: WithBudget: nil Budget")
	}
	return Option{func(s *settings) { s.budget = b }}
}

// WithThrottle returns an Option that reports th's rejection probability
// (Throttle.Probability) as the observable gauge
// retry.throttle.probability, read at each collection. Give the same
// Throttle to the calls with retry.WithThrottle.
//
// WithThrottle panics if th is nil.
func WithThrottle(th *retry.Throttle) Option {
	if th == nil {
		panic("retryotel: WithThrottle: nil Throttle")
	}
	return Option{func(s *settings) { s.throttle = th }}
}

// WithBreaker returns an Option that reports b's state as the observable
// gauge retry.breaker.state: one point per state (retry.breaker.state is
// "closed", "open" or "half_open"), 1 for b's state at the collection and
// 0 for the others. Give the same Breaker to the calls with
// retry.WithBreaker.
//
// WithBreaker panics if b is nil.
func WithBreaker(b *retry.Breaker) Option {
	if b == nil {
		panic("retryotel: WithBreaker: nil Breaker")
	}
	return Option{func(s *settings) { s.breaker = b }}
}

// WithReason returns an Option that makes the Telemetry record name as the
// retry.reason of a call that gave up with a reason err matches
// (errors.Is), ahead of the reasons it knows. Use it for the sentinels of
// a layer of your own; name must be a constant, lower-case snake_case.
//
// WithReason panics if err is nil or name is empty.
func WithReason(err error, name string) Option {
	if err == nil || name == "" {
		panic("retryotel: WithReason: nil error or empty name")
	}
	return Option{func(s *settings) { s.reasons = append(s.reasons, reason{err, name}) }}
}

// AttemptSpans returns an Option that makes Retry, Do and Hedge of this
// package start a child span of the caller's span, named "retry.attempt",
// for every attempt, and pass its context to the attempt, rather than add
// a "retry" event to the caller's span before each retry (the default).
// Each attempt span has the attributes retry.attempt (its 1-based number)
// and retry.dependency, the status Error and error.type when it failed.
func AttemptSpans() Option {
	return Option{func(s *settings) { s.spans = true }}
}

// New returns a Telemetry for the calls to the dependency named
// dependency, the value of the retry.dependency attribute of everything it
// records: a constant such as "payments" or "db-primary", never a value
// taken from a request (its cardinality multiplies every metric's).
//
// New creates its instruments at once; if the meter provider fails to
// create one, New returns the error and no Telemetry. The gauges of
// WithBudget, WithThrottle and WithBreaker are read by callbacks that the
// meter keeps for as long as it lives: make a Telemetry once per
// dependency, not per call.
//
// New panics if dependency is empty.
func New(dependency string, opts ...Option) (*Telemetry, error) {
	if dependency == "" {
		panic("retryotel: New: empty dependency name")
	}
	var s settings
	for _, o := range opts {
		if o.apply != nil {
			o.apply(&s)
		}
	}
	if s.mp == nil {
		s.mp = otel.GetMeterProvider()
	}
	if s.tp == nil {
		s.tp = otel.GetTracerProvider()
	}
	if s.classify == nil {
		s.classify = DefaultErrorClass
	}
	t := &Telemetry{
		dep:      attribute.String(AttrDependency, dependency),
		classify: s.classify,
		reasons:  append(s.reasons, knownReasons...),
		mp:       s.mp,
		tracer:   s.tp.Tracer(ScopeName, scope.TracerOptions()...),
		spans:    s.spans,
	}
	_, noTraces := s.tp.(tracenoop.TracerProvider)
	t.traces = !noTraces
	if _, ok := s.mp.(metricnoop.MeterProvider); !ok {
		m, err := newInstruments(s.mp.Meter(ScopeName, scope.MeterOptions()...), t.dep, &s)
		if err != nil {
			return nil, err
		}
		t.m = m
		t.opts = []retry.Option{retry.OnRetry(t.onRetry), retry.OnDone(t.onDone)}
		t.hedge = []retry.Option{retry.OnHedgeDone(t.onHedgeDone)}
	}
	return t, nil
}

// Options returns the options that record t's metrics for a retry.Retry
// or retry.Do call, or for the calls of a retryhttp.Transport or a
// retrygrpc retrying interceptor: pass them with the call's own options.
// They record nothing about traces (Retry and Do of this package do).
// The slice is t's own, shared by every call: append it to a slice of
// your own rather than append to it. Empty with the no-op meter provider.
//
// Recording a successful call allocates nothing beyond what the meter
// provider allocates. A failed attempt may allocate: DefaultErrorClass
// does, and so does the first measurement of each attribute set.
func (t *Telemetry) Options() []retry.Option {
	return t.opts[:len(t.opts):len(t.opts)]
}

// HedgeOptions is Options for retry.Hedge, a hedging retryhttp.Transport
// or retrygrpc's hedging interceptor: it counts hedges and the hedges
// that won as well. Don't pass both Options and HedgeOptions to a call.
func (t *Telemetry) HedgeOptions() []retry.Option {
	return t.hedge[:len(t.hedge):len(t.hedge)]
}

// MeterProvider returns the meter provider t records to, for
// instrumentation built on t such as retryotelgrpc's.
func (t *Telemetry) MeterProvider() metric.MeterProvider { return t.mp }

// ErrorClass returns the error.type that t records for err: "" for nil,
// and otherwise what WithErrorClass's function (or DefaultErrorClass)
// returns, "_OTHER" if that is empty.
func (t *Telemetry) ErrorClass(err error) string { return t.class(err) }

// seconds is d in seconds, the unit of every duration retryotel records.
func seconds(d time.Duration) float64 { return d.Seconds() }

// onRetry counts the attempt that failed and will be retried, and records
// the wait before the next one.
func (t *Telemetry) onRetry(a retry.Attempt) {
	class := t.class(a.Err)
	t.m.attempt(outcomeRetryable, class)
	t.m.wait(class, seconds(a.Delay))
}

// onDone counts the call, its duration and its last attempt. Every other
// attempt of a Retry or Do call was followed by a retry, and was counted
// by onRetry.
func (t *Telemetry) onDone(o retry.Outcome) {
	r := t.reasonOf(o)
	class := t.class(lastErr(o))
	if o.Attempts > 0 {
		t.m.attempt(lastOutcome(o, r), class)
	}
	t.m.call(r, class, seconds(o.Elapsed))
}

// onHedgeDone counts a Hedge call, its attempts and the hedge that won.
func (t *Telemetry) onHedgeDone(o retry.Outcome, h retry.HedgeResult) {
	r := t.reasonOf(o)
	class := t.class(lastErr(o))
	// Every call of fn after the first was a hedge. Counting them here
	// rather than in an OnRetry hook saves Hedge a copy of its options.
	t.m.hedges(o.Attempts - 1)
	won := 0
	if h.Winner > 0 {
		won = 1
		t.m.attempt(outcomeSuccess, "")
		if h.Winner > 1 {
			t.m.hedgeWon()
		}
	}
	// Of the failures Hedge handled, only the last error is known: the
	// others are counted without error.type.
	failed := h.Failed
	if o.Err != nil && failed > 0 {
		t.m.attempt(lastOutcome(o, r), class)
		failed--
	}
	t.m.attemptN(outcomeRetryable, "", failed)
	t.m.attemptN(outcomeCancelled, "", o.Attempts-won-h.Failed)
	t.m.call(r, class, seconds(o.Elapsed))
}

// lastErr is the error of the last attempt of the call o describes.
func lastErr(o retry.Outcome) error {
	// Retry, Do and Hedge return their *Error as it is: no need for
	// errors.As, whose target would escape.
	if e, ok := o.Err.(*retry.Error); ok {
		return e.Last
	}
	return o.Err
}

// lastOutcome is the outcome of the last attempt of a Retry or Do call
// that ended for reason r.
func lastOutcome(o retry.Outcome, r string) string {
	switch r {
	case reasonSuccess:
		return outcomeSuccess
	case reasonNotRetried:
		return outcomePermanent
	case reasonCancelled:
		return outcomeCancelled
	case reasonDeadline:
		// The deadline passed during the attempt, or the call gave up
		// before a wait that would have passed it.
		if errors.Is(lastErr(o), context.DeadlineExceeded) {
			return outcomeCancelled
		}
	}
	return outcomeRetryable
}

// ctxOf is the context of metric recordings: the hooks have none.
var ctxOf = context.Background
