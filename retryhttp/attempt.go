package retryhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// call is the state of one RoundTrip. RoundTrip recycles calls through a
// sync.Pool: nothing refers to a call once RoundTrip has returned, since the
// errors and responses it hands out do not point back.
type call struct {
	t    *Transport
	base http.RoundTripper
	req  *http.Request // the caller's, never modified; the Request of every response
	tmpl *http.Request // what each attempt sends a copy of: req, or a copy with its body buffered
	n    int           // attempts started
	sent int           // requests sent by the races of a hedging base, if base is one

	fn       func(context.Context) (*http.Response, error) // c.attempt, bound once
	fnOnce   func(context.Context) (*http.Response, error) // c.attemptOnce, bound once
	fnJudged func(context.Context) (*http.Response, error) // c.attemptJudged, bound once
	opts     []retry.Option                                // the options of a request with a Throttle, Breaker or Limiter, a buffer kept across uses
}

func newCall() *call {
	c := new(call)
	c.fn, c.fnOnce, c.fnJudged = c.attempt, c.attemptOnce, c.attemptJudged
	return c
}

// reset clears c for reuse, keeping its bound functions and its options'
// buffer, emptied.
func (c *call) reset() {
	clear(c.opts)
	*c = call{fn: c.fn, fnOnce: c.fnOnce, fnJudged: c.fnJudged, opts: c.opts[:0]}
}

// attempt sends one attempt of a request that may be retried, for
// retry.Retry. It returns the response on success (including any response
// not worth retrying), and otherwise a nil response and an error: the base's
// error (marked Permanent if it is not worth retrying), a *StatusError that
// holds the unread response (marked with the server's Retry-After, if any),
// errAttemptTimeout, or a Permanent error of GetBody or PrepareRetry.
func (c *call) attempt(actx context.Context) (*http.Response, error) {
	c.n++
	var body io.ReadCloser // the rewound body of a retry
	if req := c.tmpl; c.n > 1 && req.Body != nil && req.Body != http.NoBody {
		// As net/http does, rewind only a body that was sent: a request
		// whose Body is nil or NoBody goes without one every time, whatever
		// its GetBody would return. rewindable made sure GetBody is set.
		var err error
		if body, err = req.GetBody(); err != nil {
			return nil, retry.Permanent(&rewindError{err})
		}
	}
	resp, failed, err := c.send(actx, c.n, body, true, false)
	switch {
	case err != nil && !failed:
		return nil, retry.Permanent(err)
	case err != nil:
		return nil, err
	case !failed:
		return resp, nil
	}
	se := c.statusError(resp)
	if noRetry(resp) {
		return nil, retry.RetryAfter(se, -1)
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		return nil, withPushback(se, resp.Header)
	}
	return nil, se
}

// statusError returns the error of an attempt whose response failed.
func (c *call) statusError(resp *http.Response) *StatusError {
	return &StatusError{StatusCode: resp.StatusCode, resp: resp, drain: c.t.drainLimit()}
}

// attemptOnce sends the only attempt of a request that is not retried, for
// retry.Retry with no retries: every response is a success, and every error
// is Permanent, so that Retry returns it as it is without consulting If.
func (c *call) attemptOnce(actx context.Context) (*http.Response, error) {
	resp, err := c.sendOnce(actx)
	if err != nil {
		return nil, retry.Permanent(err)
	}
	return resp, nil
}

// attemptJudged is attemptOnce for a request to a host with a Throttle,
// Breaker or Limiter: a response whose status RetryStatus accepts, and an
// error that RetryError accepts, are marked as a server's request not to
// retry, which ends the call at once, as Permanent does, but counts as a
// failure.
func (c *call) attemptJudged(actx context.Context) (*http.Response, error) {
	resp, err := c.sendOnce(actx)
	switch {
	case err != nil && c.t.retryError(err):
		return nil, retry.RetryAfter(err, -1)
	case err != nil:
		return nil, retry.Permanent(err)
	case c.t.retryStatus(resp.StatusCode):
		return nil, retry.RetryAfter(c.statusError(resp), -1)
	}
	return resp, nil
}

// sendOnce sends the only attempt of a request that is not retried and
// returns the base's response or error as they are, or errAttemptTimeout.
func (c *call) sendOnce(actx context.Context) (*http.Response, error) {
	c.n++
	resp, _, err := c.send(actx, c.n, nil, false, false)
	return resp, err
}

// send sends attempt n of c.tmpl through the base, with body in place of
// its Body unless body is nil, and returns the base's response or error, or
// errAttemptTimeout. With judge, it also decides whether the attempt failed
// and is worth another: failed reports it of a response or an error. An
// error is returned as the base returned it, whatever failed says; an error
// of PrepareRetry comes back with failed false.
//
// actx is the context retry.Retry or retry.Hedge gives the attempt. With
// Retry it is the request's own context, or with retry.AttemptTimeout one
// derived from it that ends at the attempt's deadline and is cancelled as
// soon as the attempt returns. A response body must outlive that, so then
// the attempt is sent under a context of its own, derived from the
// request's, which a timer set to actx's deadline cancels only until the
// attempt is judged: the headers have arrived and ShouldRetry, which may
// peek at the body, has decided. That context is released when the response
// body is closed or read to the end.
//
// In a race (a hedging Transport's), actx also ends when the request loses,
// and Hedge cancels it even for the winner once it has returned, so every
// request is sent under a context of its own in the same way, which actx's
// end cancels only until the request is judged. A request of a race that
// gets a response after actx has ended is judged all the same: if it
// succeeded, send returns it as a success, so that Hedge, which has decided
// without it, passes it to OnDiscard, which closes it.
func (c *call) send(actx context.Context, n int, body io.ReadCloser, judge, race bool) (resp *http.Response, failed bool, err error) {
	t, ctx := c.t, c.req.Context()
	var deadline time.Time
	var timed bool
	if !race {
		deadline, timed = attemptDeadline(actx, ctx)
	}
	cut := timed || race // actx can end the attempt before the request's context does

	// The request to send is the template itself when nothing differs, so
	// that a first attempt allocates nothing; otherwise a shallow copy,
	// under a context that carries the attempt's number (if it is not the
	// first, or if ctx carries another Transport's) and, when actx can cut
	// the attempt short, can be cancelled.
	req, sctx := c.tmpl, ctx
	if n > 1 || ctx.Value(attemptKey{}) != nil {
		sctx = context.WithValue(ctx, attemptKey{}, n)
	}
	var cancel context.CancelFunc
	if cut {
		sctx, cancel = context.WithCancel(sctx)
	}
	if sctx != ctx {
		req = req.WithContext(sctx)
	}
	if body != nil {
		req.Body = body
	}
	if n > 1 {
		req.Header = withPreviousAttempts(req.Header, n-1) // req is a copy
	}
	if n > 1 && t.PrepareRetry != nil || t.OnAttempt != nil {
		if err := c.hooks(req, n, cancel); err != nil {
			return nil, false, err
		}
	}

	var timer *time.Timer
	var unlink func() bool
	switch {
	case timed:
		timer = time.AfterFunc(time.Until(deadline), cancel)
	case race:
		unlink = context.AfterFunc(actx, cancel)
	}
	if hb, ok := c.base.(*Transport); ok && hb.hedging && !race {
		// A retrying Transport stacked on a hedging one: its races number
		// their requests after those of the earlier races of this call,
		// which runs them one at a time. (The requests of a race run
		// concurrently, so a race's call has no such count.)
		resp, err = hb.roundTrip(req, &c.sent)
	} else {
		resp, err = c.base.RoundTrip(req)
	}
	switch {
	case resp == nil && err == nil:
		// A base that breaks the RoundTripper contract: report it as
		// http.Client does, rather than let a nil response through.
		err = errNilResponse
	case resp != nil && err != nil:
		// The other breach: the error wins, and the response is closed.
		if resp.Body != nil {
			resp.Body.Close()
		}
		resp = nil
	case resp != nil:
		resp.Request = c.req
	}
	// Judge the attempt unless actx has already cut it short, while actx
	// still bounds it: ShouldRetry may read the body.
	judged := judge && (!cut || sctx.Err() == nil || ctx.Err() != nil)
	if judged {
		failed = c.judge(resp, err, cancel)
	}

	cutShort := false
	switch {
	case timer != nil:
		cutShort = !timer.Stop() && ctx.Err() == nil
	case unlink != nil:
		cutShort = !unlink() && ctx.Err() == nil
	}
	if race && judge && !judged && resp != nil && (!cutShort || lost(actx)) {
		// A request of a race that got a response after actx ended, before
		// or while it was judged: it lost, or the request's context ended
		// meanwhile. Judge it all the same, under its cancelled context: if
		// the Transport would not retry it, it is a success that lost, and
		// Hedge passes it to OnDiscard (the user's, then closeLosers).
		failed = c.judge(resp, nil, cancel)
	}
	if cutShort {
		// actx ended before the attempt was judged, and the request's
		// context is still alive: the attempt timed out, or in a race it
		// lost. If a response won the race, its body is already cancelled.
		if race && lost(actx) {
			if resp != nil && !failed {
				// A success that lost: Hedge drops it, as it does every
				// late success, through OnDiscard, which closes it.
				cancel()
				return resp, false, nil
			}
			if resp != nil && resp.Body != nil {
				resp.Body.Close()
			}
			cancel()
			return nil, false, context.Cause(actx) // nobody reads a loser's error
		}
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		cancel()
		if timer != nil {
			// actx's own timer is due at the same instant as ours but may
			// not have fired yet. Wait for it: retry.Retry retries an
			// attempt that failed after its own timeout only if it sees
			// actx done.
			<-actx.Done()
		}
		return nil, true, errAttemptTimeout
	}
	if err != nil {
		if cancel != nil {
			cancel()
		}
		return nil, failed, err
	}
	if cancel != nil {
		if resp.Body == nil || resp.Body == http.NoBody {
			cancel()
		} else {
			resp.Body = newCancelBody(resp.Body, cancel)
		}
	}
	return resp, failed, nil
}

// hooks calls PrepareRetry, on a retry (n > 1, whose req has a Header of its
// own), and OnAttempt with req, the request about to be sent as attempt n,
// and returns PrepareRetry's error. If
// that fails or either panics, it closes the body req would have sent and
// releases cancel, if not nil: nothing of the attempt outlives it.
func (c *call) hooks(req *http.Request, n int, cancel context.CancelFunc) error {
	t, ok := c.t, false
	defer func() {
		if ok {
			return
		}
		if req.Body != nil {
			req.Body.Close()
		}
		if cancel != nil {
			cancel()
		}
	}()
	if n > 1 && t.PrepareRetry != nil {
		// The copy already has its own Header (withPreviousAttempts made
		// it), so PrepareRetry can change it without touching the
		// caller's request.
		if err := t.PrepareRetry(req); err != nil {
			return err
		}
	}
	if t.OnAttempt != nil {
		t.OnAttempt(req, n)
	}
	ok = true
	return nil
}

// judge reports whether the attempt that ended with resp or err failed and
// is worth retrying: ShouldRetry's verdict if it is set, else RetryError's or
// RetryStatus's. If the verdict panics, it closes resp's body and releases
// cancel, if not nil.
func (c *call) judge(resp *http.Response, err error, cancel context.CancelFunc) bool {
	t, ok := c.t, false
	defer func() {
		if ok {
			return
		}
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		if cancel != nil {
			cancel()
		}
	}()
	var retryable bool
	switch {
	case t.ShouldRetry != nil:
		retryable = t.ShouldRetry(resp, err)
	case err != nil:
		retryable = t.retryError(err)
	default:
		retryable = t.retryStatus(resp.StatusCode)
	}
	ok = true
	return retryable
}

// attemptDeadline reports the deadline of an attempt context that ends before
// the request's context: set by retry.AttemptTimeout. When actx has no
// deadline, or the same one as the request (the timeout outlasts the
// request's own deadline), the request's context alone bounds the attempt
// and can carry the response body as it is.
func attemptDeadline(actx, ctx context.Context) (time.Time, bool) {
	d, ok := actx.Deadline()
	if !ok {
		return time.Time{}, false
	}
	if parent, ok := ctx.Deadline(); ok && !d.Before(parent) {
		return time.Time{}, false
	}
	return d, true
}

// errNilResponse is the error of an attempt whose base returned neither a
// response nor an error.
var errNilResponse = errors.New("retryhttp: the base RoundTripper returned a nil *http.Response with a nil error")

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
