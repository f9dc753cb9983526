package retry

import (
	"iter"
	"math"
	"slices"
	"strconv"
	"time"
)

// A Schedule is the sequence of delays to wait before each retry, in order:
// the first value is the wait between the first and the second attempt. When
// the sequence ends, the retries end, so a Schedule with n values allows at
// most n+1 attempts.
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
// A Schedule written by hand must keep the iterator contract: never call
// yield after it returned false, nor after the Schedule returned. The
// yield functions of this package's combinators and of Retry are valid for
// one run only, and panic with a "retry: " message when called again after
// returning false or after their run ended, whichever goroutine calls them;
// such a call has no effect on any other run or Retry call.
//
// Schedules are built from a source (Constant, Linear, Exponential,
// ExponentialFactor, Fibonacci, Delays, DecorrelatedJitter, SmoothJitter, or
// Parse) and refined by methods that each return a new Schedule:
//
//	retry.Exponential(100*time.Millisecond).Cap(2*time.Second).FullJitter(nil).Take(5)
//
// The methods apply in the order written: Cap then FullJitter draws below the
// cap, while FullJitter then Cap draws first and clamps afterwards, piling
// delays up at the cap. Every source but Delays is infinite; Take and Within
// make a Schedule finite.
type Schedule iter.Seq[time.Duration]

// Constant returns the infinite Schedule d, d, d, …
//
// Constant panics if d is negative. A zero d retries without waiting.
func Constant(d time.Duration) Schedule {
	mustNonNegative("Constant", "delay", d)
	return sourceSchedule(sourceSpec{kind: srcConstant, base: d})
}

// Linear returns the infinite Schedule base, 2·base, 3·base, …, saturating at
// the largest Duration.
//
// Linear panics if base is negative.
func Linear(base time.Duration) Schedule {
	mustNonNegative("Linear", "base", base)
	return sourceSchedule(sourceSpec{kind: srcLinear, base: base})
}

// Exponential returns the infinite Schedule base, 2·base, 4·base, …, that is
// base·2ⁱ for the i-th retry counted from 0, saturating at the largest
// Duration. Without a Cap, Exponential(100*time.Millisecond) waits 1.7 years
// before its 31st attempt; follow it with Cap.
//
// Exponential panics if base is negative.
func Exponential(base time.Duration) Schedule {
	mustNonNegative("Exponential", "base", base)
	return sourceSchedule(sourceSpec{kind: srcExponential, base: base})
}

// ExponentialFactor returns the infinite Schedule base·factorⁱ for the i-th
// retry counted from 0, rounded to the nearest nanosecond (halfway cases away
// from zero) and saturating at the largest Duration: the first delay is base
// itself. gRPC's connection backoff uses a factor of 1.6;
// ExponentialFactor(base, 2) equals Exponential(base).
//
// ExponentialFactor panics if base is negative or factor is NaN or less
// than 1. A factor of +Inf jumps to the largest Duration after the first
// delay.
func ExponentialFactor(base time.Duration, factor float64) Schedule {
	mustNonNegative("ExponentialFactor", "base", base)
	if !(factor >= 1) {
		panic("retry: ExponentialFactor: factor " + strconv.FormatFloat(factor, 'g', -1, 64) + " is not at least 1")
	}
	// The exact delay is kept as the sum hi+lo of two float64s, about 106
	// bits: base exactly (a float64 alone rounds bases above 2⁵³ ns), and
	// each product by factor off by about 2⁻¹⁰⁵ of the delay, so the
	// rounding to nanoseconds is right, where a float64 product drifts by up
	// to microseconds over a long run. See planIter.draw.
	return sourceSchedule(sourceSpec{kind: srcFactor, base: base, factor: factor})
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

// Fibonacci returns the infinite Schedule base, base, 2·base, 3·base, 5·base,
// 8·base, …, saturating at the largest Duration. It grows more gently than
// Exponential (by about 1.618 per step).
//
// Fibonacci panics if base is negative.
func Fibonacci(base time.Duration) Schedule {
	mustNonNegative("Fibonacci", "base", base)
	return sourceSchedule(sourceSpec{kind: srcFibonacci, base: base})
}

// Delays returns the finite Schedule made of exactly ds, in order; with no
// arguments it is empty, so Retry makes a single attempt. Delays copies ds, so
// later changes to the caller's slice do not change the Schedule.
//
// Delays panics if any delay is negative.
func Delays(ds ...time.Duration) Schedule {
	for _, d := range ds {
		mustNonNegative("Delays", "delay", d)
	}
	return sourceSchedule(sourceSpec{kind: srcDelays, ds: slices.Clone(ds)})
}
