package retryhttp

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// DefaultDrainLimit is the number of bytes of a failed attempt's response
// body that a Transport whose DrainLimit is 0 reads and discards before
// closing it: enough for the error page of most servers, so that the
// connection goes back to the pool, and little enough that an endless body
// cannot hold up the retry.
const DefaultDrainLimit = 64 << 10

// defaultSchedule is the Schedule of a Transport made with a nil Schedule:
// up to 4 retries (5 attempts) after waits drawn uniformly from [0, 100ms],
// [0, 200ms], [0, 400ms] and [0, 800ms]. It is built once; a Schedule is a
// value, so every request ranges over it afresh.
var defaultSchedule = retry.Exponential(100 * time.Millisecond).Cap(2 * time.Second).FullJitter(nil).Take(4)

// calls recycles the per-request state of RoundTrip, so that a request that
// succeeds at once allocates nothing in the Transport.
var calls sync.Pool

func init() {
	// Set here rather than in calls' declaration, which would make an
	// initialization cycle: a call's attempt may reach RoundTrip again,
	// through a hedging base.
	calls.New = func() any { return newCall() }
}

// defaultOptions are the options of a zero Transport.
var defaultOptions = []retry.Option{discardOnRetry}

// noRetries is the Schedule of a request sent once: retry.Retry makes its
// one attempt, with the Transport's options, and never retries it.
var noRetries = retry.Delays()

// noBudget replaces the caller's Budget, if any, for a request sent once
// (a later WithBudget replaces an earlier one): with a reserve of 0 it holds
// nothing, so the request neither deposits into the caller's Budget nor
// could draw from it.
var noBudget = retry.WithBudget(retry.NewBudget(0, 0))

// A Transport is an http.RoundTripper that sends each request through a base
// RoundTripper and retries it with retry.Retry when that is safe and
// worthwhile. A Transport made by NewHedgingTransport hedges instead: it
// races copies of each request that could be retried, with retry.Hedge; what
// follows holds for it too, except where NewHedgingTransport says otherwise.
//
// # Which requests
//
// Only requests that can be sent twice without harm are retried, that is
// those whose method is GET, HEAD, OPTIONS, TRACE, PUT or DELETE, or whose
// Header holds an "Idempotency-Key" or "X-Idempotency-Key" entry (as for
// http.Transport, an entry with no values marks the request without being
// sent), and whose body can be rewound: Body is nil or http.NoBody, or
// GetBody is set (http.NewRequest sets it for the common body types), or
// BufferBody allows buffering it. Every other request, such as a POST without
// an idempotency key or a PUT whose body has no GetBody, is sent once,
// unchanged, and never retried.
//
// A request sent once because it is not replayable neither deposits into nor
// draws from a Budget, and ShouldRetry, If predicates and OnRetry hooks never
// see it (OnAttempt does). Its single attempt is still an attempt:
// retry.AttemptTimeout(d) bounds it as any other, and if its headers do not
// arrive within d, RoundTrip returns the timeout error (a net.Error whose
// Timeout reports true, matching context.DeadlineExceeded) without retrying.
//
// # What is retried
//
// A transport error that RetryError accepts, and a response whose status
// RetryStatus accepts, or whatever ShouldRetry, which sees the whole
// response, accepts in their place. By default, any other response,
// including every 2xx, 3xx and most 4xx, ends the retries and is returned. A
// failed response with "X-Should-Retry: false" (ShouldRetryHeader) ends the
// retries at once, and every attempt after the first carries
// "Previous-Attempts: n" (PreviousAttemptsHeader), so that a server can shed
// retries first.
//
// # Pushback
//
// A 429 or 503 response pushes the next attempt back by the wait its headers
// ask for, as retry.RetryAfter and retry.RetryAt describe: bounded by
// retry.MaxPushback (1 minute by default), read against the clock of
// retry.WithClock, and never past the context's deadline. The first of these
// headers that holds a valid value counts:
//
//  1. Retry-After-Ms: a number of milliseconds, digits with an optional
//     fraction (Azure, OpenAI).
//  2. Retry-After: delay-seconds or an HTTP-date (RFC 9110).
//  3. RateLimit, with RateLimit-Policy (draft-ietf-httpapi-ratelimit-headers,
//     draft 08 and later): the longest reset time t of the quota policies
//     whose remaining quota r is 0; for such a policy without t, its window w
//     from RateLimit-Policy. The dictionary form of draft 07 (remaining=0,
//     reset=30) is read too.
//  4. X-RateLimit-Reset, or draft 06's RateLimit-Reset, unless
//     X-RateLimit-Remaining says quota is left: a number of seconds (digits,
//     optional fraction) read as a Unix time if it is 10⁸ or more (a Unix
//     time in milliseconds from 10¹¹), and as seconds from now otherwise.
//
// A malformed value is skipped, as if absent. No valid value is negative, so
// a server cannot stop the retries through these headers. A wait longer than
// MaxPushback allows, or one that would end after the context's deadline, is
// not waited for: RoundTrip returns that response at once, and the call's
// reason (seen by OnDone) is retry.ErrPushbackTooLong.
//
// # Attempts
//
// Each attempt is sent under the request's context (or, with
// retry.AttemptTimeout, a context derived from it); the first attempt sends
// the request as it is, later ones a shallow copy with the body rewound
// through GetBody, so every attempt carries the full, identical body and the
// same headers, including the idempotency key (PrepareRetry may change the
// headers of each retry). Each attempt's context carries its AttemptNumber
// for the base, and OnAttempt sees every attempt. The response of a failed
// attempt is drained (up to DrainLimit bytes) and closed before the wait that
// precedes the next one, so keep-alive connections are reused. A body that
// stalls rather than ends holds up that drain until the request's context
// ends.
//
// # What RoundTrip returns
//
// When the retries stop, RoundTrip returns the last attempt's response
// exactly as the base returned it (status, headers and unread body, with
// Request set to the caller's request), or the last attempt's error as the
// base returned it; never an error that hides a response. The request's
// context changes that in three cases, where RoundTrip returns context.Cause
// of the context instead, having closed everything it opened: when the
// context is done before the first attempt (no attempt is made), when it
// ends during a wait between attempts (the failed attempt's response is
// already closed by then), and when it is done after an attempt that failed
// with an error. A response is returned as it is even if the context ends
// after it arrived, as with a client without retries; its body then reports
// the context's error.
//
// # Options
//
// The options given to NewTransport apply to every request; which ones it
// takes is the retry package's table "Options and entry points" (one Budget
// may be shared by many Transports). If predicates, MaxRetriesIf's match and
// OnRetry hooks see the base's error, or a *StatusError for a retried status;
// OnRetry hooks run after the failed attempt's response has been closed.
// OnDone hooks see the error retry.Retry ended with: when the retries run out
// on a status, an *retry.Error that unwraps to the *StatusError, although
// RoundTrip then returns that response and a nil error. With
// retry.AttemptTimeout(d), each attempt must receive its response headers
// within d or it is abandoned and retried; the response body returned to the
// caller is not bound by d and stays readable under the request's context
// until it is closed. The timeout covers ShouldRetry too, so a peek at a body
// that stalls cannot hold up the retries for longer than d.
//
// # Hooks and concurrency
//
// The hooks (ShouldRetry, PrepareRetry, OnAttempt, as well as RetryStatus and
// RetryError) run on the goroutine that called RoundTrip (in a hedging
// Transport, on each copy's own), and may panic: the panic reaches the
// caller, and whatever the attempt had opened (its response body, the rewound
// request body) is closed first.
//
// A Transport is safe for concurrent use by multiple goroutines. Its exported
// fields must be set before its first use and not changed after. The zero
// Transport is usable: it behaves like NewTransport(nil, nil).
type Transport struct {
	// RetryStatus reports whether a response with status code code is a
	// failed attempt to retry. nil means DefaultRetryStatus. It may be
	// called concurrently from several requests.
	RetryStatus func(code int) bool

	// RetryError reports whether an error from the base RoundTripper is
	// worth retrying. nil means retry.IsTransient, which accepts timeouts
	// and refused or reset connections but not, for example, a malformed
	// response or an io.EOF. It may be called concurrently from several
	// requests. An attempt cut short by retry.AttemptTimeout is retried
	// whatever RetryError says.
	RetryError func(err error) bool

	// ShouldRetry, if set, decides in place of RetryStatus and RetryError
	// (which are then not called) whether an attempt failed and is worth
	// retrying, seeing all of it: exactly one of resp and err is non-nil.
	// It may read resp's status and headers, and peek at its body with
	// PeekBody, which leaves the body whole for the caller; it must not
	// otherwise read or close the body. Returning true for a response
	// makes it a failed attempt like a retried status, even a 2xx with an
	// error in its payload: it is drained and closed before the retry,
	// Retry-After is honoured on a 429 or 503, and if the retries stop
	// there the caller still gets it (as RetryStatus's responses), body
	// intact. Returning false for an error ends the retries with it.
	// DefaultShouldRetry is the decision of a Transport whose three
	// fields are nil; call it to extend that. ShouldRetry sees only
	// requests that may be retried, never one sent once, and never an
	// attempt cut short by retry.AttemptTimeout, which is retried anyway;
	// that timeout also bounds ShouldRetry's peek. It may be called
	// concurrently from several requests.
	ShouldRetry func(resp *http.Response, err error) bool

	// PrepareRetry, if set, is called before every retry (never before the
	// first attempt) with the request about to be sent: a shallow copy of
	// the caller's request with the body rewound, its own Header (a fresh
	// clone of the caller's, whatever earlier retries did to theirs) and a
	// context that carries its AttemptNumber. It may change that Header,
	// for instance to re-sign the request with a new timestamp or to set
	// a refreshed bearer token, but must not modify what the copy shares
	// with the caller's request (URL, Body, GetBody and the like); to hash
	// the body, read a fresh copy from GetBody. If it returns an error, the
	// attempt is not sent, the retries stop and RoundTrip returns that
	// error as it is. It runs on the goroutine that called RoundTrip, after
	// the wait; it may be called concurrently from several requests. In a
	// hedging Transport it is called before every copy of a request but the
	// first (every copy whose AttemptNumber is above 1), on the copy's own
	// goroutine, and its error ends the race.
	PrepareRetry func(req *http.Request) error

	// OnAttempt, if set, is called before every attempt, the first
	// included and also for a request sent once, with the request about to
	// be sent and its 1-based number; for logging and metrics. The request
	// is the one the base receives: the caller's own for a first attempt
	// that needs no copy, so OnAttempt must not modify it. It runs after
	// PrepareRetry, on the goroutine that called RoundTrip, and may be
	// called concurrently from several requests. In a hedging Transport it
	// runs before every copy of a request, on the copy's own goroutine, so
	// also concurrently for the copies of one request.
	OnAttempt func(req *http.Request, attempt int)

	// DrainLimit is the most bytes read and discarded from the body of a
	// failed attempt's response before it is closed. A body longer than
	// that is closed before its end, which costs its connection instead of
	// time. 0 means DefaultDrainLimit; a negative value closes bodies
	// without reading them.
	DrainLimit int64

	// BufferBody is the most bytes of a request body without GetBody that
	// RoundTrip reads into memory to make the request retryable; 0, the
	// default, or a negative value buffers nothing. It applies only to a
	// request that could otherwise be retried (an idempotent method or an
	// idempotency key): before the first attempt, RoundTrip reads the
	// body up to BufferBody bytes and one more. A body that ends within
	// the limit is retried like any other from the bytes read (and a
	// ContentLength of 0 or -1, unknown, becomes its length); one that
	// goes past it (or whose ContentLength already says so, in which case
	// nothing is read in advance) is sent once, streamed whole: the bytes
	// read first, then the rest of the body. If reading fails, nothing is
	// sent and RoundTrip closes the body and returns the read error as it
	// is, as http.Transport does. Buffering reads before sending, so don't
	// set it for bodies that are produced as the server answers, and mind
	// that each request may hold up to BufferBody bytes until it ends.
	BufferBody int64

	// Throttle, if set, returns the retry.Throttle shared by the requests
	// to host, or nil for none; Breaker, likewise, the retry.Breaker. host
	// is the request URL's Host, as it is: "example.com" and
	// "example.com:443" are two keys. Every attempt of a request asks them
	// first, as retry.WithThrottle and retry.WithBreaker describe; in a
	// hedging Transport, every copy. PerHost makes one of each per host,
	// with a bounded number of hosts.
	//
	// What counts as the host's answer: a response whose status the
	// Transport does not retry (every 2xx, 3xx and 4xx but 408 and 429,
	// by default) and a transport error it does not retry. A response it
	// retries (408, 429, 5xx but 501 and 505 by default: a 429 is the
	// host shedding load, as the SRE book counts quota rejections), a
	// transport error it retries (timeouts, refused or reset connections)
	// and an attempt that timed out are failures. A request sent once is
	// judged the same way, by RetryStatus and RetryError (never by
	// ShouldRetry), and never retried. An attempt ended by the request's
	// context counts for nothing.
	//
	// A request whose first attempt is not let through gets an error
	// matching retry.ErrThrottled or retry.ErrBreakerOpen, and no attempt is sent.
	// A retry not let through ends the retries: RoundTrip returns the last
	// response if it still holds it (a retry rejected by the Throttle is
	// decided before the wait, while the response is open), and otherwise
	// an error matching retry.ErrBreakerOpen.
	//
	// They are called once per request, and may be called concurrently.
	// Prefer them to a retry.WithThrottle or retry.WithBreaker among the
	// Transport's options, which would share one value among all hosts
	// and count every response to a request sent once as an answer.
	Throttle func(host string) *retry.Throttle
	Breaker  func(host string) *retry.Breaker

	// Limiter, if set, returns the retry.Limiter shared by the requests to
	// host, or nil for none (PerHost makes one per host): every attempt
	// holds one of its permits while in flight, as retry.WithLimiter
	// describes, and the outcomes count as they do for Throttle and
	// Breaker above. A request whose first attempt gets no permit gets an
	// error matching retry.ErrLimited, and no attempt is sent; a retry that
	// gets none ends the retries as a Breaker's refusal does; in a hedging
	// Transport, a copy that finds no permit free is not sent. It is
	// called once per request, and may be called concurrently.
	Limiter func(host string) *retry.Limiter

	base     http.RoundTripper // nil: http.DefaultTransport
	schedule retry.Schedule    // nil: defaultSchedule; never nil when hedging
	opts     []retry.Option    // discardOnRetry followed by the caller's options; when hedging, the caller's followed by closeLosers
	onceOpts []retry.Option    // opts followed by noBudget; nil without caller's options
	hedging  bool              // made by NewHedgingTransport: races requests with retry.Hedge instead of retrying them
}

// NewTransport returns a Transport that sends requests through base and
// retries them on schedule s with opts (see Transport for what is retried).
//
// A nil base means http.DefaultTransport, read at each request. A nil s
// means the default schedule: up to 4 retries after waits drawn uniformly
// from [0, 100ms], [0, 200ms], [0, 400ms] and [0, 800ms], that is
// retry.Exponential(100*time.Millisecond).Cap(2*time.Second).FullJitter(nil).Take(4).
// Without a context deadline or a Take, an infinite s retries for as long as
// attempts fail. NewTransport copies opts, so later changes to the caller's
// slice do not affect the Transport.
//
// NewTransport panics if given a retry.IfValue: a response it rejected would
// be neither returned nor closed. Set ShouldRetry instead, which sees the
// whole response. It panics if given a retry.OnDiscard, since it closes every
// response it does not return itself, or a retry.OnHedgeDone, which reports
// on races only (use retry.OnDone, or NewHedgingTransport).
func NewTransport(base http.RoundTripper, s retry.Schedule, opts ...retry.Option) *Transport {
	return newTransport("NewTransport", base, s, opts)
}

// newTransport is NewTransport, for a caller of that name.
func newTransport(caller string, base http.RoundTripper, s retry.Schedule, opts []retry.Option) *Transport {
	for _, o := range opts {
		switch {
		case o.JudgesValues():
			panic("retryhttp: " + caller + ": retry.IfValue is not supported; set Transport.ShouldRetry, which sees the whole response")
		case o.ReleasesValues():
			panic("retryhttp: " + caller + ": retry.OnDiscard has no response to release: the Transport closes every response it does not return")
		case o.ReportsHedges():
			panic("retryhttp: " + caller + ": retry.OnHedgeDone reports on races only; use retry.OnDone, or NewHedgingTransport")
		}
	}
	o := make([]retry.Option, 0, len(opts)+2)
	o = append(o, discardOnRetry)
	o = append(o, opts...)
	t := &Transport{base: base, schedule: s, opts: o}
	if len(opts) > 0 {
		// o has room for one more: onceOpts shares its array, past the end
		// of opts, which nothing appends to.
		t.onceOpts = append(o, noBudget)
	}
	return t
}

// NewClient returns an http.Client whose Transport is
// NewTransport(nil, s, opts...), a Transport on http.DefaultTransport. The
// client's CloseIdleConnections reaches http.DefaultTransport through it.
// It panics as NewTransport does.
func NewClient(s retry.Schedule, opts ...retry.Option) *http.Client {
	return &http.Client{Transport: newTransport("NewClient", nil, s, opts)}
}

// RoundTrip sends req and retries it as described on Transport, then returns
// the last response or error. It follows the http.RoundTripper contract: it
// does not modify req, it closes req.Body (through the base, or itself if no
// attempt is made), and it returns either a response or an error, never
// both.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.roundTrip(req, nil)
}

// roundTrip is RoundTrip. A retrying Transport whose base is a hedging one
// calls it in place of RoundTrip with sent, the number of requests the
// races of its call have sent so far, which the race numbers its own after
// and then adds them to.
func (t *Transport) roundTrip(req *http.Request, sent *int) (*http.Response, error) {
	if req.URL == nil {
		// As http.Transport answers it, before anything reads the URL
		// (the Throttle, Breaker and Limiter are keyed by its Host).
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errNilURL
	}
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	ctx := req.Context()
	tmpl, once := req, !idempotent(req)
	if !once && !rewindable(req) {
		once = true
		if t.BufferBody > 0 && ctx.Err() == nil {
			var err error
			if tmpl, once, err = bufferBody(req, t.BufferBody); err != nil {
				return nil, err
			}
		}
	}
	if t.hedging && !once {
		return t.race(base, req, tmpl, sent)
	}
	c := calls.Get().(*call)
	c.t, c.base, c.req, c.tmpl = t, base, req, tmpl
	var resp *http.Response
	var err error
	gated := t.Throttle != nil || t.Breaker != nil || t.Limiter != nil
	if once && t.onceOpts == nil && !gated {
		// No option could apply to the one attempt: send it as it is.
		resp, err = c.sendOnce(ctx)
	} else {
		s, opts, fn := t.schedule, t.opts, c.fn
		if once {
			s, opts, fn = noRetries, t.onceOpts, c.fnOnce
		}
		if s == nil {
			s = defaultSchedule
		}
		if opts == nil {
			opts = defaultOptions
		}
		if gated {
			opts = c.gate(opts, req.URL.Host)
			if once {
				fn = c.fnJudged
			}
		}
		resp, err = retry.Retry(ctx, s, fn, opts...)
		if err != nil {
			resp, err = c.result(ctx, err)
		}
	}
	c.reset()
	calls.Put(c)
	return resp, err
}

// CloseIdleConnections calls the CloseIdleConnections method of the base
// RoundTripper, if it has one, so that http.Client.CloseIdleConnections works
// through a Transport.
func (t *Transport) CloseIdleConnections() {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	if c, ok := base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// rewindable reports whether req's body can be sent again: it has none, or
// GetBody is set.
func rewindable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// idempotent reports whether req may be sent more than once, body aside: an
// idempotent method or an idempotency key.
func idempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	if _, ok := req.Header["Idempotency-Key"]; ok {
		return true
	}
	_, ok := req.Header["X-Idempotency-Key"]
	return ok
}

// gate returns opts with the Throttle, Breaker and Limiter of host, if any, in a
// buffer of c's.
func (c *call) gate(opts []retry.Option, host string) []retry.Option {
	c.opts = append(c.opts[:0], opts...)
	if c.t.Throttle != nil {
		if th := c.t.Throttle(host); th != nil {
			c.opts = append(c.opts, retry.WithThrottle(th))
		}
	}
	if c.t.Breaker != nil {
		if b := c.t.Breaker(host); b != nil {
			c.opts = append(c.opts, retry.WithBreaker(b))
		}
	}
	if c.t.Limiter != nil {
		if l := c.t.Limiter(host); l != nil {
			c.opts = append(c.opts, retry.WithLimiter(l))
		}
	}
	return c.opts
}

func (t *Transport) retryStatus(code int) bool {
	if t.RetryStatus == nil {
		return DefaultRetryStatus(code)
	}
	return t.RetryStatus(code)
}

func (t *Transport) retryError(err error) bool {
	if t.RetryError == nil {
		return retry.IsTransient(err)
	}
	return t.RetryError(err)
}

func (t *Transport) drainLimit() int64 {
	if t.DrainLimit == 0 {
		return DefaultDrainLimit
	}
	return t.DrainLimit
}

// result turns the error with which retry.Retry gave up into what RoundTrip
// returns: the last attempt's response or error, or the context's error.
func (c *call) result(ctx context.Context, err error) (*http.Response, error) {
	if c.n == 0 {
		// The context ended before the first attempt, or a Throttle,
		// Breaker or Limiter did not let it through: nothing reached the base, so
		// closing the body is up to us (the template's closes the
		// caller's, unless buffering already has).
		if c.tmpl.Body != nil {
			c.tmpl.Body.Close()
		}
		if ctx.Err() == nil {
			return nil, err
		}
		return nil, context.Cause(ctx)
	}
	last := err
	if re, ok := err.(*retry.Error); ok {
		last = re.Last
	}
	if se, ok := last.(*StatusError); ok {
		if !se.discarded {
			return se.resp, nil
		}
		if ctx.Err() == nil {
			// Only a Clock whose Sleep fails on its own gets here: the
			// response is gone and the clock's error is the reason.
			return nil, err
		}
		return nil, context.Cause(ctx)
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	return nil, last
}
