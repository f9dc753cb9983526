package retry

import (
	"context"
	"errors"
	"io"
	"net"
)

// IsTransient reports whether err is a failure that commonly heals by
// itself, for If(IsTransient). It is true when err's chain holds
//   - a timeout: context.DeadlineExceeded, os.ErrDeadlineExceeded, or any
//     net.Error whose Timeout method reports true (dial, read and write
//     timeouts, an http.Client's Timeout);
//   - a refused, reset or aborted connection, or a broken pipe;
//   - io.ErrUnexpectedEOF (a connection closed in the middle of a message);
//   - a *net.DNSError that is temporary or a timeout (not "no such host").
//
// It is false for nil, for anything marked Permanent, for context.Canceled
// (even when a timeout is in the chain too: someone gave up on the call), and
// for every error it does not recognise: an unknown error is not assumed to
// heal. Whatever it says, Retry never retries once the caller's own context
// is done.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if permanent, _ := markers(err); permanent {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.IsTimeout || dns.IsTemporary
	}
	if isConnectionError(err) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
