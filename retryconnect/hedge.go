package retryconnect

import (
	"context"
	"slices"

	"connectrpc.com/connect"
	"github.com/seed-b8c8f69d/retry"
)

// Hedge sends the unary request req through call and, while no attempt
// has succeeded, sends it again each time a delay of s elapses, returns the
// first success and cancels the other attempts (retry.Hedge: the first
// attempt starts at once; Constant(20*time.Millisecond).Take(2) makes at
// most 3, at 0, 20 and 40 ms). call is a client's method, such as
// client.CallUnary or a generated client's method:
//
//	resp, err := retryconnect.Hedge(ctx, hedgeAfter, client.CallUnary, connect.NewRequest(&msg))
//
// Hedge only procedures that are safe to receive several times; an
// interceptor of NewInterceptor refuses a hedged attempt of one that is not
// idempotent with CodeFailedPrecondition. Each attempt sends a request of its
// own, with req's message and a copy of its headers; req's message must not
// change until Hedge returns. A failure with a code that Codes lists starts
// the next attempt at once; any other ends the call with that error as it
// is. The full rules are in this module's README.md ("Hedge in detail").
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
