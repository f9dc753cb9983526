package retryconnect

import (
	"context"
	"slices"

	"connectrpc.com/connect"
	"github.com/seed-b8c8f69d/retry"
)

// Hedge sends the unary request req through call and, while no attempt has
// succeeded, sends it again each time a delay of s elapses, returns the first
// success and cancels the other attempts (retry.Hedge: the first attempt
// starts at once; Constant(20*time.Millisecond).Take(2) makes at most 3, at 0,
// 20 and 40 ms). call is a client's method, such as client.CallUnary or a
// generated client's method:
//
//	resp, err := retryconnect.Hedge(ctx, hedgeAfter, client.CallUnary, connect.NewRequest(&msg))
//
// # Which procedures
//
// Hedge only procedures that are safe to receive several times, whose
// idempotency level is IdempotencyNoSideEffects or IdempotencyIdempotent. When
// the client has an interceptor of NewInterceptor, it checks the level of
// every hedged attempt before anything is sent and refuses one that is not
// idempotent with CodeFailedPrecondition, which ends the call; it does not
// retry hedged attempts, so that hedges and retries do not multiply.
//
// # Requests and responses
//
// Each attempt sends a request of its own, with req's message and a copy of
// req's headers: the attempts run at once, and Connect writes to a request's
// headers while it sends it, so they cannot share one. req itself is never
// sent, and its message must not change until Hedge returns. The response
// returned is the winner's, with its headers and trailers.
//
// # Failures and options
//
// A failure with a code that Codes lists (CodeUnavailable by default) starts
// the next attempt at once, using up the next delay of s; any other failure
// ends the call with that error as it is. A server's PushbackKey delays the
// next attempt, or, negative, stops further attempts while those outstanding
// go on (gRFC A6's hedging). When every attempt failed, or the caller's
// context ended, the error is as NewInterceptor describes. With passes options
// to retry.Hedge (WithBudget: each attempt after the first takes a token;
// WithLatency and retry.Latency's Quantile for a delay that follows the observed
// latency). Procedures is ignored.
//
// Hedge panics if s, call or req is nil, or if given Limiter.
func Hedge[Req, Res any](ctx context.Context, s retry.Schedule, call func(context.Context, *connect.Request[Req]) (*connect.Response[Res], error), req *connect.Request[Req], opts ...Option) (*connect.Response[Res], error) {
	if s == nil || call == nil || req == nil {
		panic("retryconnect: Hedge: nil Schedule, call or request")
	}
	cfg := newConfig(opts)
	if cfg.limiter != nil {
		panic("retryconnect: Hedge: Limiter is not supported (no target before the request is sent); pass retry.WithLimiter through With")
	}
	hctx := context.WithValue(ctx, hedgeKey{}, true)
	header := req.Header()
	resp, err := retry.Hedge(hctx, s, func(actx context.Context) (*connect.Response[Res], error) {
		r := connect.NewRequest(req.Msg)
		h := r.Header()
		for k, v := range header {
			h[k] = slices.Clone(v)
		}
		resp, err := call(actx, r)
		if err != nil {
			return nil, cfg.mark(ctx, actx, err)
		}
		return resp, nil
	}, cfg.opts...)
	return resp, result(ctx, err)
}

// hedgeKey marks the context of a call made by Hedge, for NewInterceptor.
type hedgeKey struct{}

// hedged reports whether ctx is that of an attempt of Hedge.
func hedged(ctx context.Context) bool {
	return ctx.Value(hedgeKey{}) != nil
}
