package retry

import (
	"context"
	"errors"
	"io"
	"net"
)

// IsTransient reports whether err is a failure that commonly heals by
// itself, for If(IsTransient). It is true when err's tree (see errors.Is)
// holds
//   - a timeout: context.DeadlineExceeded, os.ErrDeadlineExceeded, or any
//     net.Error whose Timeout method reports true (dial, read and write
//     timeouts, an http.Client's Timeout);
//   - a refused, reset or aborted connection, or a broken pipe;
//   - io.ErrUnexpectedEOF (a connection closed in the middle of a message);
//   - a *net.DNSError that is temporary or a timeout (not "no such host").
//
// It is false for nil, for anything marked Permanent, for context.Canceled
// (even when a timeout is in the tree too: someone gave up on the call), for
// an *Error (a Retry further down already retried and gave up: retrying at
// every layer multiplies the calls, 3 tries at each of 3 layers making 27 at
// the bottom), and for every error it does not recognise: an unknown error is
// not assumed to heal. One recognised error anywhere in the tree is enough, so
// errors.Join(notFound, reset) is transient. Whatever it says, Retry never
// retries once the caller's own context is done.
//
// IsTransient is safe for concurrent use; it calls the Error method of err's
// tree only on Plan 9, where network errors are text.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if permanent, _ := markers(err); permanent {
		return false
	}
	if gaveUp(err) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	return transient(err)
}

// transient reports whether any error in err's tree is a transient network
// error. It looks at every error in the tree instead of stopping at the first
// of a type, as errors.As would: in errors.Join(notFound, reset), the first
// *net.DNSError is not transient but the reset is.
func transient(err error) bool {
	return inTree(err, transientOne)
}

// transientOne reports whether err itself, not what it wraps, is a transient
// network error.
func transientOne(err error) bool {
	switch e := err.(type) {
	case *net.DNSError:
		if e.IsTimeout || e.IsTemporary {
			return true
		}
	case net.Error: // also syscall.Errno and os.ErrDeadlineExceeded
		if e.Timeout() {
			return true
		}
	}
	return isConnectionError(err)
}
