package retryconnect

import (
	"slices"
	"strconv"
	"sync"

	"connectrpc.com/connect"
	"github.com/seed-b8c8f69d/retry"
)

// An Option configures NewInterceptor or Hedge. Options are made only by
// this package (Codes, Procedures, With, Limiter); the zero Option does
// nothing.
// Options are plain values: build them once and share them freely. Later
// options replace earlier ones of the same kind, except With, whose
// retry.Options accumulate in order.
type Option struct {
	kind  optionKind
	codes uint32                       // Codes: a bit per retryable code
	allow func(spec connect.Spec) bool // Procedures
	opts  []retry.Option               // With
	limit func(string) *retry.Limiter  // Limiter
}

type optionKind uint8

const (
	noOption optionKind = iota
	codesOption
	proceduresOption
	withOption
	limiterOption
)

// Codes returns an Option that retries the error codes cs, and no other;
// the default is connect.CodeUnavailable alone. For Hedge, they are the
// codes after which another attempt may start at once: a failure with any
// other code ends the call. Codes() with no code retries nothing.
//
// Whatever the codes, a Canceled or DeadlineExceeded error caused by the
// caller's own context is never retried, and a server's refusal (see
// PushbackKey) stops the retries. An attempt cut short by
// retry.AttemptTimeout is retried whatever its code.
//
// Codes panics if a code is not one of the 16 error codes Connect defines.
func Codes(cs ...connect.Code) Option {
	var set uint32
	for _, c := range cs {
		if c < connect.CodeCanceled || c > connect.CodeUnauthenticated {
			panic("retryconnect: Codes: " + strconv.Itoa(int(c)) + " is not a Connect error code")
		}
		set |= 1 << c
	}
	return Option{kind: codesOption, codes: set}
}

// Procedures returns an Option that makes the interceptor retry exactly
// the procedures for which allow returns true, in place of the default
// rule: only those whose idempotency level is IdempotencyNoSideEffects or
// IdempotencyIdempotent (connect.WithIdempotency on the client, or the
// idempotency_level option of the method in the service's schema). Every
// other call goes to the next function once, untouched: never sent twice,
// never drawing from or depositing into a Budget. allow may be called
// concurrently, once per call. Hedge ignores Procedures: its caller chose
// the procedure.
//
// Procedures panics if allow is nil.
func Procedures(allow func(spec connect.Spec) bool) Option {
	if allow == nil {
		panic("retryconnect: Procedures: nil function")
	}
	return Option{kind: proceduresOption, allow: allow}
}

// With returns an Option that passes opts to every retry.Retry or
// retry.Hedge the interceptor or Hedge makes: retry.WithClock, retry.If,
// retry.OnRetry, retry.OnDone, retry.WithBudget, retry.MaxPushback,
// retry.MaxElapsed, retry.MaxRetriesIf, retry.AttemptTimeout,
// retry.WithLatency and retry.OnDiscard work as those functions describe, on the
// entry points that take them (retry.Retry refuses retry.OnHedgeDone at the
// call). If predicates, MaxRetriesIf's match
// and OnRetry hooks see each attempt's *connect.Error, without its
// pushback marker. With copies opts.
//
// With panics if an option is a retry.IfValue: calls are judged by their
// error code, never by their response (use Codes or retry.If).
func With(opts ...retry.Option) Option {
	for _, o := range opts {
		if o.JudgesValues() {
			panic("retryconnect: With: retry.IfValue is not supported; judge calls by their code with Codes or retry.If")
		}
	}
	return Option{kind: withOption, opts: append([]retry.Option(nil), opts...)}
}

// Limiter returns an Option that gives each target of NewInterceptor's
// calls its own retry.Limiter, made by newLimiter the first time the
// interceptor sees a call to that target and kept for the interceptor's
// life (newLimiter may return nil: no Limiter for that target). The target
// is the host or host:port of the server's URL, as connect.Peer's Addr
// gives it. Every attempt of a call holds one of its permits while in
// flight, as retry.WithLimiter describes; a call whose first attempt gets
// none fails with an error matching retry.ErrLimited, and is not sent. An
// attempt that fails with CodeUnavailable, CodeResourceExhausted or
// CodeDeadlineExceeded counts as an overload signal even when Codes does
// not retry it. Hedge sees no target before its request is sent: it
// panics if given Limiter (pass retry.WithLimiter through With instead).
//
// Limiter panics if newLimiter is nil.
func Limiter(newLimiter func(target string) *retry.Limiter) Option {
	if newLimiter == nil {
		panic("retryconnect: Limiter: nil function")
	}
	return Option{kind: limiterOption, limit: newLimiter}
}

// config is the result of applying the options.
type config struct {
	codes   uint32
	allow   func(connect.Spec) bool
	opts    []retry.Option
	limiter func(string) *retry.Limiter // Limiter's

	mu      sync.Mutex // serialises the making of a target's options
	targets sync.Map   // target → []retry.Option: opts with the target's Limiter
}

// optsFor returns the retry options of a call to target: the
// interceptor's, with the target's Limiter, made on its first call.
func (c *config) optsFor(target string) []retry.Option {
	if c.limiter == nil {
		return c.opts
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
	if l := c.limiter(target); l != nil {
		o = append(o, retry.WithLimiter(l))
	}
	c.targets.Store(target, o)
	return o
}

// overload reports whether code is the server failing or shedding load,
// which a Limiter counts as a failure whether or not it is retried.
func overload(code connect.Code) bool {
	return code == connect.CodeUnavailable || code == connect.CodeDeadlineExceeded || code == connect.CodeResourceExhausted
}

func newConfig(opts []Option) *config {
	c := &config{codes: 1 << connect.CodeUnavailable, allow: idempotent}
	for _, o := range opts {
		switch o.kind {
		case codesOption:
			c.codes = o.codes
		case proceduresOption:
			c.allow = o.allow
		case withOption:
			c.opts = append(c.opts, o.opts...)
		case limiterOption:
			c.limiter = o.limit
		}
	}
	c.opts = c.opts[:len(c.opts):len(c.opts)]
	return c
}

// idempotent is the default rule of which procedures to retry.
func idempotent(spec connect.Spec) bool {
	return spec.IdempotencyLevel == connect.IdempotencyNoSideEffects || spec.IdempotencyLevel == connect.IdempotencyIdempotent
}

// retryable reports whether code is one of the codes to retry.
func (c *config) retryable(code connect.Code) bool {
	return code <= connect.CodeUnauthenticated && c.codes&(1<<code) != 0
}
