package retry

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"
)

// ErrThrottled is the reason of an *Error returned because a Throttle
// rejected an attempt: errors.Is(err, ErrThrottled) reports it.
var ErrThrottled = errors.New("retry: throttled")

// A Throttle rejects attempts locally, before they are sent, when the
// dependency they go to has been failing: client-side adaptive throttling as
// Google's SRE book describes it ("Handling Overload"). Share one Throttle
// among all the calls to one dependency, with WithThrottle.
//
// It counts, over a sliding window (2 minutes by default), the requests (every
// attempt that asked it, rejected ones included) and the accepts (attempts
// the dependency answered), and rejects each attempt with probability
//
//	max(0, (requests − K·accepts) / (requests + 1))
//
// where K is 2 by default. An attempt that failed with an error the call
// would retry, or with a pushback, is a request without an accept; one that
// the caller's context ended counts for nothing. A rejected attempt is not
// made: the call ends at once with an *Error that matches ErrThrottled. What
// counts and when each attempt asks are in docs/OVERLOAD.md ("Throttle in
// detail").
//
// Asking and reporting allocate nothing and take no lock. A Throttle is safe
// for concurrent use by any number of goroutines.
type Throttle struct {
	k     float64
	clock Clock // nil: the real clock
	w     window
	past  pastSum     // the window's counts before the current bucket
	src   rand.Source // ThrottleRand's; nil: the runtime's generator
	srcMu sync.Mutex  // guards src
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
// ThrottleK panics if k is below 1, infinite or NaN.
func ThrottleK(k float64) ThrottleOption {
	if !(k >= 1) || k > maxK {
		panic("retry: ThrottleK: K " + strconv.FormatFloat(k, 'g', -1, 64) + " is not between 1 and " + strconv.FormatFloat(maxK, 'g', -1, 64))
	}
	return ThrottleOption{kind: throttleK, k: k}
}

// maxK bounds K, so that K·accepts stays finite.
const maxK = 1e9

// ThrottleWindow returns a ThrottleOption that sets the length of the
// window over which the Throttle counts (default 2 minutes). The window
// slides in steps of d/16.
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

// NewThrottle returns a Throttle with K = 2 and a window of 2 minutes on the
// real clock, as the SRE book gives them, changed by opts.
func NewThrottle(opts ...ThrottleOption) *Throttle {
	t := &Throttle{k: 2}
	d := 2 * time.Minute
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
	t.w = newWindow(d, origin(t.clock))
	return t
}

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
	return Option{kind: throttleOption, ref: t}
}

// Probability returns the probability with which t rejects an attempt now:
// max(0, (requests − K·accepts) / (requests + 1)) over the window. It reads
// every count of the window, so it is exact but slower than an attempt's
// own check; with calls in flight it may change as soon as it is read.
func (t *Throttle) Probability() float64 {
	tick, _ := t.w.now(t.clock, nil)
	r, a := t.w.sum(tick-(windowBuckets-1), tick)
	return t.probability(r, a)
}

// String returns t's state for logs and debugging, in a form that stays
// stable: "retry.Throttle{p: 0.25, K: 2}". A nil t gives "<nil>".
func (t *Throttle) String() string {
	if t == nil {
		return "<nil>"
	}
	return "retry.Throttle{p: " + strconv.FormatFloat(t.Probability(), 'g', 4, 64) +
		", K: " + strconv.FormatFloat(t.k, 'g', -1, 64) + "}"
}

// probability is the formula, for r requests and a accepts.
func (t *Throttle) probability(r, a uint64) float64 {
	fr := float64(r)
	return max(0, (fr-t.k*float64(a))/(fr+1))
}

// throttleTicket is what an attempt that t let through reports its outcome
// with: the bucket it was admitted in, where its request (and its accept,
// if any) is counted.
type throttleTicket struct {
	tick int64
	ok   bool // a ticket was issued
}

// admit decides whether to reject one request. It reads the clock once
// (through rd, if not nil), the cached counts of the window's past and the
// current bucket's counts, and allocates nothing. A rejected request is
// counted at once; one let through is counted when its outcome is known
// (settle), so that attempts still in flight, which cannot have been
// accepted yet, never count against the ones that follow: otherwise a burst
// of concurrent first calls to a new Throttle, n requests and no accepts,
// would reject the next with probability n/(n+1).
func (t *Throttle) admit(rd *reading) (throttleTicket, bool) {
	tick, _ := t.w.now(t.clock, rd)
	if p := t.current(tick); p > 0 && t.draw() < p {
		t.w.add(tick, t.w.stripe(), 0)
		return throttleTicket{}, false
	}
	return throttleTicket{tick: tick, ok: true}, true
}

// current returns the probability in bucket tick from the cached counts
// of the window's past and the current bucket's.
func (t *Throttle) current(tick int64) float64 {
	r, a, ok := t.past.load(tick)
	if !ok {
		r, a = t.w.sum(tick-(windowBuckets-1), tick-1)
		t.past.store(tick, r, a)
	}
	cr, ca := t.w.bucket(tick)
	return t.probability(r+cr, a+ca)
}

// settle counts the outcome v of the attempt that got tk, in the bucket it
// was admitted in: a request, and an accept if the dependency answered; an
// attempt ended by its caller's context counts for nothing.
func (t *Throttle) settle(tk throttleTicket, v verdict) {
	if !tk.ok || v == neither {
		return
	}
	// The accept goes in first: an attempt admitted between the two adds
	// must not see a request without its accept, which would make it
	// reject with probability 1/2 on a new Throttle.
	s := t.w.stripe()
	if v == accepted {
		t.w.add(tk.tick, s, 1)
	}
	t.w.add(tk.tick, s, 0)
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
