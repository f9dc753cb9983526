package retrygrpc

import (
	"context"
	"strconv"
	"sync"

	"github.com/seed-b8c8f69d/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// UnaryClientInterceptor returns a grpc.UnaryClientInterceptor that retries
// failed unary calls on schedule s, through retry.Do: the first attempt is
// made at once, and after a failure that may be retried the next one follows
// the next delay of s, until an attempt succeeds, s runs out, a Budget
// refuses, or the call's context ends or its deadline would pass during the
// wait.
//
// # What is retried
//
// Statuses whose code Codes lists (codes.Unavailable by default), on methods
// that Methods allows (all by default); never a Canceled or DeadlineExceeded
// status caused by the caller's own context, and never once the context is
// done. A trailer PushbackKey with a non-negative number of milliseconds sets
// the wait before the next attempt (retry.RetryAfter: bounded by
// retry.MaxPushback, one minute by default, never shorter than the schedule's
// delay; one longer than MaxPushback, or that would end after the deadline,
// ends the call at once with retry.ErrPushbackTooLong as its reason); a
// negative or malformed one stops the retries and hands the status back as
// it is. Every attempt after the first carries PreviousAttemptsKey. Each
// attempt gets the caller's call options but grpc.OnFinish (docs/GRPC.md,
// "Call options on every attempt", has the table), so grpc.Header and
// grpc.Trailer report the last attempt's metadata, and reply holds the
// successful attempt's response.
//
// With retry.AttemptTimeout(d), each attempt gets a deadline d from its
// start, never later than the call's own; an attempt that fails once its own
// deadline has passed (by the clock: the server's reset at that deadline may
// come before the attempt's context ends) is retried whatever its code.
//
// A request whose encoded size exceeds ReplayLimit (256 KiB by default) is
// sent once, as grpc-go commits it: if that attempt fails, its error reaches
// the caller as it is. The size is measured, by encoding the request once
// more with the call's codec, only when the first attempt has failed.
//
// # What the caller gets
//
// nil, or the last attempt's error exactly as the invoker returned it when it
// was not retried (its code is not retried, the server's pushback refused, an
// If rejected it, the caller's context ended during it). When the call was
// retried and gave up, the error matches the reason with errors.Is
// (retry.ErrExhausted, retry.ErrBudgetExhausted, context.DeadlineExceeded
// when the next wait would pass the deadline, context.Canceled) and
// errors.As finds the *retry.Error; status.Code and status.FromError report
// the last attempt's status, or codes.Canceled or codes.DeadlineExceeded when
// the caller's context ended.
//
// # Concurrency and cost
//
// The interceptor is safe for concurrent use by any number of calls and
// connections; a Budget given with With is shared by all of them (make one
// interceptor per target for a budget per target). A call that succeeds at
// once allocates one object in the interceptor: the options it hands to
// gRPC, which are never recycled. Disable grpc-go's own retries on the
// connection (grpc.WithDisableRetry) so that the two do not multiply; see the
// package documentation.
//
// UnaryClientInterceptor panics if s is nil.
func UnaryClientInterceptor(s retry.Schedule, opts ...Option) grpc.UnaryClientInterceptor {
	if s == nil {
		panic("retrygrpc: UnaryClientInterceptor: nil Schedule")
	}
	cfg := newConfig(opts)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		if !cfg.selected(method) {
			return invoker(ctx, method, req, reply, cc, callOpts...)
		}
		callOpts, finish := splitFinish(callOpts)
		u := unaryCalls.Get().(*unaryCall)
		u.cfg, u.ctx, u.method, u.req, u.reply, u.cc, u.invoker = cfg, ctx, method, req, reply, cc, invoker
		u.callOpts, u.extra = callOpts, newExtra(callOpts)
		err := result(ctx, retry.Do(ctx, s, u.fn, cfg.optsFor(cc)...))
		u.reset()
		unaryCalls.Put(u)
		for _, f := range finish {
			f(err)
		}
		return err
	}
}

// unaryCall is the state of one unary call. Calls are recycled through
// unaryCalls, with their bound fn: once retry.Do has returned nothing refers
// to a call, since the invoker has returned and the errors handed out do not
// point back. What gRPC itself holds is in extra, which is not recycled.
type unaryCall struct {
	cfg      *config
	ctx      context.Context // the caller's, while the call runs
	method   string
	req      any
	reply    any
	cc       *grpc.ClientConn
	invoker  grpc.UnaryInvoker
	callOpts []grpc.CallOption // the caller's but OnFinish; never written to
	extra    *extra            // the current attempt's
	n        int               // attempts made
	fn       func(context.Context) error
}

var unaryCalls = sync.Pool{New: func() any {
	u := new(unaryCall)
	u.fn = u.attempt
	return u
}}

// reset clears u for reuse, keeping fn.
func (u *unaryCall) reset() {
	*u = unaryCall{fn: u.fn}
}

// extra is what an attempt hands to gRPC: the call options followed by
// grpc.Trailer(&trailer), through which the attempt's trailer, and the
// server's pushback, come back. It is made afresh for every attempt (the
// one allocation of a call that succeeds at once) and never recycled: gRPC
// may still read the options after the invoker returned (a call cancelled
// as it completes runs its OnFinish options on another goroutine), so a
// recycled slice could hand one call's options to another.
type extra struct {
	trailer metadata.MD
	opts    []grpc.CallOption
	inline  [4]grpc.CallOption
}

func newExtra(callOpts []grpc.CallOption) *extra {
	x := new(extra)
	x.opts = append(append(x.inline[:0], callOpts...), grpc.Trailer(&x.trailer))
	return x
}

// attempt makes one attempt, for retry.Do.
func (u *unaryCall) attempt(actx context.Context) error {
	u.n++
	ctx := actx
	if u.n > 1 {
		ctx = metadata.AppendToOutgoingContext(actx, PreviousAttemptsKey, strconv.Itoa(u.n-1))
	}
	if u.n > 1 {
		u.extra = newExtra(u.callOpts)
	}
	x := u.extra
	err := u.invoker(ctx, u.method, u.req, u.reply, u.cc, x.opts...)
	if err == nil {
		return nil
	}
	if u.n == 1 && u.oversized() {
		// A request larger than ReplayLimit is sent once, as grpc-go
		// commits it: its error reaches the caller as it is.
		return retry.Permanent(err)
	}
	return u.cfg.mark(u.ctx, actx, err, x.trailer)
}

// oversized reports whether the call's request, encoded with the call's
// codec, is larger than ReplayLimit. It encodes the request once more, so
// it is asked only when the first attempt has failed. A request it cannot
// measure (no codec is registered for the call's content-subtype, or the
// codec fails) is not oversized: the invoker has already reported why.
func (u *unaryCall) oversized() bool {
	codec := codecOf(u.callOpts)
	if codec == nil {
		return false
	}
	b, err := codec.Marshal(u.req)
	if err != nil {
		return false
	}
	size := b.Len()
	b.Free()
	return size > u.cfg.limit
}
