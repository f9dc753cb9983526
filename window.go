package retry

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"time"
)

// The sliding window that Throttle and Breaker count in: two event counts
// over the last windowBuckets buckets of time, kept without a lock in
// stripes, so that goroutines on different processors mostly write to
// different cache lines.
//
// Each count of a bucket is one atomic word tagged with the bucket's tick
// (tick<<32 | count): a writer that finds an older tick in the word, or a
// count of 0, starts the bucket again from zero in the same
// compare-and-swap, so no goroutine
// ever has to clear the ring and no count from an earlier turn of it is
// ever read as current. Counts saturate at 2³²−1 per bucket and stripe.
// Ticks are compared modulo 2³², so a word left untouched for exactly a
// multiple of 2³² buckets would read as current: years for any window a
// client would use.

// windowBuckets is the number of buckets a window is cut into: the window
// slides in steps of a sixteenth of its length.
const windowBuckets = 16

// maxStripes bounds the stripes of a window: reading the current bucket
// reads one word of each.
const maxStripes = 16

// window counts two kinds of events (count 0 and count 1) over a sliding
// window. It is safe for concurrent use.
type window struct {
	origin  time.Time     // tick 0 starts here, on the owner's clock
	width   time.Duration // of a bucket, at least 1ns
	mask    uint32        // stripes − 1
	stripes []stripe
}

// stripe is one stripe's buckets, padded so that two stripes never share a
// cache line.
type stripe struct {
	cells [windowBuckets][2]atomic.Uint64
	_     [64]byte
}

// newWindow returns a window of length d starting at origin, with one
// stripe per processor (a power of 2, at most maxStripes).
func newWindow(d time.Duration, origin time.Time) window {
	n := min(runtime.GOMAXPROCS(0), maxStripes)
	n = 1 << bits.Len(uint(n-1)) // the next power of 2
	return window{origin: origin, width: max(d/windowBuckets, 1), mask: uint32(n - 1), stripes: make([]stripe, n)}
}

// monoBase is the origin of every window, and of a Limiter's time, on the
// real clock, so that a call's Throttle, Breaker and Limiter can share one
// reading of it. (Inside a
// testing/synctest bubble, time has no monotonic reading, and the windows
// count on the bubble's wall clock, which is just as steady.)
var monoBase = time.Now()

// origin returns the origin of a window on clock (nil: the real one).
func origin(clock Clock) time.Time {
	if clock == nil {
		return monoBase
	}
	return clock.Now()
}

// reading is one reading of the real clock, made when first needed and
// shared by a call's Throttle, Breaker and Limiter: on some machines a
// reading costs more than all the rest of their work.
type reading struct {
	d  time.Duration // since monoBase
	ok bool
}

// now returns the bucket that now falls in, on clock (nil: the real one,
// read through its monotonic clock only, which costs less than time.Now,
// and through r if not nil), and the time since the window's origin.
func (w *window) now(clock Clock, r *reading) (int64, time.Duration) {
	var d time.Duration
	switch {
	case clock != nil:
		d = clock.Now().Sub(w.origin) // saturates
	case r == nil:
		d = time.Since(monoBase)
	case r.ok:
		d = r.d
	default:
		d = time.Since(monoBase)
		r.d, r.ok = d, true
	}
	return w.at(d), d
}

// at returns the bucket that the time d after the origin falls in.
func (w *window) at(d time.Duration) int64 {
	if d < 0 {
		return int64((d+1)/w.width) - 1
	}
	return int64(d / w.width)
}

// stripe picks the stripe a goroutine writes to: at random, which keeps
// concurrent writers apart as well as a processor's number would, and the
// runtime's generator is per thread and lock-free.
func (w *window) stripe() uint32 {
	if w.mask == 0 {
		return 0 // one processor, one stripe: no draw
	}
	return rand.Uint32() & w.mask
}

// add adds one event of kind to bucket tick of stripe s. An event for a
// bucket that the stripe has already left behind is dropped.
func (w *window) add(tick int64, s uint32, kind int) {
	word := &w.stripes[s].cells[tick&(windowBuckets-1)][kind]
	tag := uint64(uint32(tick)) << 32
	for {
		old := word.Load()
		next := tag | 1
		switch ahead := int32(uint32(old>>32) - uint32(tick)); {
		case uint32(old) == 0:
			// Empty (never written, cleared, or all taken back): the tag
			// means nothing.
		case ahead > 0:
			return // a newer turn of the ring: too late to count
		case ahead == 0:
			if uint32(old) == math.MaxUint32 {
				return
			}
			next = old + 1
		}
		if word.CompareAndSwap(old, next) {
			return
		}
	}
}

// bucket returns the counts of bucket tick, all stripes together.
func (w *window) bucket(tick int64) (a, b uint64) {
	tag := uint32(tick)
	i := tick & (windowBuckets - 1)
	for s := range w.stripes {
		c := &w.stripes[s].cells[i]
		if x := c[0].Load(); uint32(x>>32) == tag {
			a += uint64(uint32(x))
		}
		if x := c[1].Load(); uint32(x>>32) == tag {
			b += uint64(uint32(x))
		}
	}
	return a, b
}

// sum returns the counts of buckets from to tick, both included, all
// stripes together; buckets more than windowBuckets−1 before tick are not
// in the window.
func (w *window) sum(from, tick int64) (a, b uint64) {
	for t := max(from, tick-(windowBuckets-1)); t <= tick; t++ {
		x, y := w.bucket(t)
		a += x
		b += y
	}
	return a, b
}

// clear forgets every count. Writers that race with it may leave a count
// or two behind.
func (w *window) clear() {
	for s := range w.stripes {
		for i := range w.stripes[s].cells {
			w.stripes[s].cells[i][0].Store(0)
			w.stripes[s].cells[i][1].Store(0)
		}
	}
}
