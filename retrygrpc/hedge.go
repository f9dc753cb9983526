package retrygrpc

import (
	"context"
	"strconv"
	"sync/atomic"

	"github.com/seed-b8c8f69d/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// HedgeUnaryClientInterceptor returns a grpc.UnaryClientInterceptor that
// hedges unary calls with retry.Hedge (gRFC A6's hedging policy): the first
// attempt is sent at once, and while no attempt has succeeded, another is
// sent after each delay of s, counted from the start of the latest one. The
// first successful response wins: the caller gets it, and every other
// attempt still in flight is cancelled at once. Constant(d).Take(2) sends at
// most 3 attempts, at 0, d and 2d.
//
// # Failures and pushback
//
// Codes lists A6's non-fatal codes (codes.Unavailable by default): an
// attempt that fails with one of them sends the next attempt at once,
// without waiting for its delay. A failure with any other code is fatal: it
// ends the call, cancels the other attempts and is returned as it is. A
// server's pushback on a non-fatal failure is honoured as A6 says for
// hedging, through retry.RetryAfter as in UnaryClientInterceptor: a
// non-negative PushbackKey sends the next attempt once it has elapsed
// (bounded by retry.MaxPushback, one minute by default) instead of at once,
// and the next delay of s counts from that attempt; a negative or malformed
// one stops further hedges while the attempts outstanding go on, and if none
// of them succeeds, that failure is returned as it is. Every attempt after
// the first carries PreviousAttemptsKey, the number of attempts sent before
// it. When every attempt has failed and s is exhausted, the error is the
// last failure's, wrapped as for UnaryClientInterceptor.
//
// # Attempts and responses
//
// Only hedge methods that are safe to receive several times: Methods selects
// them, and every other method is sent once, as it is. Attempts run
// concurrently, each on a goroutine of retry.Hedge, so that a stuck attempt
// cannot hold up the call. Each attempt receives its response as encoded
// bytes (through a codec that wraps the call's own, named like it, so the
// content-subtype on the wire is unchanged); only the winner's is decoded,
// into reply. The caller's grpc.Header, grpc.Trailer and grpc.Peer options
// report the winning attempt's (or, when the call fails, the attempt whose
// error is returned), and a grpc.OnFinish callback is called once, with the
// call's result. A call whose codec is not registered (an unknown
// grpc.CallContentSubtype) is sent once, unhedged.
//
// # Options
//
// retry.WithBudget makes every attempt after the first draw a token; a
// refusal stops further hedges while the outstanding attempts go on.
// retry.AttemptTimeout bounds each attempt, never past the call's deadline.
// retry.WithClock paces the hedges; with a FakeClock retry.Hedge makes its
// attempts one at a time, so test real overlap on the real clock or under
// testing/synctest (a pushback is slept on a FakeClock, as when retrying).
// retry.If, retry.OnRetry and retry.MaxPushback work as retry.Hedge
// describes.
//
// The interceptor is safe for concurrent use. Use it instead of, not
// together with, UnaryClientInterceptor for a method: A6 gives a method
// either a retry or a hedging policy.
//
// HedgeUnaryClientInterceptor panics if s is nil.
func HedgeUnaryClientInterceptor(s retry.Schedule, opts ...Option) grpc.UnaryClientInterceptor {
	if s == nil {
		panic("retrygrpc: HedgeUnaryClientInterceptor: nil Schedule")
	}
	cfg := newConfig(opts)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		if !cfg.selected(method) {
			return invoker(ctx, method, req, reply, cc, callOpts...)
		}
		codec := codecOf(callOpts)
		if codec == nil {
			return invoker(ctx, method, req, reply, cc, callOpts...)
		}
		h := &hedgeCall{cfg: cfg, ctx: ctx, method: method, req: req, cc: cc, invoker: invoker, codec: codec}
		var finish []func(error)
		for _, o := range callOpts {
			switch o := o.(type) {
			case grpc.HeaderCallOption:
				h.header = append(h.header, o.HeaderAddr)
			case grpc.TrailerCallOption:
				h.trailer = append(h.trailer, o.TrailerAddr)
			case grpc.PeerCallOption:
				h.peer = append(h.peer, o.PeerAddr)
			case grpc.OnFinishCallOption:
				finish = append(finish, o.OnFinish)
			default:
				h.callOpts = append(h.callOpts, o)
			}
		}
		r, err := retry.Hedge(ctx, s, h.attempt, cfg.optsFor(cc)...)
		if r != nil {
			h.report(r)
		}
		if err != nil {
			err = result(ctx, err)
		} else if uerr := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(r.body)}, reply); uerr != nil {
			err = status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", uerr)
		}
		for _, f := range finish {
			f(err)
		}
		return err
	}
}

// hedgeCall is the state of one hedged call, shared by its attempts. Its
// fields are set before retry.Hedge starts and only read after, except n.
type hedgeCall struct {
	cfg      *config
	ctx      context.Context // the caller's
	method   string
	req      any
	cc       *grpc.ClientConn
	invoker  grpc.UnaryInvoker
	codec    encoding.CodecV2
	callOpts []grpc.CallOption // the caller's, less those reported below
	header   []*metadata.MD    // the caller's grpc.Header options
	trailer  []*metadata.MD    // grpc.Trailer
	peer     []*peer.Peer      // grpc.Peer
	n        atomic.Int32      // attempts started
}

// hedgeResult is what one attempt received: the encoded response, and the
// metadata the caller's options ask for.
type hedgeResult struct {
	body    []byte
	header  metadata.MD
	trailer metadata.MD
	peer    peer.Peer
}

// attempt makes one attempt, for retry.Hedge, on a goroutine of its own.
func (h *hedgeCall) attempt(actx context.Context) (*hedgeResult, error) {
	n := h.n.Add(1)
	ctx := actx
	if n > 1 {
		ctx = metadata.AppendToOutgoingContext(actx, PreviousAttemptsKey, strconv.Itoa(int(n-1)))
	}
	r := new(hedgeResult)
	// The header and the peer are asked of gRPC only for a caller who asked
	// for them: each costs gRPC a copy on every call. The trailer always
	// is: it carries the server's pushback.
	opts := make([]grpc.CallOption, 0, len(h.callOpts)+4)
	opts = append(opts, h.callOpts...)
	opts = append(opts, grpc.Trailer(&r.trailer), grpc.ForceCodecV2(capture{h.codec}))
	if len(h.header) > 0 {
		opts = append(opts, grpc.Header(&r.header))
	}
	if len(h.peer) > 0 {
		opts = append(opts, grpc.Peer(&r.peer))
	}
	var raw rawReply
	err := h.invoker(ctx, h.method, h.req, &raw, h.cc, opts...)
	if err == nil {
		r.body = raw.b
		return r, nil
	}
	return r, h.cfg.mark(h.ctx, actx, err, r.trailer)
}

// report hands the caller's Header, Trailer and Peer options what attempt r
// received.
func (h *hedgeCall) report(r *hedgeResult) {
	for _, p := range h.header {
		*p = r.header
	}
	for _, p := range h.trailer {
		*p = r.trailer
	}
	for _, p := range h.peer {
		*p = r.peer
	}
}

// rawReply receives an attempt's response, still encoded.
type rawReply struct{ b []byte }

// capture is the call's codec, except that it leaves a response for a
// *rawReply encoded: the winner's is decoded once, into the caller's reply,
// and the losers' are dropped.
type capture struct{ c encoding.CodecV2 }

func (c capture) Marshal(v any) (mem.BufferSlice, error) { return c.c.Marshal(v) }

func (c capture) Unmarshal(data mem.BufferSlice, v any) error {
	if r, ok := v.(*rawReply); ok {
		r.b = data.Materialize()
		return nil
	}
	return c.c.Unmarshal(data, v)
}

func (c capture) Name() string { return c.c.Name() }
