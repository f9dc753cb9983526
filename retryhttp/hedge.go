package retryhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"sync"

	"github.com/seed-b8c8f69d/retry"
)

// NewHedgingTransport returns a Transport that hedges requests through base
// instead of retrying them: it sends a request and, while no copy has
// succeeded, sends another each time a delay of s elapses; the first success
// is returned and the other copies are cancelled. Each request is one call
// of retry.Hedge with s and opts, a race, whose rules apply. A nil base means
// http.DefaultTransport, read at each request.
//
// # Copies
//
// Only requests that a Transport would retry race: an idempotent method or
// an idempotency key, and a body that can be rewound (GetBody, or
// BufferBody). Every other request, such as a POST without an idempotency
// key, is sent exactly once. Each copy is a shallow copy of the caller's
// request with its own context, its own body (the caller's Body for the
// first, a fresh one from GetBody for the others) and its AttemptNumber: 1,
// 2, … in the order the copies start. A copy's context, derived from the
// request's, is cancelled by the end of the race only until the copy has been
// judged (headers in, ShouldRetry done); after that the body alone holds it,
// as for AttemptTimeout.
//
// A copy succeeds when the Transport would not retry its outcome
// (RetryStatus, RetryError or ShouldRetry decide, as for retries): so a 200
// or a 404 wins, and RoundTrip returns it at once, its body readable until it
// is closed or read to the end. A copy that fails in a way the Transport
// would retry (a 503, a reset connection, its own retry.AttemptTimeout)
// starts the next one at once, using up a delay of s, unless its response
// carries ShouldRetryHeader "false": then no more copies start, and those
// outstanding go on. Any other failure ends the race. If no copy wins, RoundTrip returns, as a retrying Transport does,
// the latest failure: the failed response itself, body intact, or the base's
// error as it is; or, once the request's context is done, its cause.
//
// # Losers
//
// Losers are cancelled (with the cause retry.ErrHedgeLost) and whatever
// response they still get is closed, even after RoundTrip has returned. A
// losing response is judged as any other, even once the race is decided (its
// context then cancelled): one that succeeded (a 200 or a 404, say), with the
// winner or too late, is passed to OnDiscard once, then closed unread; one that
// failed is drained up to DrainLimit bytes first, or closed unread if the
// race was decided before it was judged. The Transport keeps only the latest
// failed response, for the caller should every copy fail (the one it
// replaces is drained and closed), and closes it unread if one wins. Over HTTP/1, cancelling a copy in flight costs its
// connection.
//
// # Options
//
// The options are retry.Hedge's: WithClock, If, OnRetry (before each copy
// after the first; Attempt.Err is nil when a delay started it), OnDone
// (Attempts counts the copies started), OnHedgeDone (only the requests that
// race), WithBudget (each copy after the first withdraws a token; a refusal
// only stops further copies), AttemptTimeout (per copy, up to its response
// headers and ShouldRetry's verdict, as for retries), WithLatency (every copy
// that ends before the race does), OnDiscard (each losing response that
// succeeded, before the Transport closes it), MaxElapsed (no copy starts past
// it) and MaxRetriesIf. A race ignores Retry-After, so MaxPushback is
// refused, as IfValue is. NewHedgingTransport copies opts.
//
// # Hooks
//
// OnAttempt runs before every copy and PrepareRetry before every copy but the
// first, each on the copy's own goroutine, as do RetryStatus, RetryError and
// ShouldRetry after it (for a response that a losing copy gets, possibly
// after RoundTrip has returned); so they may run concurrently for the copies
// of one request. If, OnRetry and OnDone run on the caller's goroutine. A
// panic in a hook reaches the caller of RoundTrip, after what the copy opened
// is closed, if RoundTrip has not returned; after that it ends the program,
// as any panic on a goroutine of its own.
//
// # Retrying races
//
// To retry races too, stack a retrying Transport on a hedging one:
// NewTransport(NewHedgingTransport(base, hedges), retries). A race that no
// copy won then fails as one attempt (its failed response drained, its
// Retry-After honoured), and the retrying Transport starts a new race after
// its wait; each layer has its own options and hooks. The copies of later
// races carry the AttemptNumbers that follow those of earlier races, and
// PrepareRetry of the hedging Transport sees every copy whose number is above
// 1.
//
// # Panics
//
// NewHedgingTransport panics if s is nil, if given a retry.IfValue (set
// ShouldRetry instead) or a retry.MaxPushback (a race does not wait for
// Retry-After). RoundTrip panics, as retry.Hedge does, if an OnDiscard option's
// function does not take an *http.Response.
func NewHedgingTransport(base http.RoundTripper, s retry.Schedule, opts ...retry.Option) *Transport {
	if s == nil {
		panic("retryhttp: NewHedgingTransport: nil schedule")
	}
	for _, o := range opts {
		switch {
		case o.JudgesValues():
			panic("retryhttp: NewHedgingTransport: retry.IfValue is not supported; set Transport.ShouldRetry, which sees the whole response")
		case o.BoundsPushback():
			panic("retryhttp: NewHedgingTransport: retry.MaxPushback has no pushback to bound: a race does not wait for Retry-After")
		}
	}
	o := make([]retry.Option, 0, len(opts)+2)
	o = append(o, opts...)
	o = append(o, closeLosers)
	t := &Transport{base: base, schedule: s, opts: o, hedging: true}
	if len(opts) > 0 {
		t.onceOpts = onceOptions(o)
	}
	return t
}

// onceOptions returns the options with which a hedging Transport sends a
// request once, with retry.Retry: opts without the retry.OnHedgeDone hooks
// (such a request is no race; it reports to retry.OnDone alone), then
// noBudget. Without such a hook, as in NewTransport, the result shares
// opts's array, past its end, which must have room for one more.
func onceOptions(opts []retry.Option) []retry.Option {
	if !slices.ContainsFunc(opts, retry.Option.ReportsHedges) {
		return append(opts, noBudget)
	}
	once := slices.DeleteFunc(slices.Clone(opts), retry.Option.ReportsHedges)
	return append(once, noBudget)
}

// closeLosers is the OnDiscard option of every hedging Transport: it closes
// the body of each response that succeeded but lost the race, which is
// never read. It runs on the losing request's goroutine, or on the caller's
// for a response that arrived with the winner, so it closes without
// draining: a body that stalls cannot hold up anything.
var closeLosers = retry.OnDiscard(func(resp *http.Response) {
	if resp.Body != nil {
		resp.Body.Close()
	}
})

// A race is the state of one RoundTrip of a hedging Transport. Unlike a
// call it is never recycled: the goroutines of losing requests keep it
// after RoundTrip has returned.
type race struct {
	call // set before the race starts, then only read; its n is unused

	before int // requests sent for the caller's request before this race: 0, unless stacked

	mu   sync.Mutex
	sent int   // guarded by mu: requests of this race started
	over bool  // guarded by mu: RoundTrip has its result; failures from now on are closed at once
	last error // guarded by mu: the latest failure, a *StatusError owning its response; nil once over
}

// race runs a race for req and returns its result, as described on
// NewHedgingTransport.
func (t *Transport) race(base http.RoundTripper, req, tmpl *http.Request, sent *int) (*http.Response, error) {
	r := &race{call: call{t: t, base: base, req: req, tmpl: tmpl}}
	if sent != nil {
		r.before = *sent
	}
	ctx := req.Context()
	n, over := 0, false
	defer func() {
		if !over {
			// Hedge panicked (a hook did, or an OnDiscard does not take an
			// *http.Response): release what the race holds.
			var last error
			n, last = r.end()
			closeHeld(last)
		}
		if sent != nil {
			*sent = r.before + n
		}
	}()
	opts := t.opts
	if t.Throttle != nil || t.Breaker != nil || t.Limiter != nil {
		opts = r.gate(opts, req.URL.Host) // a copy: r is never recycled
	}
	resp, err := retry.Hedge(ctx, t.schedule, r.attempt, opts...)
	n, last := r.end()
	over = true
	return r.result(ctx, resp, err, n, last)
}

// attempt sends one request of the race, for retry.Hedge: it returns the
// response on success and otherwise a nil response and an error: the base's
// (marked Permanent if it is not worth another request), a *StatusError for
// a failed response (marked with a negative pushback if it carries
// ShouldRetryHeader "false"), errAttemptTimeout, or a Permanent error of GetBody or
// PrepareRetry. It records every failure first (see fail).
func (r *race) attempt(actx context.Context) (*http.Response, error) {
	r.mu.Lock()
	if r.over || lost(actx) || r.req.Context().Err() != nil {
		// Hedge has decided since it started this attempt, or the request's
		// context has ended: send nothing. (An attempt whose own timeout
		// has already expired is sent, and fails as timed out.)
		r.mu.Unlock()
		return nil, context.Cause(actx)
	}
	r.sent++
	k := r.sent
	r.mu.Unlock()

	var body io.ReadCloser
	if req := r.tmpl; k > 1 && req.Body != nil && req.Body != http.NoBody {
		// Each request after the first gets a fresh body, as a retry does.
		var err error
		if body, err = req.GetBody(); err != nil {
			err = &rewindError{err}
			r.fail(actx, err)
			return nil, retry.Permanent(err)
		}
	}
	resp, failed, err := r.send(actx, r.before+k, body, true, true)
	switch {
	case err != nil:
		r.fail(actx, err)
		if !failed {
			return nil, retry.Permanent(err)
		}
		return nil, err
	case !failed:
		return resp, nil
	}
	se := r.statusError(resp)
	r.fail(actx, se)
	if noRetry(resp) {
		// The server asks not to be retried: no more copies start, and
		// those outstanding go on.
		return nil, retry.RetryAfter(se, -1)
	}
	return nil, se
}

// fail records err, the failure of a request whose context is actx, as the
// race's latest, and releases the one it replaces; a *StatusError's response
// is drained and closed. If the race is over, or Hedge has decided it
// (actx's cause is retry.ErrHedgeLost), nobody will read err: fail releases
// it at once instead.
func (r *race) fail(actx context.Context, err error) {
	r.mu.Lock()
	if r.over || lost(actx) {
		r.mu.Unlock()
		release(err)
		return
	}
	prev := r.last
	r.last = err
	r.mu.Unlock()
	release(prev)
}

// lost reports whether Hedge has decided the race of the request whose
// context is actx without it.
func lost(actx context.Context) bool {
	return errors.Is(context.Cause(actx), retry.ErrHedgeLost)
}

// release drains and closes the response that err holds, if any.
func release(err error) {
	if se, ok := err.(*StatusError); ok {
		se.discard()
	}
}

// end marks the race over and returns the number of requests started and
// what it holds: the latest failure, which the caller now owns. If none
// started, the caller's body was never handed to the base, so end closes
// it, as RoundTrip must.
func (r *race) end() (sent int, last error) {
	r.mu.Lock()
	r.over = true
	sent, last = r.sent, r.last
	r.last = nil
	r.mu.Unlock()
	if sent == 0 && r.tmpl.Body != nil {
		r.tmpl.Body.Close()
	}
	return sent, last
}

// result turns what retry.Hedge returned, and what the race held when it
// ended (see end), into what RoundTrip returns: the winner, the latest
// failure, or the context's error. A failed response that is not returned
// is closed unread, so as not to delay the caller.
func (r *race) result(ctx context.Context, resp *http.Response, err error, sent int, last error) (*http.Response, error) {
	switch se, held := last.(*StatusError); {
	case err == nil:
		closeHeld(last)
		return resp, nil
	case ctx.Err() != nil:
		closeHeld(last)
		return nil, context.Cause(ctx)
	case held:
		return se.resp, nil
	case last != nil:
		return nil, last
	}
	// Not reached: every failure is recorded before Hedge sees it, and
	// only a failure Hedge has not seen can be released unrecorded, but
	// never return neither a response nor an error.
	return nil, err
}

// closeHeld closes, unread, the response that err holds, if any.
func closeHeld(err error) {
	if se, ok := err.(*StatusError); ok {
		se.close()
	}
}
