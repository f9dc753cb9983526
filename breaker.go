package retry

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ErrBreakerOpen is the reason of an *Error returned because a Breaker did not let
// an attempt through: it was open, or half-open with all its probes taken.
// errors.Is(err, ErrBreakerOpen) reports it. The reason also carries, as a
// RetryAfter pushback, how long the Breaker stays open (0 when it is
// half-open), so that an outer Retry around the call waits at least that
// long before it tries again.
var ErrBreakerOpen = errors.New("retry: circuit breaker open")

// BreakerState is the state of a Breaker: BreakerClosed, BreakerOpen or
// BreakerHalfOpen.
type BreakerState int

const (
	// BreakerClosed lets every attempt through, and counts their outcomes.
	BreakerClosed BreakerState = iota
	// BreakerOpen lets no attempt through, until its open period ends.
	BreakerOpen
	// BreakerHalfOpen lets a few probes through; their outcomes close the
	// Breaker again or open it for longer.
	BreakerHalfOpen
)

// String returns "closed", "open" or "half-open".
func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half-open"
	}
	return "BreakerState(" + strconv.Itoa(int(s)) + ")"
}

// A Breaker is a circuit breaker: it stops calls to a dependency that keeps
// failing, and lets a few probes through from time to time to find out
// whether it has recovered. Share one Breaker among all the calls to one
// dependency, with WithBreaker, or ask it yourself with Allow, under the
// same rules; Snapshot shows its counts. Make it with NewBreaker: the zero
// Breaker is refused with a panic where it is first used.
//
// # States
//
// Closed, it lets every attempt through and counts their outcomes over a
// sliding window (5 seconds by default, in steps of a sixteenth of it). Once
// the window holds at least the minimum number of outcomes (20 by default)
// and the failures make at least the ratio of them (0.5 by default), it
// opens. Open, it lets no attempt through for an open period taken from a
// Schedule: the k-th open period in a row is the k-th delay of the schedule
// (Constant(5s) by default); with a growing schedule, a dependency that keeps
// failing its probes is left alone longer each time; when the schedule runs
// out the last delay is kept. After the open period it is half-open: it lets
// through as many probes as BreakerProbes says (1 by default), and no more,
// until they report. If that many probes succeed it closes, with an empty
// window, and the next open period is the schedule's first again; if one
// fails it opens again, for the next period.
//
// # What counts
//
// An attempt that succeeded, or that failed with an error the call does not
// retry (Permanent, or rejected by If), is a success: the dependency
// answered. An attempt that failed with an error the call would retry (such
// as a timeout, including its own AttemptTimeout), or with a server's
// request not to retry (a negative RetryAfter: pushback), is a failure. An
// attempt that ended because the caller's context ended counts as neither,
// and a probe that ends so gives its slot back, so callers that give up
// cannot trip the Breaker. One that panicked, or that Hedge cancelled
// because another attempt won, counts as neither too. A value IfValue
// rejected is a success. Every
// attempt of a call asks: the first one, each
// retry, and each attempt Hedge starts; an outcome reported after the Breaker
// changed state since its attempt was let through is ignored.
//
// # Refused attempts
//
// An attempt the Breaker does not let through is not made: the call ends at
// once, without waiting and without taking a Budget token, with an *Error
// whose reason matches ErrBreakerOpen. A retry asks when its wait is over; if the
// Breaker is open and will still be open then, the call ends before the wait
// instead.
//
// # Time and concurrency
//
// A Breaker reads the time from its clock (see BreakerClock) and moves from
// open to half-open when an attempt, or State, finds the open period over.
// It is safe for concurrent use: a closed Breaker takes no lock to let an
// attempt through or count a success.
type Breaker struct {
	ratio    float64
	minCalls uint64
	probes   int
	slow     time.Duration // BreakerSlowCall's; 0: none
	lost     time.Duration // a probe unreported for this long is lost: the window's length
	clock    Clock         // nil: the real clock
	hooks    []func(from, to BreakerState)
	w        window // count 0: outcomes, count 1: failures

	state  atomic.Uint64 // generation<<2 | BreakerState; the generation counts the changes of state
	until  atomic.Int64  // when open: the end of the open period, in ns since w.origin
	consec atomic.Uint64 // failures since the last success or change of state

	mu       sync.Mutex    // guards the changes of state and the fields below
	periods  openPeriods   // the open periods of the current streak (breaker_period.go)
	inflight int           // half-open: probes let through that have not reported
	passed   int           // half-open: probes that succeeded
	probed   time.Duration // half-open: when the latest probe was let through, since w.origin
}

// A BreakerOption configures a Breaker (see NewBreaker). BreakerOptions are
// made only by this package; the zero BreakerOption does nothing.
type BreakerOption struct {
	kind  uint8
	f     float64
	n     int
	d     time.Duration
	s     Schedule
	clock Clock
	hook  func(from, to BreakerState)
}

const (
	breakerRatio = iota + 1
	breakerMinCalls
	breakerWindow
	breakerProbes
	breakerOpen
	breakerClock
	breakerHook
	breakerSlow
)

// BreakerRatio returns a BreakerOption that sets the share of failures
// among the outcomes in the window at which the Breaker opens (default
// 0.5). A ratio of 1 opens it only when every outcome in the window is a
// failure.
//
// BreakerRatio panics if r is not in (0, 1].
func BreakerRatio(r float64) BreakerOption {
	if !(r > 0 && r <= 1) {
		panic("retry: BreakerRatio: ratio " + strconv.FormatFloat(r, 'g', -1, 64) + " is not in (0, 1]")
	}
	return BreakerOption{kind: breakerRatio, f: r}
}

// BreakerMinCalls returns a BreakerOption that sets the number of outcomes
// the window must hold before the Breaker opens (default 20), so that a few
// failures among few calls do not open it.
//
// BreakerMinCalls panics if n is less than 1.
func BreakerMinCalls(n int) BreakerOption {
	mustCount("BreakerMinCalls", n)
	return BreakerOption{kind: breakerMinCalls, n: n}
}

// BreakerWindow returns a BreakerOption that sets the length of the window
// over which a closed Breaker counts outcomes (default 5 seconds). The
// window slides in steps of d/16.
//
// BreakerWindow panics if d is not positive.
func BreakerWindow(d time.Duration) BreakerOption {
	if d <= 0 {
		panic("retry: BreakerWindow: window " + d.String() + " is not positive")
	}
	return BreakerOption{kind: breakerWindow, d: d}
}

// BreakerProbes returns a BreakerOption that sets how many probes a
// half-open Breaker lets through, and how many of them must succeed for it
// to close (default 1).
//
// BreakerProbes panics if n is less than 1.
func BreakerProbes(n int) BreakerOption {
	mustCount("BreakerProbes", n)
	return BreakerOption{kind: breakerProbes, n: n}
}

// BreakerOpenPeriods returns a BreakerOption that sets the open periods: the k-th
// time in a row the Breaker opens, it stays open for the k-th delay of s,
// and once s runs out, for its last delay; a schedule without any delay
// half-opens at once. The count starts again when the Breaker closes. The
// default is Constant(5*time.Second). The open
// periods of a streak are the delays of one run of s, started when the
// streak starts, so a jittered s draws each one anew; finding the next one
// costs the same however long the streak (for a hand-written s, past 4096
// open periods in a row, the Breaker keeps the 4096th).
//
// BreakerOpenPeriods panics if s is nil.
func BreakerOpenPeriods(s Schedule) BreakerOption {
	mustSchedule("BreakerOpenPeriods", s)
	return BreakerOption{kind: breakerOpen, s: s}
}

// BreakerSlowCall returns a BreakerOption that counts an attempt that
// succeeds, but takes longer than d, as a failure, so that a dependency
// that answers too slowly to be of use opens the Breaker as one that fails
// would: with the other settings unchanged, once the share of slow or
// failed attempts in the window reaches the ratio. An attempt is timed on
// the Breaker's clock, from when the Breaker lets it through to when its
// outcome is reported; a half-open probe that is slow reopens the Breaker.
// Attempts the caller's context ended count for nothing, slow or not. As
// with failures, nothing opens the Breaker before its window holds
// BreakerMinCalls attempts: for traffic slower than that (with the
// defaults, 20 attempts in 5 s), widen BreakerWindow.
//
// BreakerSlowCall panics if d is not positive.
func BreakerSlowCall(d time.Duration) BreakerOption {
	if d <= 0 {
		panic("retry: BreakerSlowCall: duration " + d.String() + " is not positive")
	}
	return BreakerOption{kind: breakerSlow, d: d}
}

// BreakerClock returns a BreakerOption that makes the Breaker read the time
// from c, for its window and its open periods; nil means the real clock,
// which is also the default. Use the same FakeClock as the calls' WithClock
// in tests.
func BreakerClock(c Clock) BreakerOption {
	return BreakerOption{kind: breakerClock, clock: c}
}

// OnStateChange returns a BreakerOption that calls f each time the Breaker
// changes state, with the old state and the new one. f runs on the
// goroutine whose attempt (or call of State) made the change, after the
// Breaker has made it and released its lock, so f may call the Breaker's
// methods; changes made in quick succession by different goroutines may
// reach f concurrently and out of order. Several OnStateChange hooks all
// run, in the order given.
//
// OnStateChange panics if f is nil.
func OnStateChange(f func(from, to BreakerState)) BreakerOption {
	if f == nil {
		panic("retry: OnStateChange: nil function")
	}
	return BreakerOption{kind: breakerHook, hook: f}
}

// NewBreaker returns a closed Breaker, with a ratio of 0.5, a minimum of 20
// outcomes, a window of 5 seconds, 1 probe, open periods of
// Constant(5*time.Second), on the real clock, changed
// by opts.
func NewBreaker(opts ...BreakerOption) *Breaker {
	b := &Breaker{ratio: 0.5, minCalls: 20, probes: 1}
	d := 5 * time.Second
	var open Schedule
	for _, o := range opts {
		switch o.kind {
		case breakerRatio:
			b.ratio = o.f
		case breakerMinCalls:
			b.minCalls = uint64(o.n)
		case breakerWindow:
			d = o.d
		case breakerProbes:
			b.probes = o.n
		case breakerOpen:
			open = o.s
		case breakerClock:
			b.clock = o.clock
		case breakerHook:
			b.hooks = append(b.hooks, o.hook)
		case breakerSlow:
			b.slow = o.d
		}
	}
	if open == nil {
		open = Constant(5 * time.Second)
	}
	b.periods = newOpenPeriods(open)
	b.w = newWindow(d, origin(b.clock))
	b.lost = d
	return b
}

// WithBreaker returns an Option that makes every attempt of the call ask b
// first (see Breaker): an attempt b does not let through ends the call at
// once with an *Error that matches ErrBreakerOpen. A later WithBreaker replaces an
// earlier one.
//
// Given with a WithThrottle, the Breaker asks first, so that the requests
// the Throttle counts while the Breaker is open do not make it reject the
// probes; an attempt the Throttle then rejects gives its Breaker slot back,
// and a Budget token taken for a retry that is then refused goes back too.
// The two share one reading of the real clock.
//
// WithBreaker panics if b is nil.
func WithBreaker(b *Breaker) Option {
	if b == nil {
		panic("retry: WithBreaker: nil Breaker")
	}
	b.mustMade("WithBreaker")
	return Option{kind: breakerOption, ref: b}
}

// State returns b's state now. An open Breaker whose open period is over
// becomes half-open here, as it would for an attempt. With calls in flight
// the state may change as soon as it is read.
//
// State panics if b was not made by NewBreaker.
func (b *Breaker) State() BreakerState {
	b.mustMade("Breaker.State")
	word := b.state.Load()
	if _, at := b.w.now(b.clock, nil); BreakerState(word&3) == BreakerOpen && b.left(at) <= 0 {
		if from, to, changed := b.halfOpen(); changed {
			b.notify(from, to)
		}
		word = b.state.Load()
	}
	return BreakerState(word & 3)
}

// left returns the time left, at the time at after the window's origin, of
// the latest open period.
func (b *Breaker) left(at time.Duration) time.Duration {
	return time.Duration(b.until.Load()) - at
}

// breakerTicket is what an attempt that b let through reports its outcome
// with: the state word it was let through in, and where its outcome is
// counted.
type breakerTicket struct {
	word   uint64
	tick   int64
	at     time.Duration // when it was issued, since the window's origin
	stripe uint32
	ok     bool // a ticket was issued
}

// admit decides whether to let an attempt through, reading the clock
// through rd if not nil. If not, it returns how
// long b stays open (0 if it is half-open).
func (b *Breaker) admit(rd *reading) (breakerTicket, time.Duration, bool) {
	tick, at := b.w.now(b.clock, rd)
	word := b.state.Load()
	switch BreakerState(word & 3) {
	case BreakerClosed:
		return breakerTicket{word: word, tick: tick, at: at, stripe: b.w.stripe(), ok: true}, 0, true
	case BreakerOpen:
		if left := b.left(at); left > 0 {
			return breakerTicket{}, left, false
		}
		if from, to, changed := b.halfOpen(); changed {
			b.notify(from, to)
		}
	}
	return b.probe(tick, at)
}

// probe lets a probe through if b is half-open with a slot free (or lets
// any attempt through if b closed meanwhile).
func (b *Breaker) probe(tick int64, at time.Duration) (breakerTicket, time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	word := b.state.Load()
	switch BreakerState(word & 3) {
	case BreakerClosed:
		return breakerTicket{word: word, tick: tick, at: at, stripe: b.w.stripe(), ok: true}, 0, true
	case BreakerOpen:
		return breakerTicket{}, max(b.left(at), 0), false
	}
	if b.inflight+b.passed >= b.probes {
		if b.inflight == 0 || at-b.probed < b.lost {
			return breakerTicket{}, 0, false
		}
		// The probes in flight have not reported for a whole window:
		// their reports are lost (a two-step user forgot them), and would
		// otherwise keep b half-open, refusing everything, for ever. A new
		// generation makes their reports, should they come, count for
		// nothing, and frees their slots.
		b.inflight = 0
		b.set(word, BreakerHalfOpen)
		word = b.state.Load()
	}
	b.inflight++
	b.probed = at
	return breakerTicket{word: word, at: at, ok: true}, 0, true
}

// halfOpen moves b from open to half-open, if it is still open and its open
// period is over.
func (b *Breaker) halfOpen() (from, to BreakerState, changed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	word := b.state.Load()
	_, at := b.w.now(b.clock, nil)
	if BreakerState(word&3) != BreakerOpen || b.left(at) > 0 {
		return 0, 0, false
	}
	b.inflight, b.passed, b.probed = 0, 0, at
	b.set(word, BreakerHalfOpen)
	return BreakerOpen, BreakerHalfOpen, true
}

// set moves b from the state of word to to, with the next generation, and
// starts the count of consecutive failures afresh. The caller holds b.mu.
func (b *Breaker) set(word uint64, to BreakerState) {
	b.state.Store((word>>2+1)<<2 | uint64(to))
	b.consec.Store(0)
}

// trip opens b, from the state of word, at the time at after the window's
// origin, for the streak's next open period. The caller holds b.mu.
func (b *Breaker) trip(word uint64, at time.Duration) {
	b.until.Store(int64(addSat(at, b.periods.next())))
	b.set(word, BreakerOpen)
}

// report counts the outcome v of the attempt that got tk. With
// BreakerSlowCall, a success slower than its limit counts as a failure.
func (b *Breaker) report(tk breakerTicket, v verdict) {
	if !tk.ok {
		return
	}
	if v == accepted && b.slow > 0 {
		if _, at := b.w.now(b.clock, nil); at-tk.at > b.slow {
			v = failed
		}
	}
	if BreakerState(tk.word&3) == BreakerClosed {
		if v == neither || b.state.Load() != tk.word {
			return
		}
		b.w.add(tk.tick, tk.stripe, 0)
		if v == failed {
			b.consec.Add(1)
			b.w.add(tk.tick, tk.stripe, 1)
			b.check(tk.word)
		} else if b.consec.Load() != 0 {
			b.consec.Store(0) // read first: a healthy dependency writes nothing shared
		}
		return
	}
	if from, to, changed := b.settle(tk.word, v); changed {
		b.notify(from, to)
	}
}

// check opens b, closed in the state of word, if its window calls for it.
func (b *Breaker) check(word uint64) {
	tick, at := b.w.now(b.clock, nil)
	calls, failures := b.w.sum(tick-(windowBuckets-1), tick)
	if calls < b.minCalls || float64(failures) < b.ratio*float64(calls) {
		return
	}
	if b.tripClosed(word, at) {
		b.notify(BreakerClosed, BreakerOpen)
	}
}

// tripClosed opens b, closed in the state of word, unless it has changed
// state meanwhile, and reports whether it did. The lock is released on a
// panic too: a hand-written open schedule runs under it.
func (b *Breaker) tripClosed(word uint64, at time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state.Load() != word {
		return false
	}
	b.trip(word, at)
	return true
}

// settle counts the outcome v of a probe let through in the state of word.
func (b *Breaker) settle(word uint64, v verdict) (from, to BreakerState, changed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state.Load() != word {
		return 0, 0, false
	}
	if b.inflight == 0 {
		return 0, 0, false // a probe reported twice
	}
	b.inflight--
	switch v {
	case accepted:
		if b.passed++; b.passed < b.probes {
			return 0, 0, false
		}
		b.periods.reset()
		b.w.clear()
		b.set(word, BreakerClosed)
		return BreakerHalfOpen, BreakerClosed, true
	case failed:
		_, at := b.w.now(b.clock, nil)
		b.trip(word, at)
		return BreakerHalfOpen, BreakerOpen, true
	}
	return 0, 0, false
}

// mustMade panics, naming fn, if b was not made by NewBreaker: the zero
// Breaker has no window to count in.
func (b *Breaker) mustMade(fn string) {
	if b.w.stripes == nil {
		panic("retry: " + fn + ": Breaker not made by NewBreaker")
	}
}

// notify calls the hooks for a change from from to to.
func (b *Breaker) notify(from, to BreakerState) {
	for _, f := range b.hooks {
		f(from, to)
	}
}

// blocks reports whether b is open and will still be open d from now, and
// for how long it is open.
func (b *Breaker) blocks(d time.Duration) (time.Duration, bool) {
	if BreakerState(b.state.Load()&3) != BreakerOpen {
		return 0, false
	}
	_, at := b.w.now(b.clock, nil)
	left := b.left(at)
	return left, left > d
}

// verdict is what an attempt's outcome counts as, for a Throttle and a
// Breaker.
type verdict uint8

const (
	neither  verdict = iota // the caller's context ended the attempt
	accepted                // the dependency answered
	failed                  // a failure the call would retry
)

// verdictOf returns what an attempt that failed with err (or whose value
// IfValue rejected, if err is nil) counts as; done reports whether the call
// ends on err without retrying it (checked before any MaxRetriesIf limit).
// A server's request not to retry (a negative pushback) is a failure: it
// is pushback, the sign of a server shedding load.
func verdictOf(ctx interface{ Err() error }, err error, done bool) verdict {
	switch {
	case err == nil:
		return accepted
	case ctx.Err() != nil:
		return neither
	case !done:
		return failed
	}
	if permanent, pb := markers(err); !permanent && pb.refused() {
		return failed
	}
	return accepted
}
