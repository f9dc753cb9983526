package retry

import (
	"iter"
	"math"
	"sync/atomic"
	"time"
)

// maxDuration is the largest Duration. All schedule arithmetic saturates
// there instead of wrapping around to negative values.
const maxDuration = time.Duration(math.MaxInt64)

// Seq returns s as an iter.Seq, for slices.Collect and other functions that
// take one. It is the same function: ranging over the result is a fresh run of
// s, exactly like ranging over s. A nil s gives a nil Seq.
func (s Schedule) Seq() iter.Seq[time.Duration] {
	return iter.Seq[time.Duration](s)
}

// addSat returns a+b for non-negative a and b, saturating at maxDuration.
func addSat(a, b time.Duration) time.Duration {
	if a > maxDuration-b {
		return maxDuration
	}
	return a + b
}

// mulSat returns d·n for non-negative d and n, saturating at maxDuration.
func mulSat(d time.Duration, n int64) time.Duration {
	if d == 0 || n == 0 {
		return 0
	}
	if d > maxDuration/time.Duration(n) {
		return maxDuration
	}
	return d * time.Duration(n)
}

// fromFloat converts a non-negative number of nanoseconds to a Duration,
// rounding to the nearest nanosecond and saturating at maxDuration. NaN and
// negative values give 0; callers never produce them, but a Duration must not
// depend on the platform's float-to-int conversion of out-of-range values.
func fromFloat(ns float64) time.Duration {
	switch {
	case !(ns > 0): // also NaN
		return 0
	case ns >= float64(maxDuration): // float64(maxDuration) is 2⁶³, one past the largest Duration
		return maxDuration
	}
	return time.Duration(math.Round(ns))
}

// mustNonNegative panics with a retry: message when d is negative.
func mustNonNegative(fn, arg string, d time.Duration) {
	if d < 0 {
		panic("retry: " + fn + ": negative " + arg + " " + d.String())
	}
}

// mustSchedule panics with a retry: message when s is nil.
func mustSchedule(fn string, s Schedule) {
	if s == nil {
		panic("retry: " + fn + " of a nil Schedule")
	}
}

// The combinators hand the schedule below them a yield function of their
// own: a relay that passes each delay on, changed, to the yield function
// above. A relay is made for one run of its combinator and never reused, so
// a schedule that keeps the yield function it was given and calls it later,
// against the iterator contract, reaches only the dead relay of its own run,
// never another run's or another call's: that relay panics before touching
// anything but its atomic state, which is all a call from another goroutine
// reads. Each relay costs two small allocations per run: the relay and its
// bound step.

// The state of a relay, or of the retry loop's yield function.
const (
	yieldOpen    uint32 = iota // the run is on and yield has never returned false
	yieldStopped               // yield returned false
	yieldEnded                 // the run is over
)

// The panics of a yield function called against the iterator contract.
const (
	panicAfterFalse = "retry: a schedule called yield again after it returned false"
	panicAfterEnd   = "retry: a schedule called yield after its run ended"
)

// checkYield panics if a yield function in state s may not be called.
func checkYield(s uint32) {
	switch s {
	case yieldStopped:
		panic(panicAfterFalse)
	case yieldEnded:
		panic(panicAfterEnd)
	}
}

// relay is what every relay has: the yield function above it and its state.
type relay struct {
	state atomic.Uint32
	up    func(time.Duration) bool
}

// open panics unless the relay's run is on and it never returned false.
func (r *relay) open() {
	if s := r.state.Load(); s != yieldOpen {
		checkYield(s)
	}
}

// pass hands d to the yield function above, and reports its answer.
func (r *relay) pass(d time.Duration) bool {
	if !r.up(d) {
		r.state.Store(yieldStopped)
		return false
	}
	return true
}

// stop records that the relay returned false of its own accord.
func (r *relay) stop() bool {
	r.state.Store(yieldStopped)
	return false
}

// end marks the relay's run as over: any later call of its step panics.
func (r *relay) end() {
	r.state.Store(yieldEnded)
}

// clampRelay is Cap and AtLeast, and Then's second part: min(max(d, lo), hi)
// with lo ≥ 0, so a negative delay counts as 0.
type clampRelay struct {
	relay
	lo, hi time.Duration
}

func (r *clampRelay) step(d time.Duration) bool {
	r.open()
	return r.pass(min(max(d, r.lo), r.hi))
}

// clamp returns the iterator of s with every delay clamped to [lo, hi], for
// 0 ≤ lo ≤ hi.
func clamp(s Schedule, lo, hi time.Duration) Schedule {
	return func(yield func(time.Duration) bool) {
		r := &clampRelay{relay: relay{up: yield}, lo: lo, hi: hi}
		defer r.end()
		s(r.step)
	}
}

// jitterRelay is EqualJitter and Jitter: it draws each delay from
// [d−spread, d+spread], where spread is d/2 below d for equal jitter and
// d·factor either side for proportional jitter. A negative d counts as 0.
type jitterRelay struct {
	relay
	factor float64 // 0: equal jitter
	src    source
}

func (r *jitterRelay) step(d time.Duration) bool {
	r.open()
	return r.pass(jitterDelay(max(d, 0), r.factor, r.src))
}

// jitterDelay is equal jitter of d ≥ 0 for a factor of 0, and proportional
// jitter otherwise.
func jitterDelay(d time.Duration, factor float64, src source) time.Duration {
	lo, hi := d/2, d // equal jitter
	if factor > 0 {
		spread := min(fromFloat(float64(d)*factor), d)
		lo, hi = d-spread, addSat(d, spread)
	}
	return lo + time.Duration(src.upTo(uint64(hi-lo)))
}

// jitter returns the iterator of s with every delay jittered: equal jitter
// for a factor of 0, proportional jitter otherwise.
func jitter(s Schedule, factor float64, src source) Schedule {
	return func(yield func(time.Duration) bool) {
		r := &jitterRelay{relay: relay{up: yield}, factor: factor, src: src}
		defer r.end()
		s(r.step)
	}
}

// fullRelay is FullJitter: uniform in [0, d], a negative d counting as 0.
type fullRelay struct {
	relay
	src source
}

func (r *fullRelay) step(d time.Duration) bool {
	r.open()
	return r.pass(time.Duration(r.src.upTo(uint64(max(d, 0)))))
}

// full returns the iterator of s with full jitter.
func full(s Schedule, src source) Schedule {
	return func(yield func(time.Duration) bool) {
		r := &fullRelay{relay: relay{up: yield}, src: src}
		defer r.end()
		s(r.step)
	}
}

// countRelay is Take: it passes n delays on, then stops.
type countRelay struct {
	relay
	left int
}

func (r *countRelay) step(d time.Duration) bool {
	r.open()
	r.left--
	if !r.pass(max(d, 0)) {
		return false
	}
	if r.left == 0 {
		return r.stop()
	}
	return true
}

// sumRelay is Within: it passes delays on while their sum stays within
// limit. A negative delay counts as 0, so it cannot widen the total.
type sumRelay struct {
	relay
	sum, limit time.Duration
}

func (r *sumRelay) step(d time.Duration) bool {
	r.open()
	d = max(d, 0)
	if d > r.limit-r.sum {
		return r.stop()
	}
	r.sum += d
	return r.pass(d)
}

// moreRelay is the first part of Then: it passes delays on (a negative one
// as 0) and so records, in its state, whether the iteration above wants
// more.
type moreRelay struct {
	relay
}

func (r *moreRelay) step(d time.Duration) bool {
	r.open()
	return r.pass(max(d, 0))
}
