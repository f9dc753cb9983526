package retryotel

import (
	"context"
	"sync"

	"github.com/seed-b8c8f69d/retry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The metrics' names, as the README's table lists them.
const (
	MetricAttempts     = "retry.attempts"
	MetricCalls        = "retry.calls"
	MetricWaitDuration = "retry.wait.duration"
	MetricCallDuration = "retry.call.duration"
	MetricHedges       = "retry.hedges"
	MetricHedgeWins    = "retry.hedge.wins"
	MetricBudgetTokens = "retry.budget.tokens"
	MetricThrottle     = "retry.throttle.probability"
	MetricBreakerState = "retry.breaker.state"
)

// The attributes' keys. error.type is OpenTelemetry's.
const (
	AttrDependency   = "retry.dependency"
	AttrBreakerState = "retry.breaker.state"
	AttrOutcome      = "retry.attempt.outcome"
	AttrReason       = "retry.reason"
	AttrHedgeTrigger = "retry.hedge.trigger"
	AttrAttempt      = "retry.attempt"
	AttrDelay        = "retry.delay"
	AttrErrorType    = "error.type"
)

// The values of retry.attempt.outcome.
const (
	outcomeSuccess   = "success"
	outcomeRetryable = "retryable"
	outcomePermanent = "permanent"
	outcomeCancelled = "cancelled"
)

// MaxErrorClasses bounds the distinct error.type values one Telemetry
// records; later new ones are recorded as "_OTHER".
const MaxErrorClasses = 32

// durationBuckets are the explicit bucket boundaries, in seconds, of the
// duration histograms: those of OpenTelemetry's http.client.request.duration.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// instruments are a Telemetry's metrics, and the attribute sets it has
// recorded, kept so that recording allocates nothing after the first time.
type instruments struct {
	attempts   metric.Int64Counter
	calls      metric.Int64Counter
	waits      metric.Float64Histogram
	durations  metric.Float64Histogram
	hedgeCount metric.Int64Counter
	wins       metric.Int64Counter

	dep attribute.KeyValue

	// The sets of a success, made by newInstruments, so that the common
	// call looks nothing up.
	okAttempt, okCall *measure

	mu      sync.RWMutex
	sets    map[setKey]*measure // guarded by mu
	classes int                 // distinct error classes in sets, guarded by mu
	known   map[string]bool     // guarded by mu
}

// A setKey names an attribute set: which metric family, a value of its
// closed set, and an error class ("" for none).
type setKey struct {
	kind  uint8
	value string
	class string
}

const (
	kindAttempt uint8 = iota
	kindCall
	kindWait
	kindHedge
	kindWin
)

// A measure holds the options of one attribute set, made once: passing a
// slice that exists already to Add or Record allocates nothing.
type measure struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

func newInstruments(m metric.Meter, dep attribute.KeyValue, s *settings) (*instruments, error) {
	in := &instruments{dep: dep, sets: make(map[setKey]*measure), known: make(map[string]bool)}
	var err error
	if in.attempts, err = m.Int64Counter(MetricAttempts, metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts made, by outcome.")); err != nil {
		return nil, err
	}
	if in.calls, err = m.Int64Counter(MetricCalls, metric.WithUnit("{call}"),
		metric.WithDescription("Calls ended, by the reason they ended.")); err != nil {
		return nil, err
	}
	if in.waits, err = m.Float64Histogram(MetricWaitDuration, metric.WithUnit("s"),
		metric.WithDescription("Waits before a retry."), metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, err
	}
	if in.durations, err = m.Float64Histogram(MetricCallDuration, metric.WithUnit("s"),
		metric.WithDescription("Calls' durations, from the start of the first attempt, waits included."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, err
	}
	if in.hedgeCount, err = m.Int64Counter(MetricHedges, metric.WithUnit("{hedge}"),
		metric.WithDescription("Hedges started: attempts of a hedged call after the first.")); err != nil {
		return nil, err
	}
	if in.wins, err = m.Int64Counter(MetricHedgeWins, metric.WithUnit("{hedge}"),
		metric.WithDescription("Hedged calls won by a hedge rather than by their first attempt.")); err != nil {
		return nil, err
	}
	in.okAttempt = in.make(setKey{kindAttempt, outcomeSuccess, ""})
	in.okCall = in.make(setKey{kindCall, reasonSuccess, ""})
	set := metric.WithAttributeSet(attribute.NewSet(dep))
	if b := s.budget; b != nil {
		if _, err = m.Float64ObservableGauge(MetricBudgetTokens, metric.WithUnit("{token}"),
			metric.WithDescription("Tokens in the retry budget."),
			metric.WithFloat64Callback(func(_ context.Context, o metric.Float64Observer) error {
				o.Observe(b.Tokens(), set)
				return nil
			})); err != nil {
			return nil, err
		}
	}
	if th := s.throttle; th != nil {
		if _, err = m.Float64ObservableGauge(MetricThrottle, metric.WithUnit("1"),
			metric.WithDescription("Probability with which the adaptive throttle rejects an attempt."),
			metric.WithFloat64Callback(func(_ context.Context, o metric.Float64Observer) error {
				o.Observe(th.Probability(), set)
				return nil
			})); err != nil {
			return nil, err
		}
	}
	if br := s.breaker; br != nil {
		states := [...]struct {
			state retry.BreakerState
			set   metric.ObserveOption
		}{
			{retry.BreakerClosed, metric.WithAttributeSet(attribute.NewSet(dep, attribute.String(AttrBreakerState, "closed")))},
			{retry.BreakerOpen, metric.WithAttributeSet(attribute.NewSet(dep, attribute.String(AttrBreakerState, "open")))},
			{retry.BreakerHalfOpen, metric.WithAttributeSet(attribute.NewSet(dep, attribute.String(AttrBreakerState, "half_open")))},
		}
		if _, err = m.Int64ObservableGauge(MetricBreakerState, metric.WithUnit("{state}"),
			metric.WithDescription("The circuit breaker's state: 1 for the current one, 0 for the others."),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
				now := br.State()
				for _, st := range states {
					v := int64(0)
					if st.state == now {
						v = 1
					}
					o.Observe(v, st.set)
				}
				return nil
			})); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// measure returns the options of the set k names, made the first time.
func (in *instruments) measure(k setKey) *measure {
	in.mu.RLock()
	m := in.sets[k]
	in.mu.RUnlock()
	if m != nil {
		return m
	}
	return in.make(k)
}

// make makes the options of the set k names, bounding the error classes.
func (in *instruments) make(k setKey) *measure {
	in.mu.Lock()
	defer in.mu.Unlock()
	if m := in.sets[k]; m != nil {
		return m
	}
	if k.class != "" && !in.known[k.class] {
		if in.classes >= MaxErrorClasses {
			k.class = classOther
			if m := in.sets[k]; m != nil {
				// orig is not kept: classes past the bound take this
				// slower path, rather than grow the map without bound.
				return m
			}
		} else {
			in.known[k.class] = true
			in.classes++
		}
	}
	kvs := []attribute.KeyValue{in.dep}
	switch k.kind {
	case kindAttempt:
		kvs = append(kvs, attribute.String(AttrOutcome, k.value))
	case kindCall:
		kvs = append(kvs, attribute.String(AttrReason, k.value))
	}
	if k.class != "" {
		kvs = append(kvs, attribute.String(AttrErrorType, k.class))
	}
	opt := metric.WithAttributeSet(attribute.NewSet(kvs...))
	m := &measure{add: []metric.AddOption{opt}, record: []metric.RecordOption{opt}}
	in.sets[k] = m
	return m
}

func (in *instruments) attempt(outcome, class string) { in.attemptN(outcome, class, 1) }

func (in *instruments) attemptN(outcome, class string, n int) {
	if n <= 0 {
		return
	}
	m := in.okAttempt
	if outcome != outcomeSuccess || class != "" {
		m = in.measure(setKey{kindAttempt, outcome, class})
	}
	in.attempts.Add(ctxOf(), int64(n), m.add...)
}

func (in *instruments) wait(class string, s float64) {
	in.waits.Record(ctxOf(), s, in.measure(setKey{kindWait, "", class}).record...)
}

func (in *instruments) call(reason, class string, s float64) {
	if reason == reasonSuccess && class == "" {
		in.calls.Add(ctxOf(), 1, in.okCall.add...)
		in.durations.Record(ctxOf(), s, in.okCall.record...)
		return
	}
	in.calls.Add(ctxOf(), 1, in.measure(setKey{kindCall, reason, class}).add...)
	in.durations.Record(ctxOf(), s, in.measure(setKey{kindCall, reason, ""}).record...)
}

func (in *instruments) hedges(n int) {
	if n > 0 {
		in.hedgeCount.Add(ctxOf(), int64(n), in.measure(setKey{kindHedge, "", ""}).add...)
	}
}

func (in *instruments) hedgeWon() {
	in.wins.Add(ctxOf(), 1, in.measure(setKey{kindWin, "", ""}).add...)
}
