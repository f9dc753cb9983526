package retryconnect

import (
	"context"
	"errors"
	"strconv"

	"connectrpc.com/connect"
	"github.com/seed-b8c8f69d/retry"
)

// NewInterceptor returns a connect.Interceptor that retries a client's failed
// unary calls on schedule s, through retry.Retry: the first attempt is made at
// once, and after a failure that may be retried the next one follows the next
// delay of s, until an attempt succeeds, s runs out, a Budget refuses, or the
// call's context ends or its deadline would pass during the wait. Install it
// with connect.WithInterceptors on a client; on a handler it does nothing.
//
// # What is retried
//
// Errors whose code Codes lists (connect.CodeUnavailable by
// default), on procedures whose idempotency level is IdempotencyNoSideEffects
// or IdempotencyIdempotent (Procedures changes the rule); never a Canceled or
// DeadlineExceeded error caused by the caller's own context, and nothing once
// that context is done. A server's PushbackKey with a non-negative number of
// milliseconds sets the wait before the next attempt (retry.RetryAfter:
// bounded by retry.MaxPushback, one minute by default, never shorter than the
// schedule's delay, never past the deadline); a negative or malformed one
// stops the retries. Every attempt after the first carries the request header
// Grpc-Previous-Rpc-Attempts with the number of attempts before it, as gRPC's
// retries do. Each attempt sends the same request: its message and headers as
// the caller made them. Interceptors nearer the network and Connect itself
// write to the request's headers as they send it, so before each retry the
// interceptor puts back the headers it was handed (it keeps each key's slice
// of values, not a copy: a header changed with Set, Add or Del is restored, a
// value overwritten in place in the caller's own slice is not). After a
// retried call the request holds the caller's headers plus what the last
// attempt's interceptors and Connect added.
//
// # Streams
//
// Streams (client, server and bidirectional) are passed through untouched:
// never retried. Connect hands an interceptor a stream's connection, not a way
// to open a second one once messages have flowed, and a stream that has
// delivered a response message to the caller cannot be replayed without the
// caller seeing it twice; only the unary form has a request that can be sent
// again as a whole.
//
// # What the caller gets
//
// The response of the attempt that succeeded; or the
// last attempt's error exactly as it came when it was not retried (its code is
// not retried, the server's pushback refused, an If rejected it, the caller's
// context ended during it); or, when the call was retried and gave up, an
// error that matches the reason with errors.Is (retry.ErrExhausted,
// retry.ErrBudgetExhausted, context.DeadlineExceeded when the next wait would
// pass the deadline, context.Canceled) and on which errors.As finds the
// *retry.Error. connect.CodeOf reports the last attempt's code, or
// CodeCanceled or CodeDeadlineExceeded when the caller's context ended;
// errors.As(err, &connectErr) finds a *connect.Error with that code.
//
// # Hedged attempts
//
// Hedged attempts (see Hedge) pass through the interceptor without being
// retried, so that hedges and retries do not multiply, but are refused with
// CodeFailedPrecondition, before anything is sent, when their procedure is not
// idempotent.
//
// # Concurrency
//
// The interceptor is safe for concurrent use by any number of calls and
// clients; a Budget given with With is shared by all of them.
//
// NewInterceptor panics if s is nil.
func NewInterceptor(s retry.Schedule, opts ...Option) connect.Interceptor {
	if s == nil {
		panic("retryconnect: NewInterceptor: nil Schedule")
	}
	return &interceptor{s: s, cfg: newConfig(opts)}
}

type interceptor struct {
	s   retry.Schedule
	cfg *config
}

// PreviousAttemptsKey is the request header that carries, on every attempt
// after the first, the number of attempts made before it (gRFC A6):
// absent on the first attempt, then "1", "2", ….
const PreviousAttemptsKey = "Grpc-Previous-Rpc-Attempts"

// WrapUnary implements connect.Interceptor.
func (i *interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		spec := req.Spec()
		if !spec.IsClient {
			return next(ctx, req)
		}
		if hedged(ctx) {
			if !idempotent(spec) {
				return nil, connect.NewError(connect.CodeFailedPrecondition, errNotIdempotent)
			}
			return next(ctx, req)
		}
		if !i.cfg.allow(spec) {
			return next(ctx, req)
		}
		// One variable for the closure to share, so one allocation: the
		// count of attempts and the caller's headers.
		var c struct {
			n     int
			saved headerSnapshot
		}
		c.saved.save(req.Header())
		resp, err := retry.Retry(ctx, i.s, func(actx context.Context) (connect.AnyResponse, error) {
			if c.n++; c.n > 1 {
				// Each attempt sends the headers as the caller made them.
				c.saved.restore(req.Header())
				req.Header().Set(PreviousAttemptsKey, strconv.Itoa(c.n-1))
			}
			resp, err := next(actx, req)
			if err != nil {
				return nil, i.cfg.mark(ctx, actx, err)
			}
			return resp, nil
		}, i.cfg.optsFor(req.Peer().Addr)...)
		if c.n > 1 {
			// Leave the caller's request as it was given.
			req.Header().Del(PreviousAttemptsKey)
		}
		return resp, result(ctx, err)
	}
}

// WrapStreamingClient implements connect.Interceptor: streams are not
// retried.
func (i *interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

// WrapStreamingHandler implements connect.Interceptor: it does nothing on
// handlers.
func (i *interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

var errNotIdempotent = errors.New("retryconnect: hedged a procedure that is not idempotent")

// mark turns the error of a failed attempt into what retry.Retry or
// retry.Hedge should see: Permanent when its code must not be retried (for
// hedging: a code that ends the call), else with the server's pushback
// when it sent one: RetryAfter(err, -1) for a refusal, RetryAfter(err, d)
// for a wait. ctx is the call's context, actx the attempt's.
func (c *config) mark(ctx, actx context.Context, err error) error {
	if ctx.Err() != nil {
		// The caller's own context ended: the caller gets the error as it is.
		return retry.Permanent(err)
	}
	if actx.Err() != nil {
		// The attempt's own timeout (retry.Retry and retry.Hedge retry it),
		// or a hedge that lost (retry.Hedge drops its error).
		return err
	}
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return retry.Permanent(err)
	}
	if !c.retryable(ce.Code()) {
		if c.limiter != nil && overload(ce.Code()) {
			// Not retried, but an overload signal for the Limiter: a
			// refused pushback ends the call as Permanent does and counts
			// as a failure.
			return retry.RetryAfter(err, -1)
		}
		return retry.Permanent(err)
	}
	if d, ok := pushback(ce.Meta()); ok {
		return retry.RetryAfter(err, d) // d is -1 for a refusal
	}
	return err
}

// result turns what retry.Retry or retry.Hedge returned into the error the
// caller gets: nil, an error that was not retried as it is, the
// *retry.Error of a call that gave up, or, when the caller's context ended,
// a *connect.Error with its code around that *retry.Error.
func result(ctx context.Context, err error) error {
	var re *retry.Error
	if !errors.As(err, &re) || re != err {
		return err
	}
	if err := ctx.Err(); err != nil {
		code := connect.CodeCanceled
		if errors.Is(err, context.DeadlineExceeded) {
			code = connect.CodeDeadlineExceeded
		}
		return connect.NewError(code, re)
	}
	return re
}
