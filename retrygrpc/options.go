package retrygrpc

import (
	"slices"
	"strconv"
	"sync"

	"github.com/seed-b8c8f69d/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// DefaultReplayLimit is the number of bytes of client messages a stream
// call keeps for replay when no ReplayLimit option is given: 256 KiB, as
// grpc-go's own retry buffer.
const DefaultReplayLimit = 256 << 10

// An Option configures an interceptor. Options are made only by this package
// (Codes, Methods, ReplayLimit, With, Throttle, Breaker, Limiter); the zero Option
// does nothing. Options
// are plain values: build them once and share them freely. Later options
// replace earlier ones of the same kind, except With, whose retry.Options
// accumulate in order.
type Option struct {
	kind    optionKind
	codes   uint32                       // Codes: a bit per retryable code
	methods func(fullMethod string) bool // Methods
	limit   int                          // ReplayLimit
	opts    []retry.Option               // With
	gate    any                          // Throttle: *perTarget[retry.Throttle]; Breaker: *perTarget[retry.Breaker]; Limiter: *perTarget[retry.Limiter]
}

type optionKind uint8

const (
	noOption optionKind = iota
	codesOption
	methodsOption
	replayOption
	withOption
	throttleOption
	breakerOption
	limiterOption
)

// Codes returns an Option that makes the interceptors retry the status codes
// cs, and no other; the default is codes.Unavailable alone. For hedging,
// they are gRFC A6's non-fatal codes: a failure with any other code ends the
// call. Codes() with no code retries nothing (the interceptor then only adds
// AttemptTimeout and the budget's deposits).
//
// Whatever the codes, a Canceled or DeadlineExceeded status caused by the
// caller's own context is never retried, and a server's negative or
// malformed pushback stops the retries. An attempt cut short by
// retry.AttemptTimeout is retried whatever its code.
//
// Codes panics if a code is OK or not one of the 17 codes gRPC defines.
func Codes(cs ...codes.Code) Option {
	var set uint32
	for _, c := range cs {
		if c == codes.OK || c > codes.Unauthenticated {
			panic("retrygrpc: Codes: " + c.String() + " is not a retryable status code")
		}
		set |= 1 << c
	}
	return Option{kind: codesOption, codes: set}
}

// Methods returns an Option that restricts the interceptors to the calls for
// which allow returns true; allow receives the full method name, as in
// "/package.Service/Method". Every other call goes to the invoker or
// streamer once, untouched: it is never sent twice, never hedged, and it
// neither deposits into nor draws from a Budget. Use it to exclude methods
// that are not idempotent. The default allows every method.
//
// allow may be called concurrently from many calls, once per call.
//
// Methods panics if allow is nil.
func Methods(allow func(fullMethod string) bool) Option {
	if allow == nil {
		panic("retrygrpc: Methods: nil function")
	}
	return Option{kind: methodsOption, methods: allow}
}

// ReplayLimit returns an Option that bounds, in encoded bytes, the client
// messages a call keeps so that it can send them again on a retry; the
// default is DefaultReplayLimit (256 KiB). A stream call whose messages
// exceed the limit is committed at the message that crosses it: from then
// on it is not retried, and its errors reach the caller unchanged. A limit
// of 0 keeps nothing, so a stream is retried only if it fails before its
// first message is sent.
//
// A unary call of UnaryClientInterceptor whose request exceeds the limit is
// sent once and never retried, as grpc-go commits it: with a limit of 0, only
// a request that encodes to no bytes at all is retried.
// HedgeUnaryClientInterceptor ignores ReplayLimit: every attempt it sends
// carries the whole request.
//
// The size of each message is its length in the call's codec (the one set
// by grpc.ForceCodecV2, grpc.ForceCodec or grpc.CallContentSubtype, else
// proto); measuring it encodes the message once more, only while the call
// can still be retried (for a unary call, once its first attempt has
// failed).
//
// ReplayLimit panics if bytes is negative.
func ReplayLimit(bytes int) Option {
	if bytes < 0 {
		panic("retrygrpc: ReplayLimit: negative limit " + strconv.Itoa(bytes))
	}
	return Option{kind: replayOption, limit: bytes}
}

// With returns an Option that passes opts to every retry.Do (or
// retry.Hedge) the interceptor makes: retry.WithClock, retry.If,
// retry.OnRetry, retry.OnDone, retry.WithBudget, retry.MaxPushback,
// retry.MaxElapsed, retry.MaxRetriesIf, retry.AttemptTimeout, retry.WithLatency
// and retry.OnDiscard all work as those functions describe, on the entry
// points that take them (retry.Do refuses retry.OnDiscard and
// retry.OnHedgeDone at the call). If predicates, MaxRetriesIf's match and
// OnRetry hooks see each attempt's status error, without its pushback
// marker. For a stream, the retries end at the commit, so OnDone runs then,
// not at the end of the stream. With copies opts.
//
// With panics if an option is a retry.IfValue: the interceptors judge a call
// by its status, never by its reply (use Codes or retry.If).
func With(opts ...retry.Option) Option {
	for _, o := range opts {
		if o.JudgesValues() {
			panic("retrygrpc: With: retry.IfValue is not supported; judge calls by their status with Codes or retry.If")
		}
	}
	return Option{kind: withOption, opts: append([]retry.Option(nil), opts...)}
}

// Throttle returns an Option that gives each target its own retry.Throttle,
// made by newThrottle the first time a call to that target is seen and kept
// for the Option's life (newThrottle may return nil: no Throttle for that
// target). Every interceptor built from the Option shares that one value
// per target: newThrottle is called once per target, whichever interceptor
// (unary, stream, hedging) meets the target first. The target is the connection's, as
// cc.Target() reports it: the string given to grpc.NewClient, such as
// "dns:///api.example.com:443". Every attempt of a call asks the Throttle
// first, as retry.WithThrottle describes; with hedging, every attempt.
//
// # What counts
//
// What counts as the target's answer: every status but Unavailable,
// DeadlineExceeded and ResourceExhausted, which are the server failing or
// shedding load, as is any code Codes retries, and a server's pushback. A
// call whose context ended counts for nothing. With a Throttle or Breaker,
// an Unavailable, DeadlineExceeded or ResourceExhausted status that Codes
// does not retry ends the call as a refused pushback does: at once, as it
// is, and with hedging the attempts outstanding go on.
//
// A call whose first attempt is not let through fails at once with a status
// of code Unavailable whose error matches retry.ErrThrottled (or
// retry.ErrBreakerOpen, for a Breaker) with errors.Is. For a stream, an attempt
// counts when it is committed, when the retries end.
//
// # Why per target
//
// Prefer Throttle and Breaker to With(retry.WithThrottle(…)), which would
// share one value among all targets and count the overload codes that
// Codes does not retry as answers.
//
// Throttle panics if newThrottle is nil.
func Throttle(newThrottle func(target string) *retry.Throttle) Option {
	if newThrottle == nil {
		panic("retrygrpc: Throttle: nil function")
	}
	return Option{kind: throttleOption, gate: &perTarget[retry.Throttle]{newValue: newThrottle}}
}

// Breaker returns an Option that gives each target its own retry.Breaker,
// made by newBreaker as Throttle makes Throttles: see Throttle for the
// keying and what counts.
//
// Breaker panics if newBreaker is nil.
func Breaker(newBreaker func(target string) *retry.Breaker) Option {
	if newBreaker == nil {
		panic("retrygrpc: Breaker: nil function")
	}
	return Option{kind: breakerOption, gate: &perTarget[retry.Breaker]{newValue: newBreaker}}
}

// Limiter returns an Option that gives each target its own retry.Limiter,
// made by newLimiter as Throttle makes Throttles: every attempt of a call
// to the target holds one of its permits while in flight, as
// retry.WithLimiter describes (with hedging, a copy that finds no permit
// free is not sent), and outcomes count as they do for Throttle. A call
// whose first attempt gets no permit fails with a status of code
// Unavailable whose error matches retry.ErrLimited with errors.Is.
//
// Limiter panics if newLimiter is nil.
func Limiter(newLimiter func(target string) *retry.Limiter) Option {
	if newLimiter == nil {
		panic("retrygrpc: Limiter: nil function")
	}
	return Option{kind: limiterOption, gate: &perTarget[retry.Limiter]{newValue: newLimiter}}
}

// config is the result of applying an interceptor's options.
type config struct {
	codes    uint32
	methods  func(string) bool
	limit    int
	opts     []retry.Option
	throttle *perTarget[retry.Throttle] // Throttle's, shared with every config made from the Option
	breaker  *perTarget[retry.Breaker]  // Breaker's, likewise
	limiter  *perTarget[retry.Limiter]  // Limiter's, likewise

	mu      sync.Mutex // serialises the making of a target's options
	targets sync.Map   // target → []retry.Option: opts with the target's Throttle, Breaker and Limiter
}

// gated reports whether the interceptor has a Throttle, Breaker or Limiter.
func (c *config) gated() bool { return c.throttle != nil || c.breaker != nil || c.limiter != nil }

// optsFor returns the retry options of a call to cc: the interceptor's,
// with cc's target's Throttle, Breaker and Limiter, made on its first call.
func (c *config) optsFor(cc *grpc.ClientConn) []retry.Option {
	if !c.gated() {
		return c.opts
	}
	target := ""
	if cc != nil {
		target = cc.Target()
	}
	if o, ok := c.targets.Load(target); ok {
		return o.([]retry.Option)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if o, ok := c.targets.Load(target); ok {
		return o.([]retry.Option)
	}
	o := slices.Clip(c.opts)
	if c.throttle != nil {
		if th := c.throttle.get(target); th != nil {
			o = append(o, retry.WithThrottle(th))
		}
	}
	if c.breaker != nil {
		if b := c.breaker.get(target); b != nil {
			o = append(o, retry.WithBreaker(b))
		}
	}
	if c.limiter != nil {
		if l := c.limiter.get(target); l != nil {
			o = append(o, retry.WithLimiter(l))
		}
	}
	c.targets.Store(target, o)
	return o
}

// overload reports whether code is the server failing or shedding load,
// which a Throttle, Breaker or Limiter does not count as an answer.
func overload(code codes.Code) bool {
	return code == codes.Unavailable || code == codes.DeadlineExceeded || code == codes.ResourceExhausted
}

func newConfig(opts []Option) *config {
	c := &config{codes: 1 << codes.Unavailable, limit: DefaultReplayLimit}
	for _, o := range opts {
		switch o.kind {
		case codesOption:
			c.codes = o.codes
		case methodsOption:
			c.methods = o.methods
		case replayOption:
			c.limit = o.limit
		case withOption:
			c.opts = append(c.opts, o.opts...)
		case throttleOption:
			c.throttle = o.gate.(*perTarget[retry.Throttle])
		case breakerOption:
			c.breaker = o.gate.(*perTarget[retry.Breaker])
		case limiterOption:
			c.limiter = o.gate.(*perTarget[retry.Limiter])
		}
	}
	c.opts = c.opts[:len(c.opts):len(c.opts)]
	return c
}

// selected reports whether the interceptor handles method.
func (c *config) selected(method string) bool {
	return c.methods == nil || c.methods(method)
}

// retryable reports whether code is one of the codes to retry.
func (c *config) retryable(code codes.Code) bool {
	return code <= codes.Unauthenticated && c.codes&(1<<code) != 0
}
