package retry

import (
	"math/bits"
	"math/rand/v2"
	"sync"
)

// sourceMu serializes every draw from a caller's rand.Source. A rand.Source
// such as *rand.PCG is not safe for concurrent use, yet a Schedule built on
// one may be ranged by many goroutines at once, and one source may feed
// several schedules. One lock for all of them is the only arrangement that is
// race-free however sources are shared; it is uncontended in the common case,
// and the default (a nil source) never takes it.
var sourceMu sync.Mutex

// source draws random numbers for the jitter combinators. The zero value uses
// the runtime's goroutine-safe generator.
type source struct {
	src rand.Source // nil: math/rand/v2's top-level generator
}

// uint64 returns a uniformly distributed 64-bit number.
func (s source) uint64() uint64 {
	if s.src == nil {
		return rand.Uint64()
	}
	return s.locked()
}

// locked draws from the caller's source under sourceMu. The source is user
// code and may panic (a nil *rand.PCG does); the deferred unlock releases the
// lock then too, so a panic recovered further up cannot leave every other
// seeded schedule in the process waiting for it. The defer is open-coded and
// costs at most a nanosecond or two per draw (BenchmarkSeededDraw).
func (s source) locked() uint64 {
	sourceMu.Lock()
	defer sourceMu.Unlock()
	return s.src.Uint64()
}

// upTo returns a uniformly distributed number in [0, n]. n must not exceed
// math.MaxInt64, so n+1 cannot overflow. It uses Lemire's multiply-and-reject
// method, so the result is unbiased and almost always costs a single draw;
// the rare rejection is kept out of line.
func (s source) upTo(n uint64) uint64 {
	if n == 0 {
		return 0
	}
	hi, lo := bits.Mul64(s.uint64(), n+1)
	if lo < n+1 {
		return s.reject(n+1, hi, lo)
	}
	return hi
}

// reject finishes upTo when the first draw fell where it might be biased.
func (s source) reject(bound, hi, lo uint64) uint64 {
	threshold := -bound % bound
	for lo < threshold {
		hi, lo = bits.Mul64(s.uint64(), bound)
	}
	return hi
}

// float64 returns a uniformly distributed number in [0, 1).
func (s source) float64() float64 {
	return float64(s.uint64()>>11) / (1 << 53)
}
