package retryhttp

import (
	"net/http"
	"strconv"
)

// PreviousAttemptsHeader is the request header that a Transport sets on
// every attempt of a request after the first (each retry, and each copy of
// a hedging Transport's race but the first) to the number of attempts sent
// before it: absent on a first attempt, then "1", "2", …, as gRPC's
// grpc-previous-rpc-attempts (gRFC A6). A server reads it to tell retries
// from first attempts: NewHandler sheds retries first.
const PreviousAttemptsHeader = "Previous-Attempts"

// ShouldRetryHeader is the response header with which a server asks a
// client not to retry: a failed response whose ShouldRetryHeader is "false"
// ends a Transport's retries, as a negative pushback does in gRPC (gRFC
// A6). NewHandler sends it when it sheds hard. Other values are ignored.
const ShouldRetryHeader = "X-Should-Retry"

// withPreviousAttempts returns a copy of h that says n attempts came before.
func withPreviousAttempts(h http.Header, n int) http.Header {
	h = h.Clone()
	if h == nil {
		h = make(http.Header, 1)
	}
	h[PreviousAttemptsHeader] = []string{strconv.Itoa(n)}
	return h
}

// isRetry reports whether r says it is a retry: a PreviousAttemptsHeader
// other than "" or "0". Whatever the value, it never fails.
func isRetry(r *http.Request) bool {
	v := r.Header[PreviousAttemptsHeader]
	return len(v) > 0 && v[0] != "" && v[0] != "0"
}

// noRetry reports whether resp asks not to be retried (ShouldRetryHeader).
func noRetry(resp *http.Response) bool {
	v := resp.Header[ShouldRetryHeader]
	return len(v) > 0 && v[0] == "false"
}
