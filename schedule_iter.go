package retry

import (
	"iter"
	"math"
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
