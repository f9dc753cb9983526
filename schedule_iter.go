package retry

import (
	"iter"
	"math"
	"sync"
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
// above. Ranging over a combinator would cost allocations every time a call
// starts retrying (the relay's closure, its state, and the compiler's
// loop-state variable), so relays are recycled through sync.Pools instead,
// each with its yield function bound once, when it is made. A relay is taken
// from its pool when the combinator's iterator is called and put back when
// the iterator returns; its step panics if a schedule below calls it after
// that, against the iterator contract, as a range loop would.

// relay is what every relay has: the yield function above it, nil while the
// relay is idle, and its own step, bound once.
type relay struct {
	up   func(time.Duration) bool
	step func(time.Duration) bool
}

// pass hands d to the yield function above.
func (r *relay) pass(d time.Duration) bool {
	if r.up == nil {
		panic("retry: a schedule called yield after it returned")
	}
	return r.up(d)
}

// clampRelay is Cap and AtLeast: min(max(d, lo), hi).
type clampRelay struct {
	relay
	lo, hi time.Duration
}

func (r *clampRelay) pass(d time.Duration) bool { return r.relay.pass(min(max(d, r.lo), r.hi)) }

var clampRelays = sync.Pool{New: func() any {
	r := new(clampRelay)
	r.step = r.pass
	return r
}}

// clamp returns the iterator of s with every delay clamped to [lo, hi].
func clamp(s Schedule, lo, hi time.Duration) Schedule {
	return func(yield func(time.Duration) bool) {
		r := clampRelays.Get().(*clampRelay)
		r.up, r.lo, r.hi = yield, lo, hi
		s(r.step)
		r.up = nil
		clampRelays.Put(r)
	}
}

// jitterRelay is EqualJitter and Jitter: it draws each delay from
// [d−spread, d+spread], where spread is d/2 below d for equal jitter and
// d·factor either side for proportional jitter.
type jitterRelay struct {
	relay
	factor float64 // 0: equal jitter
	src    source
}

func (r *jitterRelay) pass(d time.Duration) bool {
	lo, hi := d/2, d // equal jitter
	if r.factor > 0 {
		spread := min(fromFloat(float64(d)*r.factor), d)
		lo, hi = d-spread, addSat(d, spread)
	}
	return r.relay.pass(lo + time.Duration(r.src.upTo(uint64(hi-lo))))
}

var jitterRelays = sync.Pool{New: func() any {
	r := new(jitterRelay)
	r.step = r.pass
	return r
}}

// jitter returns the iterator of s with every delay jittered: equal jitter
// for a factor of 0, proportional jitter otherwise.
func jitter(s Schedule, factor float64, src source) Schedule {
	return func(yield func(time.Duration) bool) {
		r := jitterRelays.Get().(*jitterRelay)
		r.up, r.factor, r.src = yield, factor, src
		s(r.step)
		r.up, r.src = nil, source{}
		jitterRelays.Put(r)
	}
}

// fullRelay is FullJitter: uniform in [0, d]. It is a type of its own, the
// most used jitter, so that its step needs no branch on the kind of jitter.
type fullRelay struct {
	relay
	src source
}

var fullRelays = sync.Pool{New: func() any {
	r := new(fullRelay)
	// A closure rather than the method value r.pass: the method's body is
	// too large to inline into the method value's wrapper, and this saves a
	// call on every delay of the most used jitter.
	r.step = func(d time.Duration) bool {
		return r.relay.pass(time.Duration(r.src.upTo(uint64(d))))
	}
	return r
}}

// full returns the iterator of s with full jitter.
func full(s Schedule, src source) Schedule {
	return func(yield func(time.Duration) bool) {
		r := fullRelays.Get().(*fullRelay)
		r.up, r.src = yield, src
		s(r.step)
		r.up, r.src = nil, source{}
		fullRelays.Put(r)
	}
}

// countRelay is Take: it passes n delays on, then stops.
type countRelay struct {
	relay
	left int
}

func (r *countRelay) pass(d time.Duration) bool {
	if r.left == 0 { // only a schedule that ignores false gets here
		return false
	}
	r.left--
	return r.relay.pass(d) && r.left > 0
}

var countRelays = sync.Pool{New: func() any {
	r := new(countRelay)
	r.step = r.pass
	return r
}}

// sumRelay is Within: it passes delays on while their sum stays within
// limit.
type sumRelay struct {
	relay
	sum, limit time.Duration
	more       bool
}

func (r *sumRelay) pass(d time.Duration) bool {
	if !r.more || d > r.limit-r.sum {
		r.more = false
		return false
	}
	r.sum += d
	r.more = r.relay.pass(d)
	return r.more
}

var sumRelays = sync.Pool{New: func() any {
	r := new(sumRelay)
	r.step = r.pass
	return r
}}

// moreRelay is the first part of Then: it passes delays on and remembers
// whether the iteration above wants more.
type moreRelay struct {
	relay
	more bool
}

func (r *moreRelay) pass(d time.Duration) bool {
	if !r.more {
		return false
	}
	r.more = r.relay.pass(d)
	return r.more
}

var moreRelays = sync.Pool{New: func() any {
	r := new(moreRelay)
	r.step = r.pass
	return r
}}
