package retrygrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// MaxServiceConfigAttempts is the most attempts a service config's
// retryPolicy or hedgingPolicy gives a call: a larger maxAttempts is cut to
// it, as grpc-go does by default (gRFC A6).
const MaxServiceConfigAttempts = 5

// A ServiceConfig is the retry part of a gRPC service config (gRFC A6).
// Its interceptors give each call its method's policy, found as grpc-go
// finds it: the methodConfig naming the method, else its service, else the
// default (an empty name); a method with no policy is sent once.
//
// A retryPolicy retries failures with its retryableStatusCodes, up to
// maxAttempts attempts, waiting before the n-th retry A6's random delay
// (see Backoff). A hedgingPolicy hedges unary calls: up to maxAttempts
// attempts, hedgingDelay apart, a code outside nonFatalStatusCodes ending
// the call; a streaming method with one is sent once.
//
// retryThrottling is A6's token bucket, one per target, not a retry.Budget:
// it starts full at maxTokens, loses one token for each attempt that fails
// with a code the policy retries (hedging: a non-fatal code), gains
// tokenRatio for each call that succeeds, and while it holds maxTokens/2
// or fewer, no retry is made and no hedge sent.
//
// Timeouts, waitForReady, message sizes and load balancing are validated
// but left to grpc-go: give it the same config, and grpc.WithDisableRetry.
// A ServiceConfig is safe for concurrent use; its interceptors may serve
// any number of connections. docs/GRPC.md ("Service config") compares it
// with grpc-go's retry.
type ServiceConfig struct {
	methods    map[string]*methodPolicy // "/service/method", "/service/", or "" for the default
	throttling *throttlingPolicy
	targets    sync.Map // target → *a6Throttle
}

// methodPolicy is one methodConfig's retry or hedging policy; both nil:
// the method is not retried.
type methodPolicy struct {
	retry *retryPolicy
	hedge *hedgingPolicy
}

type retryPolicy struct {
	maxAttempts       int
	initialBackoff    time.Duration
	maxBackoff        time.Duration
	backoffMultiplier float64
	codes             []codes.Code
}

type hedgingPolicy struct {
	maxAttempts int
	delay       time.Duration
	codes       []codes.Code
}

// throttlingPolicy is retryThrottling's parameters.
type throttlingPolicy struct {
	MaxTokens  float64
	TokenRatio float64
}

// The JSON forms. Field names match case-insensitively, as encoding/json
// and grpc-go read them; unknown fields are ignored.
type (
	jsonServiceConfig struct {
		LoadBalancingPolicy *string
		LoadBalancingConfig *json.RawMessage
		MethodConfig        *[]jsonMethodConfig
		RetryThrottling     *throttlingPolicy
		HealthCheckConfig   *struct{ ServiceName string }
	}
	jsonMethodConfig struct {
		Name                    *[]jsonName
		WaitForReady            *bool
		Timeout                 *jsonDuration
		MaxRequestMessageBytes  *int64
		MaxResponseMessageBytes *int64
		RetryPolicy             *jsonRetryPolicy
		HedgingPolicy           *jsonHedgingPolicy
	}
	jsonName struct {
		Service string
		Method  string
	}
	// jsonRetryPolicy's fields and their types are grpc-go's, so that an
	// invalid policy is reported in the same words.
	jsonRetryPolicy struct {
		MaxAttempts          int
		InitialBackoff       jsonDuration
		MaxBackoff           jsonDuration
		BackoffMultiplier    float64
		RetryableStatusCodes []codes.Code
	}
	jsonHedgingPolicy struct {
		MaxAttempts         int
		HedgingDelay        jsonDuration
		NonFatalStatusCodes []codes.Code
	}
)

// ParseServiceConfig parses a gRPC service config in its JSON form, as
// grpc.WithDefaultServiceConfig or a name resolver gives it, and returns
// its retry policies. It rejects what grpc-go rejects, with grpc-go's
// messages: an empty config, malformed JSON or field types, a duration
// without its "s" unit, a name with a method but no service, a name given
// twice, a loadBalancingConfig with no registered balancer, a retryPolicy
// whose maxAttempts is below 2, whose initialBackoff, maxBackoff or
// backoffMultiplier is not positive, or whose retryableStatusCodes is empty,
// a status code gRPC does not define, and a retryThrottling whose maxTokens
// is outside (0, 1000] or whose tokenRatio is not positive. It also rejects
// what A6 forbids and grpc-go does not read: a hedgingPolicy whose
// maxAttempts is below 2 or whose hedgingDelay is negative, and a
// methodConfig with both a retryPolicy and a hedgingPolicy. A maxAttempts
// above MaxServiceConfigAttempts is cut to it.
func ParseServiceConfig(js string) (*ServiceConfig, error) {
	if len(js) == 0 {
		return nil, errors.New("no JSON service config provided")
	}
	var raw jsonServiceConfig
	if err := json.Unmarshal([]byte(js), &raw); err != nil {
		return nil, err
	}
	if raw.LoadBalancingConfig != nil {
		if err := checkBalancers(*raw.LoadBalancingConfig); err != nil {
			return nil, err
		}
	}
	sc := &ServiceConfig{methods: map[string]*methodPolicy{}}
	if raw.MethodConfig != nil {
		for _, m := range *raw.MethodConfig {
			if m.Name == nil {
				continue
			}
			p, err := m.policy()
			if err != nil {
				return nil, err
			}
			for _, n := range *m.Name {
				path, err := n.path()
				if err != nil {
					return nil, err
				}
				if _, ok := sc.methods[path]; ok {
					return nil, errors.New("duplicated name")
				}
				sc.methods[path] = p
			}
		}
	}
	if t := raw.RetryThrottling; t != nil {
		if mt := t.MaxTokens; mt <= 0 || mt > 1000 {
			return nil, fmt.Errorf("invalid retry throttling config: maxTokens (%v) out of range (0, 1000]", mt)
		}
		if tr := t.TokenRatio; tr <= 0 {
			return nil, fmt.Errorf("invalid retry throttling config: tokenRatio (%v) may not be negative", tr)
		}
		sc.throttling = t
	}
	return sc, nil
}

// checkBalancers checks a loadBalancingConfig as grpc-go does before
// parsing each policy's own config: a list of one-key objects, one of
// which names a registered balancer.
func checkBalancers(raw json.RawMessage) error {
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return err
	}
	var names []string
	for _, entry := range list {
		if len(entry) != 1 {
			return fmt.Errorf("invalid loadBalancingConfig: entry %v does not contain exactly 1 policy/config pair: %q", entry, raw)
		}
		for name := range entry {
			if balancer.Get(name) != nil {
				return nil
			}
			names = append(names, name)
		}
	}
	return fmt.Errorf("invalid loadBalancingConfig: no supported policies found in %v", names)
}

// path returns the key of a name: "/service/method", "/service/" or "".
func (n jsonName) path() (string, error) {
	if n.Service == "" {
		if n.Method != "" {
			return "", errors.New("cannot combine empty 'service' and non-empty 'method'")
		}
		return "", nil
	}
	return "/" + n.Service + "/" + n.Method, nil
}

// policy validates m's retry or hedging policy.
func (m *jsonMethodConfig) policy() (*methodPolicy, error) {
	p := &methodPolicy{}
	if m.RetryPolicy != nil && m.HedgingPolicy != nil {
		return nil, errors.New("invalid method config: retryPolicy and hedgingPolicy may not both be set")
	}
	if r := m.RetryPolicy; r != nil {
		if r.MaxAttempts <= 1 || r.InitialBackoff <= 0 || r.MaxBackoff <= 0 || !(r.BackoffMultiplier > 0) ||
			math.IsInf(r.BackoffMultiplier, 0) || len(r.RetryableStatusCodes) == 0 {
			return nil, fmt.Errorf("invalid retry policy (%+v): ", r)
		}
		p.retry = &retryPolicy{
			maxAttempts:       min(r.MaxAttempts, MaxServiceConfigAttempts),
			initialBackoff:    time.Duration(r.InitialBackoff),
			maxBackoff:        time.Duration(r.MaxBackoff),
			backoffMultiplier: r.BackoffMultiplier,
			codes:             r.RetryableStatusCodes,
		}
	}
	if h := m.HedgingPolicy; h != nil {
		if h.MaxAttempts <= 1 || h.HedgingDelay < 0 {
			return nil, fmt.Errorf("invalid hedging policy (%+v): ", h)
		}
		p.hedge = &hedgingPolicy{
			maxAttempts: min(h.MaxAttempts, MaxServiceConfigAttempts),
			delay:       time.Duration(h.HedgingDelay),
			codes:       h.NonFatalStatusCodes,
		}
	}
	return p, nil
}

// A jsonDuration is a google.protobuf.Duration in its JSON form: seconds
// with up to 9 decimals and an "s", as "1.5s" or "-.001s", saturating at
// the extreme Durations; beyond ±315576000000s (the protobuf bound) it is
// an error.
type jsonDuration time.Duration

// String formats d as a time.Duration, as grpc-go's messages do.
func (d jsonDuration) String() string { return time.Duration(d).String() }

func (d *jsonDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := parseProtoDuration(s)
	if err != nil {
		return err
	}
	*d = jsonDuration(v)
	return nil
}

// parseProtoDuration parses the JSON text of a google.protobuf.Duration.
func parseProtoDuration(s string) (time.Duration, error) {
	body, ok := strings.CutSuffix(s, "s")
	if !ok {
		return 0, fmt.Errorf("malformed duration %q: missing seconds unit", s)
	}
	neg := strings.HasPrefix(body, "-")
	body = strings.TrimPrefix(body, "-")
	whole, frac, dotted := strings.Cut(body, ".")
	if dotted && strings.Contains(frac, ".") {
		return 0, fmt.Errorf("malformed duration %q: too many decimals", s)
	}
	if whole == "" && frac == "" {
		return 0, fmt.Errorf("malformed duration %q: contains no numbers", s)
	}
	var sec, ns int64
	if whole != "" {
		if !digits(whole) {
			return 0, fmt.Errorf("malformed duration %q: invalid seconds", s)
		}
		v, err := strconv.ParseInt(whole, 10, 64)
		if err != nil || v > 315_576_000_000 {
			return 0, fmt.Errorf("out of range: %q", s)
		}
		sec = v
	}
	if frac != "" {
		if len(frac) > 9 {
			return 0, fmt.Errorf("malformed duration %q: too many digits after decimal", s)
		}
		if !digits(frac) {
			return 0, fmt.Errorf("malformed duration %q: invalid fraction", s)
		}
		v, _ := strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
		ns = v
	}
	const maxSec = math.MaxInt64 / int64(time.Second)
	if sec > maxSec || sec == maxSec && ns > math.MaxInt64%int64(time.Second) {
		if neg {
			return math.MinInt64, nil
		}
		return math.MaxInt64, nil
	}
	d := time.Duration(sec)*time.Second + time.Duration(ns)
	if neg {
		d = -d
	}
	return d, nil
}

// digits reports whether s is ASCII digits only.
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// policyFor returns the policy of fullMethod, "/service/method", as
// grpc-go's getMethodConfig finds it, or nil.
func (sc *ServiceConfig) policyFor(fullMethod string) *methodPolicy {
	if p, ok := sc.methods[fullMethod]; ok {
		return p
	}
	if i := strings.LastIndex(fullMethod, "/"); i >= 0 {
		if p, ok := sc.methods[fullMethod[:i+1]]; ok {
			return p
		}
	}
	return sc.methods[""]
}

// MethodPolicy returns what the ServiceConfig's interceptors give a call to
// fullMethod ("/service/method"): the schedule and options to pass to
// UnaryClientInterceptor or StreamClientInterceptor (hedging false), or to
// HedgeUnaryClientInterceptor (hedging true). ok is false if the method has
// no policy: it is not retried. retryThrottling is not among the options:
// it needs the state the ServiceConfig's interceptors keep per target.
func (sc *ServiceConfig) MethodPolicy(fullMethod string) (s retry.Schedule, opts []Option, hedging, ok bool) {
	p := sc.policyFor(fullMethod)
	switch {
	case p == nil || p.retry == nil && p.hedge == nil:
		return nil, nil, false, false
	case p.hedge != nil:
		return retry.Constant(p.hedge.delay).Take(p.hedge.maxAttempts - 1), []Option{Codes(p.hedge.codes...)}, true, true
	}
	r := p.retry
	return Backoff(r.initialBackoff, r.maxBackoff, r.backoffMultiplier, r.maxAttempts-1), []Option{Codes(r.codes...)}, false, true
}

// Backoff returns gRFC A6's retry backoff as a Schedule of n delays: the
// i-th (from 1) is a uniformly distributed random delay in
// [0, min(initial·multiplierⁱ⁻¹, maxBackoff)]. Unlike ExponentialFactor, it
// accepts a multiplier below 1, as A6 does.
//
// Backoff panics if initial or maxBackoff is not positive, if multiplier
// is not a positive finite number, or if n is negative.
func Backoff(initial, maxBackoff time.Duration, multiplier float64, n int) retry.Schedule {
	if initial <= 0 || maxBackoff <= 0 || !(multiplier > 0) || math.IsInf(multiplier, 0) || n < 0 {
		panic(fmt.Sprintf("retrygrpc: Backoff: invalid arguments (%v, %v, %v, %d)", initial, maxBackoff, multiplier, n))
	}
	return func(yield func(time.Duration) bool) {
		cur := float64(initial)
		for range n {
			// Compared as floats, converted only when below maxBackoff:
			// float64(maxBackoff) may round up to 2⁶³, which no Duration
			// holds.
			bound := maxBackoff
			if cur < float64(maxBackoff) {
				bound = min(time.Duration(cur), maxBackoff)
			}
			d := rand.Int64() // [0, 2⁶³-1]: the whole range, for a bound that saturated
			if bound < math.MaxInt64 {
				d = rand.Int64N(int64(bound) + 1)
			}
			if !yield(time.Duration(d)) {
				return
			}
			cur *= multiplier // an overflow to +Inf stays at or above maxBackoff
		}
	}
}

// An a6Throttle is retryThrottling's token bucket for one target. Tokens
// are kept as thousandths, as A6 says, so that tokenRatio's three decimals
// add up exactly.
type a6Throttle struct {
	mu     sync.Mutex
	tokens int64 // thousandths
	max    int64
	ratio  int64
}

func newA6Throttle(p *throttlingPolicy) *a6Throttle {
	m := int64(math.Round(p.MaxTokens * 1000))
	return &a6Throttle{tokens: m, max: m, ratio: int64(math.Round(p.TokenRatio * 1000))}
}

// fail counts a failed attempt, and reports whether a retry or hedge may
// still follow: whether more than half of the tokens are left.
func (t *a6Throttle) fail() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tokens = max(t.tokens-1000, 0)
	return t.tokens*2 > t.max
}

// allows reports, without counting anything, whether more than half of
// the tokens are left.
func (t *a6Throttle) allows() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.tokens*2 > t.max
}

// succeed counts a call that succeeded.
func (t *a6Throttle) succeed() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tokens = min(t.tokens+t.ratio, t.max)
}

// throttleFor returns the token bucket of cc's target, or nil without
// retryThrottling.
func (sc *ServiceConfig) throttleFor(cc *grpc.ClientConn) *a6Throttle {
	if sc.throttling == nil {
		return nil
	}
	target := ""
	if cc != nil {
		target = cc.Target()
	}
	if t, ok := sc.targets.Load(target); ok {
		return t.(*a6Throttle)
	}
	t, _ := sc.targets.LoadOrStore(target, newA6Throttle(sc.throttling))
	return t.(*a6Throttle)
}

// scMethod is the interceptors of one method's policy for one target.
type scMethod struct {
	unary  grpc.UnaryClientInterceptor
	stream grpc.StreamClientInterceptor
	hedge  *hedgingPolicy // when hedging
}

// throttledHedge is the error that a hedge retryThrottling did not let
// through reports to the hedging interceptor, when no attempt has failed
// yet to report instead.
type throttledHedge struct{ code codes.Code }

func (e *throttledHedge) Error() string {
	return "retrygrpc: hedge not sent: retryThrottling has too few tokens"
}

func (e *throttledHedge) GRPCStatus() *status.Status { return status.New(e.code, e.Error()) }

// methodKey identifies the interceptors of a method for a target.
type methodKey struct{ target, method string }

// interceptors returns a function that finds, making them on first use,
// the interceptors of a method for a target, with the options opts added.
func (sc *ServiceConfig) interceptors(opts []Option) func(method string, cc *grpc.ClientConn, bucket *a6Throttle) *scMethod {
	var cache sync.Map // methodKey → *scMethod
	return func(method string, cc *grpc.ClientConn, bucket *a6Throttle) *scMethod {
		key := methodKey{method: method}
		if bucket != nil && cc != nil {
			key.target = cc.Target() // the bucket is the target's
		}
		if v, ok := cache.Load(key); ok {
			return v.(*scMethod)
		}
		m := &scMethod{}
		if s, mopts, hedging, ok := sc.MethodPolicy(method); ok {
			all := append(append([]Option(nil), mopts...), opts...)
			switch {
			case hedging:
				m.hedge = sc.policyFor(method).hedge
				m.unary = HedgeUnaryClientInterceptor(s, all...)
			default:
				if bucket != nil {
					// A6: an attempt that fails with a code the policy
					// retries loses a token, and no retry follows once too
					// few are left. If sees only those failures: the
					// interceptors end the others before asking it.
					all = append(all, With(retry.If(func(error) bool { return bucket.fail() })))
				}
				m.unary = UnaryClientInterceptor(s, all...)
				m.stream = StreamClientInterceptor(s, all...)
			}
		}
		v, _ := cache.LoadOrStore(key, m)
		return v.(*scMethod)
	}
}

// UnaryClientInterceptor returns a unary interceptor that retries or
// hedges each call as its method's policy says (see ServiceConfig), with
// opts added after the options of each policy (such as
// With(retry.WithLogger(…)) or ReplayLimit): an option that sets what the
// policy sets (Codes) replaces it.
func (sc *ServiceConfig) UnaryClientInterceptor(opts ...Option) grpc.UnaryClientInterceptor {
	lookup := sc.interceptors(append([]Option(nil), opts...))
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		bucket := sc.throttleFor(cc)
		m := lookup(method, cc, bucket)
		var err error
		switch {
		case m.unary == nil:
			err = invoker(ctx, method, req, reply, cc, callOpts...)
		case m.hedge != nil && bucket != nil:
			err = m.unary(ctx, method, req, reply, cc, hedgeInvoker(invoker, bucket, m.hedge.codes), callOpts...)
		default:
			err = m.unary(ctx, method, req, reply, cc, invoker, callOpts...)
		}
		if err == nil && bucket != nil {
			bucket.succeed()
		}
		return err
	}
}

// StreamClientInterceptor returns a stream interceptor that retries each
// stream as its method's retryPolicy says, with opts added as
// UnaryClientInterceptor adds them; a stream whose method has a
// hedgingPolicy, or no policy, is sent once. With retryThrottling, a stream
// counts as a success when it ends with an OK status.
func (sc *ServiceConfig) StreamClientInterceptor(opts ...Option) grpc.StreamClientInterceptor {
	lookup := sc.interceptors(append([]Option(nil), opts...))
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		bucket := sc.throttleFor(cc)
		m := lookup(method, cc, bucket)
		var cs grpc.ClientStream
		var err error
		if m.stream == nil {
			cs, err = streamer(ctx, desc, cc, method, callOpts...)
		} else {
			cs, err = m.stream(ctx, desc, cc, method, streamer, callOpts...)
		}
		if err != nil || bucket == nil {
			return cs, err
		}
		return &countedStream{ClientStream: cs, bucket: bucket, serverStreams: desc.ServerStreams}, nil
	}
}

// countedStream counts a stream that ends with an OK status as a success.
type countedStream struct {
	grpc.ClientStream
	bucket        *a6Throttle
	serverStreams bool
	once          sync.Once
}

func (s *countedStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err == io.EOF || err == nil && !s.serverStreams {
		s.once.Do(s.bucket.succeed)
	}
	return err
}

// hedgeInvoker counts each hedged attempt's failure with a non-fatal code,
// and sends an attempt after the first only while bucket allows it: one it
// does not send fails at once, with the last failure seen (so that the
// caller gets a real one), or a throttledHedge of the first non-fatal code.
func hedgeInvoker(invoker grpc.UnaryInvoker, bucket *a6Throttle, nonFatal []codes.Code) grpc.UnaryInvoker {
	var mu sync.Mutex // guards n and last
	n := 0
	var last error
	code := codes.Unavailable
	if len(nonFatal) > 0 {
		code = nonFatal[0]
	}
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, opts ...grpc.CallOption) error {
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		if !first && !bucket.allows() {
			mu.Lock()
			defer mu.Unlock()
			if last != nil {
				return last
			}
			return &throttledHedge{code: code}
		}
		err := invoker(ctx, method, req, reply, cc, opts...)
		if err != nil && ctx.Err() == nil && slices.Contains(nonFatal, status.Code(err)) {
			bucket.fail()
			mu.Lock()
			last = err
			mu.Unlock()
		}
		return err
	}
}
