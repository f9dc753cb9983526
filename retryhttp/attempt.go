package retryhttp

import (
	"context"
	"io"
	"net/http"

	"github.com/seed-b8c8f69d/retry"
)

// call is the state of one RoundTrip that may retry. RoundTrip recycles
// calls through a sync.Pool: nothing refers to a call once retry.Retry has
// returned, since the errors and responses it hands out do not point back.
type call struct {
	t    *Transport
	base http.RoundTripper
	req  *http.Request                                 // the caller's, never modified
	n    int                                           // attempts started
	fn   func(context.Context) (*http.Response, error) // c.attempt, bound once
}

// reset clears c for reuse, keeping fn.
func (c *call) reset() {
	*c = call{fn: c.fn}
}

// attempt sends one attempt of c.req, for retry.Retry. It returns the
// response on success (including any status not worth retrying), and
// otherwise a nil response and an error: the base's error (marked Permanent
// if RetryError rejects it), a *StatusError that holds the unread response
// (marked with the server's Retry-After, if any), or errAttemptTimeout.
//
// actx is the context Retry gives the attempt: the request's own context, or
// with retry.AttemptTimeout one derived from it that ends after the timeout
// and is cancelled as soon as attempt returns. A response body must outlive
// that, so then the attempt is sent under a context of its own, derived from
// the request's, which actx cancels only until the response headers arrive.
// That context is released when the response body is closed.
func (c *call) attempt(actx context.Context) (*http.Response, error) {
	c.n++
	req := c.req
	ctx := req.Context()
	if c.n > 1 {
		r := new(http.Request)
		*r = *req
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, retry.Permanent(&rewindError{err})
			}
			r.Body = body
		}
		req = r
	}

	// Done channels of the same context are equal; retry.Retry passes the
	// request's context itself unless an AttemptTimeout is set.
	var cancel context.CancelFunc
	var stop func() bool
	if actx.Done() != ctx.Done() {
		var rctx context.Context
		rctx, cancel = context.WithCancel(ctx)
		stop = context.AfterFunc(actx, cancel)
		req = req.WithContext(rctx)
	}

	resp, err := c.base.RoundTrip(req)

	if stop != nil && !stop() && ctx.Err() == nil {
		// actx ended before the headers arrived, and not because the
		// request's context did: the attempt timed out. If a response won
		// the race, its body is already cancelled.
		if resp != nil {
			resp.Body.Close()
		}
		cancel()
		return nil, errAttemptTimeout
	}
	if err != nil {
		if cancel != nil {
			cancel()
		}
		if !c.t.retryError(err) {
			return nil, retry.Permanent(err)
		}
		return nil, err
	}
	if cancel != nil {
		if resp.Body == nil || resp.Body == http.NoBody {
			cancel()
		} else {
			resp.Body = newCancelBody(resp.Body, cancel)
		}
	}
	resp.Request = c.req
	if !c.t.retryStatus(resp.StatusCode) {
		return resp, nil
	}
	se := &StatusError{StatusCode: resp.StatusCode, resp: resp, drain: c.t.drainLimit()}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		return nil, withRetryAfter(se, resp.Header.Get("Retry-After"))
	}
	return nil, se
}

// errAttemptTimeout is the error of an attempt whose response headers did not
// arrive within retry.AttemptTimeout.
var errAttemptTimeout error = attemptTimeoutError{}

type attemptTimeoutError struct{}

func (attemptTimeoutError) Error() string {
	return "retryhttp: attempt timed out awaiting response headers"
}

// Timeout reports true, like other net.Error timeouts, so that
// url.Error.Timeout and retry.IsTransient recognise the error.
func (attemptTimeoutError) Timeout() bool { return true }

// Temporary reports true, for net.Error.
func (attemptTimeoutError) Temporary() bool { return true }

// Unwrap returns context.DeadlineExceeded: the attempt's deadline passed.
func (attemptTimeoutError) Unwrap() error { return context.DeadlineExceeded }

// rewindError is the error of a retry whose Request.GetBody failed.
type rewindError struct{ err error }

func (e *rewindError) Error() string {
	return "retryhttp: rewinding the request body: " + e.err.Error()
}
func (e *rewindError) Unwrap() error { return e.err }

// cancelBody is a response body that releases its attempt's context when
// it is closed or read to the end, as http.Client does for its Timeout.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.cancel()
	}
	return n, err
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// cancelReadWriteBody is a cancelBody that keeps the Write method of a
// 101 Switching Protocols body.
type cancelReadWriteBody struct {
	cancelBody
	w io.Writer
}

func (b *cancelReadWriteBody) Write(p []byte) (int, error) { return b.w.Write(p) }

func newCancelBody(body io.ReadCloser, cancel context.CancelFunc) io.ReadCloser {
	if w, ok := body.(io.Writer); ok {
		return &cancelReadWriteBody{cancelBody{body, cancel}, w}
	}
	return &cancelBody{body, cancel}
}
