package retry

import (
	"sync/atomic"
	"time"
)

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
//
// A chain of this package's sources and combinators has no relay at all: it
// is one plan (plan.go). Relays serve the chains built on a Schedule written
// by hand, and every chain in the purego build.

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

// Each combinator's iterator below makes its relay and hands the schedule
// below a closure that does the relay's work in its body: a method value
// would add a call per delay, the method being too large to inline into its
// wrapper.

// clamp returns the iterator of s with every delay clamped to [lo, hi], for
// 0 ≤ lo ≤ hi, so a negative delay counts as 0: Cap, AtLeast, and Then's
// second part.
func clamp(s Schedule, lo, hi time.Duration) Schedule {
	return func(yield func(time.Duration) bool) {
		r := &relay{up: yield}
		defer r.end()
		s(func(d time.Duration) bool {
			r.open()
			return r.pass(min(max(d, lo), hi))
		})
	}
}

// jitterDelay is equal jitter of d ≥ 0 for a factor of 0 (uniform in
// [d/2, d]), and proportional jitter otherwise (uniform in
// [d−d·factor, d+d·factor], saturating).
func jitterDelay(d time.Duration, factor float64, src source) time.Duration {
	lo, hi := d/2, d // equal jitter
	if factor > 0 {
		spread := min(fromFloat(float64(d)*factor), d)
		lo, hi = d-spread, addSat(d, spread)
	}
	return lo + time.Duration(src.upTo(uint64(hi-lo)))
}

// jitter returns the iterator of s with every delay jittered: equal jitter
// for a factor of 0, proportional jitter otherwise. A negative delay counts
// as 0.
func jitter(s Schedule, factor float64, src source) Schedule {
	return func(yield func(time.Duration) bool) {
		r := &relay{up: yield}
		defer r.end()
		s(func(d time.Duration) bool {
			r.open()
			return r.pass(jitterDelay(max(d, 0), factor, src))
		})
	}
}

// full returns the iterator of s with full jitter: uniform in [0, d], a
// negative d counting as 0.
func full(s Schedule, src source) Schedule {
	return func(yield func(time.Duration) bool) {
		r := &relay{up: yield}
		defer r.end()
		s(func(d time.Duration) bool {
			r.open()
			return r.pass(time.Duration(src.upTo(uint64(max(d, 0)))))
		})
	}
}

// take returns the iterator of s's first n delays, for n > 0, a negative
// delay counting as 0.
func take(s Schedule, n int) Schedule {
	return func(yield func(time.Duration) bool) {
		r := &countRelay{relay: relay{up: yield}, left: n}
		defer r.end()
		s(func(d time.Duration) bool {
			r.open()
			r.left--
			if !r.pass(max(d, 0)) {
				return false
			}
			if r.left == 0 {
				return r.stop()
			}
			return true
		})
	}
}

// countRelay is Take's relay: the delays it may still pass on.
type countRelay struct {
	relay
	left int
}

// within returns the iterator of s's delays for as long as their sum stays
// within limit. A negative delay counts as 0, so it cannot widen the total.
func within(s Schedule, limit time.Duration) Schedule {
	return func(yield func(time.Duration) bool) {
		r := &sumRelay{relay: relay{up: yield}}
		defer r.end()
		s(func(d time.Duration) bool {
			r.open()
			d = max(d, 0)
			if d > limit-r.sum {
				return r.stop()
			}
			r.sum += d
			return r.pass(d)
		})
	}
}

// sumRelay is Within's relay: the sum of the delays passed on.
type sumRelay struct {
	relay
	sum time.Duration
}

// then returns the iterator of s's delays followed by next's, a negative
// delay counting as 0. next is ranged only if the iteration above still
// wants more once s has ended.
func then(s, next Schedule) Schedule {
	return func(yield func(time.Duration) bool) {
		if thenFirst(s, yield) {
			clamp(next, 0, maxDuration)(yield)
		}
	}
}

// thenFirst ranges s, the first part of a Then, and reports whether the
// iteration above wants more.
func thenFirst(s Schedule, yield func(time.Duration) bool) bool {
	r := &relay{up: yield}
	defer r.end()
	s(func(d time.Duration) bool {
		r.open()
		return r.pass(max(d, 0))
	})
	return r.state.Load() == yieldOpen
}
