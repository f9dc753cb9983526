package retry

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ErrThrottled is the reason of an *Error returned because a Throttle
// rejected an attempt: errors.Is(err, ErrThrottled) reports it.
var ErrThrottled = errors.New("retry: throttled")

// A Throttle rejects attempts locally, before they are sent, when the
// dependency they go to has been failing: client-side adaptive throttling as
// Google's SRE book describes it ("Handling Overload"), made so that it never
// locks a recovered dependency out. Share one Throttle among all the calls to
// one dependency, with WithThrottle.
//
// # Rejection
//
// It counts requests (attempts sent, and attempts it rejected) and accepts
// (attempts the dependency answered) over a sliding window (5 seconds by
// default), and rejects each attempt with probability
//
//	w · min(0.9, max(0, (requests − K·accepts) / (requests + 1)))
//
// where K is 2 by default and w comes from the attempts sent over the last
// half of the window (Probability states the rule). While the dependency
// answers, requests stay below K·accepts and nothing is rejected; when it
// answers only part of what it is sent, the attempts that still go out are
// kept near K times what it accepts, as in the book; when it answers nothing,
// a tenth still go out; and once those mostly succeed, w falls from 1 to 0
// and nothing is rejected: rejections stop within seconds of a recovery,
// however long the outage was.
//
// # What counts
//
// An accept is an attempt that succeeded, or that failed with an error the
// call does not retry (Permanent, or rejected by If): the dependency
// answered, even if the answer is "no". An attempt that failed with an error
// the call would retry (such as a timeout, including its own AttemptTimeout,
// or a 503), or with a server's request not to retry (a negative RetryAfter:
// pushback), is a request without an accept. An attempt that ended because
// the caller's context ended counts for nothing, so callers that give up
// cannot raise the probability. One that panicked, or that Hedge cancelled
// because another attempt won, counts for nothing too. A value IfValue rejected is an
// accept. A request let through is counted when its
// outcome is known, in the bucket it was let through in; a rejected one at
// once. So attempts still in flight count against nothing: a burst of
// concurrent first calls to a new Throttle is let through whole.
//
// # Rejected attempts
//
// Every attempt of a call asks: the first one, each retry (before its wait,
// so that a rejected retry is not waited for), and each attempt Hedge
// starts. A rejected attempt is not made: the call ends at once, without
// waiting and without taking a Budget token, with an *Error that matches
// ErrThrottled (and, for a rejected retry, the last error). It is never
// retried by that call. A rejected attempt still counts as a request: that
// is what keeps the attempts sent near K times the accepts.
//
// # Concurrency and cost
//
// The zero Throttle is not usable: make one with NewThrottle. The window
// slides in steps of a sixteenth of its length, and an attempt's probability
// comes from the steps before the current one: it is computed by the first
// attempt of each step and cached, so the others read three words that no
// attempt writes. The counts are kept in atomic counters striped across
// processors, with no lock: asking and reporting allocate nothing. A
// rejection is counted in one word shared by all processors. A Throttle is
// safe for concurrent use by any number of goroutines.
type Throttle struct {
	k     float64
	clock Clock         // nil: the real clock
	w     window        // count 0: sent and not accepted, count 1: sent and accepted
	rej   window        // count 0: rejected; one stripe
	cache throttleCache // the current step's probability
	src   rand.Source   // ThrottleRand's; nil: the runtime's generator
	srcMu sync.Mutex    // guards src
}

// A ThrottleOption configures a Throttle (see NewThrottle). ThrottleOptions
// are made only by this package; the zero ThrottleOption does nothing.
type ThrottleOption struct {
	k     float64
	d     time.Duration
	clock Clock
	src   rand.Source
	kind  uint8
}

const (
	throttleK = iota + 1
	throttleWindow
	throttleClock
	throttleRand
)

// ThrottleK returns a ThrottleOption that sets K, the multiple of the
// accepts that the requests may reach before the Throttle rejects any
// (default 2). A lower K rejects sooner and wastes less of the dependency's
// work on calls that will fail; a higher one lets more through. K = 1 is
// the most aggressive: any failure makes rejections possible.
//
// ThrottleK panics if k is below 1, above 1e9 (infinite included) or NaN.
func ThrottleK(k float64) ThrottleOption {
	if !(k >= 1) || k > maxK {
		panic("retry: ThrottleK: K " + strconv.FormatFloat(k, 'g', -1, 64) + " is not between 1 and " + strconv.FormatFloat(maxK, 'g', -1, 64))
	}
	return ThrottleOption{kind: throttleK, k: k}
}

// maxK bounds K, so that K·accepts stays finite.
const maxK = 1e9

// ThrottleWindow returns a ThrottleOption that sets the length of the
// window over which the Throttle counts (default 5 seconds). The window
// slides in steps of d/16; an attempt's probability comes from the steps
// before the current one. The Throttle starts shedding an outage only once
// its failures outweigh the healthy traffic in the window, and stops half a
// window or so after the dependency recovered: a longer window reacts more
// slowly both ways, a shorter one to fewer calls.
//
// ThrottleWindow panics if d is not positive.
func ThrottleWindow(d time.Duration) ThrottleOption {
	if d <= 0 {
		panic("retry: ThrottleWindow: window " + d.String() + " is not positive")
	}
	return ThrottleOption{kind: throttleWindow, d: d}
}

// ThrottleClock returns a ThrottleOption that makes the Throttle read the
// time from c, to place its counts in the window; nil means the real clock,
// which is also the default. Use the same FakeClock as the calls' WithClock
// in tests.
func ThrottleClock(c Clock) ThrottleOption {
	return ThrottleOption{kind: throttleClock, clock: c}
}

// ThrottleRand returns a ThrottleOption that makes the Throttle draw its
// rejections from src, for repeatable tests and simulations; the Throttle
// then serialises its draws with a mutex. The default, and a nil src, is
// the runtime's generator, which needs no lock.
func ThrottleRand(src rand.Source) ThrottleOption {
	return ThrottleOption{kind: throttleRand, src: src}
}

// NewThrottle returns a Throttle with K = 2 and a window of 5 seconds on
// the real clock, changed by opts. The defaults were chosen with retrysim
// overload (docs/OVERLOAD.md, "Choosing the defaults").
func NewThrottle(opts ...ThrottleOption) *Throttle {
	t := &Throttle{k: 2}
	d := defaultThrottleWindow
	for _, o := range opts {
		switch o.kind {
		case throttleK:
			t.k = o.k
		case throttleWindow:
			d = o.d
		case throttleClock:
			t.clock = o.clock
		case throttleRand:
			t.src = o.src
		}
	}
	o := origin(t.clock)
	t.w = newWindow(d, o)
	t.rej = window{origin: o, width: t.w.width, stripes: make([]stripe, 1)}
	return t
}

// defaultThrottleWindow is NewThrottle's window. The SRE book's 2 minutes
// let a 30-second outage through unshed in retrysim overload; 5 seconds is
// the longest that holds its default run's outage load to 3× (with K = 2).
const defaultThrottleWindow = 5 * time.Second

// maxReject is the highest probability with which a Throttle rejects an
// attempt: however long the dependency has been down, a tenth of the
// attempts still reach it, and their answers are what tells the Throttle
// it has recovered.
const maxReject = 0.9

// WithThrottle returns an Option that makes every attempt of the call ask t
// first (see Throttle): a rejected attempt ends the call at once with an
// *Error that matches ErrThrottled. A later WithThrottle replaces an
// earlier one.
//
// WithThrottle panics if t is nil.
func WithThrottle(t *Throttle) Option {
	if t == nil {
		panic("retry: WithThrottle: nil Throttle")
	}
	t.mustBeMade("WithThrottle")
	return Option{kind: throttleOption, ref: t}
}

// Probability returns the probability with which t rejects an attempt now,
// computed afresh from the counts: the same as an attempt's, which reads it
// from a cache made once per step of the window.
//
// The weight w in the formula (see Throttle) is 1 while at least an eighth
// of the attempts sent over the last half of the window failed, a quarter of
// the share at the formula's balance, (K−1)/K (an eighth for K = 2); below
// that it falls in proportion, to 0 when none failed; it is 1 when none was
// sent. So noise around the balance leaves the book's formula alone, and a
// dependency that answers everything it is sent is not throttled.
//
// Probability panics with a retry: message if t is the zero Throttle.
func (t *Throttle) Probability() float64 {
	t.mustBeMade("Throttle.Probability")
	tick, _ := t.w.now(t.clock, nil)
	return t.compute(tick)
}

// String returns t's state for logs and debugging, in a form that stays
// stable: "retry.Throttle{p: 0.25, K: 2}". A nil t gives "<nil>", the zero
// Throttle "retry.Throttle{}".
func (t *Throttle) String() string {
	if t == nil {
		return "<nil>"
	}
	if t.w.stripes == nil {
		return "retry.Throttle{}"
	}
	return "retry.Throttle{p: " + strconv.FormatFloat(t.Probability(), 'g', 4, 64) +
		", K: " + strconv.FormatFloat(t.k, 'g', -1, 64) + "}"
}

// mustBeMade panics if t was not made by NewThrottle: the zero Throttle
// has no window to count in.
func (t *Throttle) mustBeMade(where string) {
	if t.w.stripes == nil {
		panic("retry: " + where + ": the zero Throttle; make one with NewThrottle")
	}
}

// compute returns the probability in step tick from the window's counts
// of the steps before it.
func (t *Throttle) compute(tick int64) float64 {
	fail, acc := t.w.sum(tick-(windowBuckets-1), tick-1)
	rej, _ := t.rej.sum(tick-(windowBuckets-1), tick-1)
	rf, ra := t.w.sum(tick-recentSteps, tick-1)
	return t.probability(fail+acc+rej, acc, rf+ra, rf)
}

// recentSteps is the number of steps, before the current one, from which
// the weight comes: half the window. Over fewer, the chance share of
// failures of a few attempts moves the weight, which raises the load kept
// at the balance (TestThrottleLoad measured 2.09× over 4 steps of a 5s
// window, 2.04× over 8).
const recentSteps = 8

// probability is the formula: for r requests (rejected ones included) and
// a accepts over the window, and, over its last recentSteps steps, sent
// attempts sent and failed of them not accepted.
func (t *Throttle) probability(r, a, sent, failed uint64) float64 {
	fr := float64(r)
	p := min(maxReject, max(0, (fr-t.k*float64(a))/(fr+1)))
	if p == 0 {
		return 0
	}
	return p * t.weight(sent, failed)
}

// weight returns the weight of the book's probability (see Probability)
// for the attempts sent lately and those of them not accepted.
func (t *Throttle) weight(sent, failed uint64) float64 {
	if sent == 0 {
		return 1 // no news
	}
	if failed == 0 {
		return 0
	}
	return min(1, float64(failed)/(float64(sent)*(1-1/t.k)/4)) // +Inf for K = 1: 1
}

// throttleTicket is what an attempt that t let through reports its outcome
// with: the bucket it was admitted in, where its request (and its accept,
// if any) is counted.
type throttleTicket struct {
	tick int64
	ok   bool // a ticket was issued
}

// admit decides whether to reject one request. It reads the clock once
// (through rd, if not nil) and the probability cached for the current step,
// and allocates nothing. A rejected request is counted at once; one let
// through is counted when its outcome is known (settle), so that attempts
// still in flight, which cannot have been accepted yet, never count against
// the ones that follow.
func (t *Throttle) admit(rd *reading) (throttleTicket, bool) {
	tick, _ := t.w.now(t.clock, rd)
	if p := t.current(tick); p > 0 && t.draw() < p {
		t.rej.add(tick, 0, 0)
		return throttleTicket{}, false
	}
	return throttleTicket{tick: tick, ok: true}, true
}

// current returns the probability in step tick: the cached one, or one
// computed (and cached) from the window.
func (t *Throttle) current(tick int64) float64 {
	if p, ok := t.cache.load(tick); ok {
		return p
	}
	p := t.compute(tick)
	t.cache.store(tick, p)
	return p
}

// settle counts the outcome v of the attempt that got tk, in the step it
// was admitted in: a request sent, and an accept if the dependency
// answered; an attempt ended by its caller's context counts for nothing.
func (t *Throttle) settle(tk throttleTicket, v verdict) {
	if !tk.ok || v == neither {
		return
	}
	// One add, one compare-and-swap: a request is counted as accepted or
	// not, never as a request first and an accept after, so a step
	// computed at any moment sees each request with its accept.
	kind := 0
	if v == accepted {
		kind = 1
	}
	t.w.add(tk.tick, t.w.stripe(), kind)
}

// throttleCache holds the probability of one step, computed by the first
// attempt of the step, so that the others read three words that no
// attempt writes. It is a sequence lock: a reader that sees the sequence
// odd, or changed, computes the probability itself.
type throttleCache struct {
	seq  atomic.Uint64
	tick atomic.Int64
	p    atomic.Uint64 // math.Float64bits
}

// load returns the probability cached for tick, if it is there.
func (c *throttleCache) load(tick int64) (float64, bool) {
	s := c.seq.Load()
	if s&1 != 0 || s == 0 || c.tick.Load() != tick {
		return 0, false
	}
	p := math.Float64frombits(c.p.Load())
	return p, c.seq.Load() == s
}

// store caches p for tick, unless another goroutine is storing.
func (c *throttleCache) store(tick int64, p float64) {
	s := c.seq.Load()
	if s&1 != 0 || !c.seq.CompareAndSwap(s, s+1) {
		return
	}
	c.tick.Store(tick)
	c.p.Store(math.Float64bits(p))
	c.seq.Store(s + 2)
}

// draw returns a number in [0, 1).
func (t *Throttle) draw() float64 {
	if t.src == nil {
		return rand.Float64()
	}
	t.srcMu.Lock()
	defer t.srcMu.Unlock()
	return float64(t.src.Uint64()<<11>>11) / (1 << 53)
}
