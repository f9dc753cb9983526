package retryhttp

import (
	"io"
	"net/http"
	"strconv"

	"github.com/seed-b8c8f69d/retry"
)

// DefaultRetryStatus reports whether a Transport whose RetryStatus is nil
// retries a response with status code code: true for 408 Request Timeout,
// 429 Too Many Requests, 500 Internal Server Error, 502 Bad Gateway, 503
// Service Unavailable and 504 Gateway Timeout, false for every other code,
// including the rest of 4xx and 501 Not Implemented and 505 HTTP Version Not
// Supported, which another attempt would not change. Use it to extend the
// default:
//
//	t.RetryStatus = func(code int) bool { return code == 425 || retryhttp.DefaultRetryStatus(code) }
func DefaultRetryStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// DefaultShouldRetry reports whether a Transport whose ShouldRetry,
// RetryStatus and RetryError are all nil retries the attempt that ended with
// resp or err: retry.IsTransient(err) for an error, else
// DefaultRetryStatus(resp.StatusCode). Call it from a ShouldRetry that adds
// its own cases to the default.
func DefaultShouldRetry(resp *http.Response, err error) bool {
	if err != nil {
		return retry.IsTransient(err)
	}
	return DefaultRetryStatus(resp.StatusCode)
}

// A StatusError is the error of an attempt whose response has a status that
// the Transport retries. It is what retry.If predicates and retry.OnRetry
// hooks among a Transport's options see (as the error or Attempt.Err), so
// that they can tell a status from a transport error with errors.As.
// RoundTrip never returns one: when the retries stop, the caller gets the
// response itself.
//
// A StatusError deliberately gives no access to the response, whose body the
// Transport drains and closes before retrying. Its exported fields are set
// before a predicate or hook sees it and never change, so they may be read
// from any goroutine.
type StatusError struct {
	// StatusCode is the response's status code, such as 503.
	StatusCode int

	resp      *http.Response // the unread response, until discarded
	drain     int64          // the Transport's DrainLimit, resolved
	discarded bool           // resp was drained and closed for a retry
}

// Error returns the status as in "retryhttp: response status 503 Service
// Unavailable".
func (e *StatusError) Error() string {
	s := "retryhttp: response status " + strconv.Itoa(e.StatusCode)
	if text := http.StatusText(e.StatusCode); text != "" {
		s += " " + text
	}
	return s
}

// discardOnRetry is the OnRetry hook of every Transport: retry.Retry calls it
// only when a retry will follow, before the wait, so the response of the
// failed attempt is drained and closed before the wait begins, and the final
// response, which no hook sees, is left untouched.
var discardOnRetry = retry.OnRetry(func(a retry.Attempt) {
	if se, ok := a.Err.(*StatusError); ok {
		se.discard()
	}
})

// discard drains up to e.drain bytes of the response body and closes it.
func (e *StatusError) discard() { e.release(e.drain) }

// close closes the response body without reading it.
func (e *StatusError) close() { e.release(0) }

// release drains up to drain bytes of the response body and closes it.
func (e *StatusError) release(drain int64) {
	if e.discarded {
		return
	}
	e.discarded = true
	body := e.resp.Body
	e.resp = nil
	if body == nil { // a base that breaks the RoundTripper contract
		return
	}
	if drain > 0 {
		_, _ = io.CopyN(io.Discard, body, drain)
	}
	_ = body.Close()
}
