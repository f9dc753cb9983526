package retry

import (
	"iter"
	"math"
	"time"
)

// A Schedule is the sequence of delays to wait before each retry, in order:
// the first value is the wait between the first and the second attempt. When
// the sequence ends, the retries end, so a Schedule with n values allows at
// most n+1 attempts.
//
// # Values
//
// A Schedule is a value, not a state machine. Every range over it is a fresh
// run that starts from the first delay, so one Schedule can be kept in a
// package variable and ranged by any number of goroutines at once. All the
// sources and combinators of this package keep the state of a run to that
// run and never reuse it for another; a schedule built on a caller's
// rand.Source serializes its draws (see FullJitter).
//
// Delays are never negative: the sources of this package never yield a
// negative delay, and every combinator treats a negative delay from a
// Schedule written by hand as 0, as Retry does. All arithmetic saturates at
// the largest Duration (about 292 years) instead of wrapping around, whatever
// the number of values taken and the chain of combinators.
//
// # Building
//
// Schedules are built from a source (Constant, Linear, Exponential,
// ExponentialFactor, Fibonacci, Delays, DecorrelatedJitter, SmoothJitter, or
// Parse) and refined by methods that each return a new Schedule, applied in
// the order written:
//
//	retry.Exponential(100*time.Millisecond).Cap(2*time.Second).FullJitter(nil).Take(5)
//
// Cap then FullJitter draws below the cap, while FullJitter then Cap draws
// first and clamps afterwards, piling delays up at the cap. Every source but
// Delays is infinite; Take and Within make a Schedule finite.
//
// # Schedules written by hand
//
// A Schedule written by hand must keep the iterator contract: never call
// yield after it returned false, nor after the Schedule returned. The yield
// functions of this package's combinators and of Retry are valid for one run
// only, and panic with a "retry: " message when called again after returning
// false or after their run ended, whichever goroutine calls them; such a call
// has no effect on any other run or Retry call.
type Schedule iter.Seq[time.Duration]

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

// mulSum returns (hi+lo)·f as a normalized sum of two float64s, for
// 0 < hi ≤ 2⁶³, |lo| ≤ ulp(hi)/2 and 1 ≤ f ≤ +Inf. A product of 2⁶⁴ or more
// (+Inf included) is returned as hi alone: roundSum saturates it anyway, and
// the error terms of an infinite product would be NaN.
func mulSum(hi, lo, f float64) (float64, float64) {
	p := hi * f
	if !(p < 1<<64) {
		return p, 0
	}
	e := math.FMA(hi, f, -p) + lo*f // hi·f = p+FMA(hi, f, −p) exactly
	s := p + e
	return s, e - (s - p)
}

// roundSum returns hi+lo, as made by mulSum, rounded to the nearest
// nanosecond (halfway cases up) and saturating at the largest Duration.
func roundSum(hi, lo float64) time.Duration {
	if !(hi <= 1<<63) {
		return maxDuration
	}
	r := math.Round(hi)                    // an integer up to 2⁶³, exact in a float64
	adj := math.Floor((hi - r) + lo + 0.5) // the rest, rounded: an integer of a few thousand at most
	if r == 1<<63 {
		if adj >= 0 {
			return maxDuration
		}
		return maxDuration - time.Duration(-adj) + 1
	}
	n := time.Duration(r)
	if adj > 0 && n > maxDuration-time.Duration(adj) {
		return maxDuration
	}
	return max(n+time.Duration(adj), 0)
}
