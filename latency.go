package retry

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// The tracker's histogram: log-linear buckets, 64 to each power of two of
// nanoseconds, from 2¹⁰ ns (about 1 µs) up to 2⁴⁰ ns (about 18 minutes).
// Bucket i covers [lo, lo·(1+1/(64+i%64))) for its lower bound lo, so every
// duration in it lies within 1/128 of the bucket's representative.
//
// The histogram is kept per window of latWindow observations, in a ring of
// latWindows windows. Each atomic word holds three 14-bit bucket counters
// and, in its top 22 bits, the number of the window it counts (modulo 2²²).
// A recorder adds to a word of its window with a compare-and-swap; finding
// the word tagged with another window, it drops its observation if its own
// window is gone (the count of observations has moved latWindows windows
// past it), and otherwise starts the word afresh: there is no separate
// clearing, which a recorder descheduled at the wrong moment could make
// late. Readers count only the words tagged with the window they expect in
// each slot.
//
// A tag would be ambiguous once its word had been left alone for 2²¹
// windows or more, as the words of buckets nobody hits would be: stale
// counts taken for the current window's. So the first recorder of each
// window also retags one word of its slot, in turn (starting it afresh if
// its tag is older): every word is retagged at least once every
// latWindows·latWords = 1920 windows, and no tag is ever older than that.
const (
	latSubBits  = 6
	latSub      = 1 << latSubBits
	latMinExp   = 10
	latMaxExp   = 40
	latBuckets  = (latMaxExp - latMinExp) * latSub // 1920
	latMin      = time.Duration(1) << latMinExp
	latMax      = time.Duration(1)<<latMaxExp - 1
	latLanes    = 3 // bucket counters per word
	latLaneBits = 14
	latLaneMax  = 1<<latLaneBits - 1
	latTagShift = latLanes * latLaneBits
	latTagMask  = 1<<(64-latTagShift) - 1
	latWords    = latBuckets / latLanes
	latWindow   = 2048 // observations per window
	latWindows  = 3
	latWarmup   = 100 // observations before a quantile is estimated
	latRefresh  = 64  // observations between two estimates of a Quantile
	latRetained = (latWindows - 1) * latWindow
)

// A Latency tracks the recent latencies of a dependency, so that a delay can
// follow them: Quantile turns it into a Schedule (for Hedge, a delay that
// follows the observed p95), and the WithLatency option records the duration of
// every attempt of a Hedge, Retry or Do call in it. Record adds a duration
// measured elsewhere.
//
// # Windows
//
// It keeps a histogram of the most recent observations in a ring of three
// windows of 2048 observations each; when a window is full, the oldest one is
// dropped. So it holds the last 4096 to 6143 observations (all of them,
// before the first 4096), and after the latencies change, every observation
// it holds is from after the change once at most 6144 more have been
// recorded (6208 for a Quantile, whose estimate is refreshed every 64
// observations).
//
// # Precision
//
// Estimates are within 0.79% (1/128) of the nearest-rank quantile of the
// observations held: a duration is counted in one of 64 buckets per power of
// two, from about 1 µs to about 18 minutes, and durations outside that range
// count as its ends (a negative one as the shortest).
//
// # Concurrency
//
// A Latency takes 15 KiB and never grows. It is safe for concurrent use by
// any number of goroutines: every counter is atomic, recording takes no lock
// and allocates nothing, and an estimate made while others record counts
// some, but not necessarily all, of the observations being made. A recorder
// that is descheduled for a whole window's worth of other observations may
// find its window gone; its observation is then dropped. The zero Latency is
// not usable; call NewLatency.
type Latency struct {
	n atomic.Uint64 // observations recorded, ever
	_ [56]byte      // keeps n, which every Record writes, off the counters' cache lines

	// counts holds the histogram of window w in counts[w%latWindows].
	counts [latWindows][latWords]atomic.Uint64
}

// NewLatency returns an empty Latency.
func NewLatency() *Latency {
	return new(Latency)
}

// Record adds one observed duration. It takes no lock and allocates
// nothing: two atomic operations (three for one call in 2048), about 30 ns
// even with eight goroutines recording at once on two cores.
//
// Record panics if l is nil.
func (l *Latency) Record(d time.Duration) {
	i := uint(latBucket(d))
	n := l.n.Add(1) - 1
	w := n / latWindow
	slot := &l.counts[w%latWindows]
	if n%latWindow == 0 {
		l.add(&slot[w/latWindows%latWords], w, 0, 0) // retag a word in turn: see the histogram's comment
	}
	l.add(&slot[i/latLanes], w, latLaneBits*(i%latLanes), 1)
}

// add adds inc (0 or 1) to the counter at shift in word, for window w.
func (l *Latency) add(word *atomic.Uint64, w uint64, shift uint, inc uint64) {
	tag := w & latTagMask
	for {
		old := word.Load()
		var next uint64
		if old>>latTagShift == tag {
			if inc == 0 || old>>shift&latLaneMax == latLaneMax {
				return // nothing to add, or saturated: only possible with thousands of recorders stalled for a whole window
			}
			next = old + inc<<shift
		} else {
			if (l.n.Load()-1)/latWindow >= w+latWindows {
				return // our window is gone (the word may count a newer one)
			}
			next = tag<<latTagShift | inc<<shift // an older window's word: start it afresh
		}
		if word.CompareAndSwap(old, next) {
			return
		}
	}
}

// estimate is the shared state of one Quantile schedule: its last estimate
// and when it was made.
type estimate struct {
	l  *Latency
	q  float64
	at atomic.Uint64 // 1 + l.n when d was last computed; 0: never
	d  atomic.Int64  // the last estimate; the largest Duration until then
}

// get returns the estimate, computing it again once l has recorded
// latRefresh observations since the last time. One caller recomputes; the
// others meanwhile use the previous estimate (except for the first one,
// which all callers racing for it compute). A caller whose n is older than
// the last estimate's, having loaded it before another caller recomputed,
// uses that estimate too: the difference is then negative.
func (e *estimate) get() time.Duration {
	n := e.l.n.Load()
	if n < latWarmup {
		return maxDuration
	}
	if at := e.at.Load(); at == 0 {
		e.at.CompareAndSwap(0, n+1) // all who race for the first estimate make it
	} else if int64(n+1-at) < latRefresh || !e.at.CompareAndSwap(at, n+1) {
		return time.Duration(e.d.Load())
	}
	d, ok := e.l.quantile(e.q)
	if !ok {
		d = maxDuration
	}
	e.d.Store(int64(d))
	return d
}

// quantile returns the estimate of the q-quantile of the observations l
// holds: the representative of the bucket holding the observation of rank
// ⌈q·total⌉. It reports false if l holds fewer than latWarmup observations.
func (l *Latency) quantile(q float64) (time.Duration, bool) {
	var c [latBuckets]uint16
	total := l.snapshot(&c)
	if total < latWarmup {
		return 0, false
	}
	rank := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, n := range c {
		if seen += uint64(n); seen >= rank {
			return latValue(i), true
		}
	}
	panic("unreachable")
}

// snapshot copies into c the counts of the windows l holds, summed bucket by
// bucket, and returns their total. Records made while it runs may or may not
// be counted. A bucket's sum is at most latWindows·latLaneMax < 2¹⁶.
func (l *Latency) snapshot(c *[latBuckets]uint16) (total uint64) {
	n := l.n.Load()
	if n == 0 {
		return 0
	}
	cur := (n - 1) / latWindow
	for slot := range uint64(latWindows) {
		back := (cur + latWindows - slot) % latWindows
		if back > cur {
			continue // the window this slot would hold was never used
		}
		tag := (cur - back) & latTagMask
		for j := range l.counts[slot] {
			v := l.counts[slot][j].Load()
			if v>>latTagShift != tag {
				continue
			}
			for lane := range latLanes {
				k := uint16(v >> (latLaneBits * lane) & latLaneMax)
				c[j*latLanes+lane] += k
				total += uint64(k)
			}
		}
	}
	return total
}

// latBucket returns the index of the bucket that counts d: 64 buckets per
// power of two, so its upper bits are the power and its lower 6 bits the 6
// bits of d that follow d's leading 1.
func latBucket(d time.Duration) int {
	ns := uint64(min(max(d, latMin), latMax))
	e := bits.Len64(ns) - 1 // latMinExp ≤ e < latMaxExp
	sub := ns >> (e - latSubBits) & (latSub - 1)
	return (e-latMinExp)<<latSubBits | int(sub)
}

// latBounds returns the durations bucket i counts: [lo, hi).
func latBounds(i int) (lo, hi time.Duration) {
	e := i>>latSubBits + latMinExp
	step := time.Duration(1) << (e - latSubBits)
	lo = time.Duration(latSub+i&(latSub-1)) * step
	return lo, lo + step
}

// latValue returns the duration that stands for bucket i: the one whose
// largest relative error over [lo, hi) is smallest, 2·lo·hi/(lo+hi), which
// is within (hi−lo)/(hi+lo) ≤ 1/129 of every duration in the bucket; rounded
// to the nanosecond, within 1/128.
func latValue(i int) time.Duration {
	lo, hi := latBounds(i)
	l, h := float64(lo), float64(hi)
	return fromFloat(2 * l * h / (l + h))
}
