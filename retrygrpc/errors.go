package retrygrpc

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/seed-b8c8f69d/retry"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// mark turns the error of a failed attempt into what retry.Do or
// retry.Hedge should see: Permanent when its code must not be retried (for
// hedging: a fatal code, which ends the call), else with the server's
// pushback when it sent one: RetryAfter(err, -1) for a refusal (no further
// attempt; Hedge lets those outstanding go on), RetryAfter(err, d) for a
// wait. ctx is the call's context, actx the attempt's (the same unless
// retry.AttemptTimeout is in force), trailer the attempt's trailer (nil if
// it has none).
//
// An attempt has timed out when its deadline has passed by the clock, as
// grpc-go's client judges it, whether or not a context's timer has fired
// yet: the server resets a call at the deadline it was sent (grpc-timeout),
// and that reset often arrives first. If that deadline is the call's, its
// context has ended for mark's purpose; if it is the attempt's own
// (retry.AttemptTimeout), mark waits for actx's timer, which is due:
// retry.Do and retry.Hedge retry an attempt whatever its error only if they
// see actx done.
func (c *config) mark(ctx, actx context.Context, err error, trailer metadata.MD) error {
	if d, ok := actx.Deadline(); ok && !time.Now().Before(d) {
		if cd, ok := ctx.Deadline(); ok && !cd.After(d) {
			return retry.Permanent(err) // the call's deadline, as below
		}
		<-actx.Done() // the timer of retry's context.WithTimeout
	}
	if ctx.Err() != nil {
		// The caller's own context ended: whatever the status says, the
		// caller gets it as it is.
		return retry.Permanent(err)
	}
	if actx.Err() != nil {
		// The attempt's own timeout: retry.Do retries it.
		return err
	}
	if code := status.Code(err); !c.retryable(code) {
		if c.gated() && overload(code) {
			// Not retried, but not the target's answer either: a refused
			// pushback ends the call as Permanent does and counts as a
			// failure for the Throttle, Breaker and Limiter.
			return retry.RetryAfter(err, -1)
		}
		return retry.Permanent(err)
	}
	if d, ok := pushback(trailer); ok {
		return retry.RetryAfter(err, d) // d is -1 for a refusal
	}
	return err
}

// result turns what retry.Retry or retry.Do returned into the error an
// interceptor returns: nil, or an error that was not retried as it is, or a
// *gaveUpError around the *retry.Error of a call that was retried and gave
// up.
func result(ctx context.Context, err error) error {
	re, ok := err.(*retry.Error)
	if !ok {
		return err
	}
	var st *status.Status
	switch {
	case ctx.Err() == nil && re.Attempts == 0:
		// A Throttle, Breaker or Limiter let no attempt through.
		st = status.New(codes.Unavailable, re.Error())
	case ctx.Err() != nil || re.Last == nil:
		st = status.FromContextError(ctx.Err())
	default:
		st = status.Convert(re.Last)
	}
	return &gaveUpError{err: re, st: st}
}

// gaveUpError is the error of a call that was retried and gave up: an
// *retry.Error for errors.Is and errors.As, with the gRPC status the caller
// expects for status.Code and status.FromError. It is unexported so that
// callers go through those functions rather than depend on it.
type gaveUpError struct {
	err *retry.Error
	st  *status.Status
}

func (e *gaveUpError) Error() string { return e.err.Error() }
func (e *gaveUpError) Unwrap() error { return e.err }

// GRPCStatus is what status.FromError, status.Code and status.Convert see:
// the caller's context's code when it ended, else the last attempt's status
// exactly as the server sent it.
func (e *gaveUpError) GRPCStatus() *status.Status { return e.st }
