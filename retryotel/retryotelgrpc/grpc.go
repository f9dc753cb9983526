package retryotelgrpc

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
	"github.com/seed-b8c8f69d/retry/retryotel"
	"github.com/seed-b8c8f69d/retry/retryotel/internal/scope"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The instruments' names, units and attributes, as gRFC A66 and A96 define
// them.
const (
	MetricAttemptStarted   = "grpc.client.attempt.started"  // Counter, {attempt}: grpc.method, grpc.target
	MetricAttemptDuration  = "grpc.client.attempt.duration" // Histogram, s: grpc.method, grpc.target, grpc.status
	MetricCallDuration     = "grpc.client.call.duration"    // Histogram, s: grpc.method, grpc.target, grpc.status
	MetricCallRetries      = "grpc.client.call.retries"     // Histogram, {retry}: grpc.method, grpc.target; 0 is not reported
	MetricCallHedges       = "grpc.client.call.hedges"      // Histogram, {hedge}: grpc.method, grpc.target; 0 is not reported
	MetricCallRetryDelay   = "grpc.client.call.retry_delay" // Histogram, s: grpc.method, grpc.target
	AttrMethod             = "grpc.method"
	AttrTarget             = "grpc.target"
	AttrStatus             = "grpc.status"
	methodOther            = "other"
	scopeName              = "github.com/seed-b8c8f69d/retry/retryotel/retryotelgrpc"
	eventRetry, eventHedge = "retry", "hedge"
	attrAttempt, attrDelay = retryotel.AttrAttempt, retryotel.AttrDelay
	attrErrorType          = retryotel.AttrErrorType
)

// A66's latency buckets, in seconds, and A96's buckets for the retries and
// hedges of a call (grpc.client.call.retries and grpc.client.call.hedges):
// 1 to 5, since A6 caps a call at 5 attempts.
var (
	latencyBuckets = []float64{0, 0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008, 0.001, 0.002,
		0.003, 0.004, 0.005, 0.006, 0.008, 0.01, 0.013, 0.016, 0.02, 0.025, 0.03,
		0.04, 0.05, 0.065, 0.08, 0.1, 0.13, 0.16, 0.2, 0.25, 0.3, 0.4, 0.5, 0.65,
		0.8, 1, 2, 5, 10, 20, 50, 100}
	retryBuckets = []float64{1, 2, 3, 4, 5}
)

// statusNames are the values of grpc.status, as A66 spells them.
var statusNames = [...]string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
	"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
	"UNAUTHENTICATED",
}

// statusName is grpc.status for code.
func statusName(c codes.Code) string {
	if int(c) < len(statusNames) {
		return statusNames[c]
	}
	return "UNKNOWN"
}

// codeOf is the status code of err, the code of a context's error for one
// that has no status.
func codeOf(err error) codes.Code {
	if _, ok := status.FromError(err); !ok {
		return status.FromContextError(err).Code()
	}
	return status.Code(err)
}

// ErrorClass is an error.type for retryotel.WithErrorClass that names a
// gRPC status error by its code, as grpc.status does ("UNAVAILABLE"), and
// any other error as retryotel.DefaultErrorClass does.
func ErrorClass(err error) string {
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return statusName(se.GRPCStatus().Code())
	}
	return retryotel.DefaultErrorClass(err)
}

// An Option configures New.
type Option struct{ apply func(*Interceptors) }

// RegisteredMethods returns an Option that records the full method names
// given ("/pkg.Service/Method" or "pkg.Service/Method") as grpc.method. A
// call made through generated code (with grpc.StaticMethod) is registered
// anyway; any other method is recorded as "other", as A66 requires, so that
// the method names a client makes up cannot grow the metrics without bound.
func RegisteredMethods(names ...string) Option {
	return Option{func(in *Interceptors) {
		for _, n := range names {
			in.methods[strings.TrimPrefix(n, "/")] = true
		}
	}}
}

// WithClock returns an Option that times attempts, calls and delays on c,
// rather than the real clock: pass the FakeClock given to the retries with
// retry.WithClock to get exact figures in tests.
//
// WithClock panics if c is nil.
func WithClock(c retry.Clock) Option {
	if c == nil {
		panic("retryotelgrpc: WithClock: nil Clock")
	}
	return Option{func(in *Interceptors) { in.clock = c }}
}

// Interceptors makes retrygrpc's interceptors, recording in OpenTelemetry.
// It is safe for concurrent use.
type Interceptors struct {
	tel     *retryotel.Telemetry
	clock   retry.Clock
	methods map[string]bool // registered, without the leading slash; read-only after New

	started       metric.Int64Counter
	attemptLength metric.Float64Histogram
	callLength    metric.Float64Histogram
	retries       metric.Int64Histogram
	hedges        metric.Int64Histogram
	delay         metric.Float64Histogram
	sentSize      metric.Int64Histogram
	rcvdSize      metric.Int64Histogram
	sized         atomic.Bool // StatsHandler was called
}

// New returns Interceptors that record on tel's meter provider, and add
// tel's metrics and events.
func New(tel *retryotel.Telemetry, opts ...Option) (*Interceptors, error) {
	in := &Interceptors{tel: tel, methods: map[string]bool{}}
	for _, o := range opts {
		if o.apply != nil {
			o.apply(in)
		}
	}
	m := tel.MeterProvider().Meter(scopeName, scope.MeterOptions()...)
	var err error
	if in.started, err = m.Int64Counter(MetricAttemptStarted, metric.WithUnit("{attempt}"),
		metric.WithDescription("Number of client call attempts started.")); err != nil {
		return nil, err
	}
	if in.attemptLength, err = m.Float64Histogram(MetricAttemptDuration, metric.WithUnit("s"),
		metric.WithDescription("End-to-end time taken to complete a client call attempt."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...)); err != nil {
		return nil, err
	}
	if in.callLength, err = m.Float64Histogram(MetricCallDuration, metric.WithUnit("s"),
		metric.WithDescription("Time taken by gRPC to complete an RPC from application's perspective."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...)); err != nil {
		return nil, err
	}
	if in.retries, err = m.Int64Histogram(MetricCallRetries, metric.WithUnit("{retry}"),
		metric.WithDescription("Number of retries during the client call. If there were no retries, 0 is not reported."),
		metric.WithExplicitBucketBoundaries(retryBuckets...)); err != nil {
		return nil, err
	}
	if in.hedges, err = m.Int64Histogram(MetricCallHedges, metric.WithUnit("{hedge}"),
		metric.WithDescription("Number of hedges during the client call. If there were no hedges, 0 is not reported."),
		metric.WithExplicitBucketBoundaries(retryBuckets...)); err != nil {
		return nil, err
	}
	if in.delay, err = m.Float64Histogram(MetricCallRetryDelay, metric.WithUnit("s"),
		metric.WithDescription("Total time of delay while there is no active attempt during the client call."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...)); err != nil {
		return nil, err
	}
	if in.sentSize, err = m.Int64Histogram(MetricAttemptSentSize, metric.WithUnit("By"),
		metric.WithDescription("Compressed message bytes sent per client call attempt."),
		metric.WithExplicitBucketBoundaries(sizeBuckets...)); err != nil {
		return nil, err
	}
	if in.rcvdSize, err = m.Int64Histogram(MetricAttemptRcvdSize, metric.WithUnit("By"),
		metric.WithDescription("Compressed message bytes received per call attempt."),
		metric.WithExplicitBucketBoundaries(sizeBuckets...)); err != nil {
		return nil, err
	}
	return in, nil
}

// UnaryClientInterceptor returns retrygrpc.UnaryClientInterceptor(s, opts...)
// with the Telemetry's Options added through retrygrpc.With, wrapped so
// that each call records A66's and A96's metrics, and a "retry" event on
// the caller's span before each retry (retry.attempt, the number of the
// attempt that failed; retry.delay, the time since it ended, in seconds;
// error.type).
func (in *Interceptors) UnaryClientInterceptor(s retry.Schedule, opts ...retrygrpc.Option) grpc.UnaryClientInterceptor {
	opts = append(opts[:len(opts):len(opts)], retrygrpc.With(in.tel.Options()...))
	return in.wrap(retrygrpc.UnaryClientInterceptor(s, opts...), false)
}

// HedgeUnaryClientInterceptor is UnaryClientInterceptor for
// retrygrpc.HedgeUnaryClientInterceptor, with the Telemetry's
// HedgeOptions: it records grpc.client.call.hedges rather than retries,
// and a "hedge" event as each hedge starts.
func (in *Interceptors) HedgeUnaryClientInterceptor(s retry.Schedule, opts ...retrygrpc.Option) grpc.UnaryClientInterceptor {
	opts = append(opts[:len(opts):len(opts)], retrygrpc.With(in.tel.HedgeOptions()...))
	return in.wrap(retrygrpc.HedgeUnaryClientInterceptor(s, opts...), true)
}

func (in *Interceptors) now() time.Time {
	if in.clock == nil {
		return time.Now()
	}
	return in.clock.Now()
}

// method is grpc.method for a call of fullMethod with callOpts.
func (in *Interceptors) method(fullMethod string, callOpts []grpc.CallOption) string {
	name := strings.TrimPrefix(fullMethod, "/")
	if in.methods[name] {
		return name
	}
	for _, o := range callOpts {
		if _, ok := o.(grpc.StaticMethodCallOption); ok {
			return name
		}
	}
	return methodOther
}

func (in *Interceptors) wrap(inner grpc.UnaryClientInterceptor, hedging bool) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		c := in.newCall(ctx, method, cc, callOpts, hedging)
		start := in.now()
		err := inner(ctx, method, req, reply, cc, func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, callOpts ...grpc.CallOption) error {
			start := c.begin(ctx)
			err := invoker(c.tag(ctx), method, req, reply, cc, callOpts...)
			c.endAt(ctx, start, err)
			return err
		}, callOpts...)
		in.finish(ctx, c, start, err)
		return err
	}
}

// newCall returns the state of a call of method on cc.
func (in *Interceptors) newCall(ctx context.Context, method string, cc *grpc.ClientConn, callOpts []grpc.CallOption, hedging bool) *call {
	c := &call{in: in, hedging: hedging, span: trace.SpanFromContext(ctx)}
	c.traced = c.span.IsRecording()
	c.baseKVs = []attribute.KeyValue{attribute.String(AttrMethod, in.method(method, callOpts)), attribute.String(AttrTarget, cc.CanonicalTarget())}
	c.base = metric.WithAttributeSet(attribute.NewSet(c.baseKVs...))
	return c
}

// finish records the end of call c, which started at start and ended with
// err.
func (in *Interceptors) finish(ctx context.Context, c *call, start time.Time, err error) {
	in.callLength.Record(ctx, in.now().Sub(start).Seconds(), c.withStatus(err))
	c.mu.Lock()
	n, delay := c.attempts, c.delay
	c.mu.Unlock()
	if n > 1 {
		if c.hedging {
			in.hedges.Record(ctx, int64(n-1), c.base)
		} else {
			in.retries.Record(ctx, int64(n-1), c.base)
		}
		in.delay.Record(ctx, delay.Seconds(), c.base)
	}
}

// call is the state of one call, shared by its attempts (which run
// concurrently when hedging).
type call struct {
	in      *Interceptors
	hedging bool
	span    trace.Span
	traced  bool
	base    metric.MeasurementOption
	baseKVs []attribute.KeyValue

	mu       sync.Mutex
	attempts int           // attempts started
	active   int           // attempts running
	idle     time.Time     // when the last attempt ended, while none runs
	delay    time.Duration // time with no attempt running, after the first began
	lastErr  error         // the error of the attempt that ended last
}

func (c *call) withStatus(err error) metric.MeasurementOption {
	kvs := append(c.baseKVs[:len(c.baseKVs):len(c.baseKVs)], attribute.String(AttrStatus, statusName(codeOf(err))))
	return metric.WithAttributeSet(attribute.NewSet(kvs...))
}

// begin records the start of an attempt and returns when it started.
func (c *call) begin(ctx context.Context) time.Time {
	now := c.in.now()
	c.mu.Lock()
	c.attempts++
	n := c.attempts
	var gap time.Duration
	if c.active == 0 && n > 1 {
		gap = now.Sub(c.idle)
		c.delay += gap
	}
	c.active++
	prev := c.lastErr
	c.mu.Unlock()
	c.in.started.Add(ctx, 1, c.base)
	if n > 1 && c.traced {
		c.event(n, gap, prev)
	}
	return now
}

// endAt records the end, with err, of an attempt that began at start.
func (c *call) endAt(ctx context.Context, start time.Time, err error) {
	end := c.in.now()
	c.in.attemptLength.Record(ctx, end.Sub(start).Seconds(), c.withStatus(err))
	c.mu.Lock()
	c.active--
	if c.active == 0 {
		c.idle = end
	}
	c.lastErr = err
	c.mu.Unlock()
}

// event adds the event of attempt n to the caller's span.
func (c *call) event(n int, gap time.Duration, prev error) {
	if c.hedging {
		kvs := []attribute.KeyValue{attribute.Int(attrAttempt, n)}
		c.span.AddEvent(eventHedge, trace.WithAttributes(kvs...))
		return
	}
	kvs := []attribute.KeyValue{attribute.Int(attrAttempt, n-1), attribute.Float64(attrDelay, gap.Seconds())}
	if prev != nil {
		kvs = append(kvs, attribute.String(attrErrorType, c.in.tel.ErrorClass(prev)))
	}
	c.span.AddEvent(eventRetry, trace.WithAttributes(kvs...))
}
