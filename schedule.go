package retry

import (
	"iter"
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
	return func(yield func(time.Duration) bool) {
		for yield(d) {
		}
	}
}

// Linear returns the infinite Schedule base, 2·base, 3·base, …, saturating at
// the largest Duration.
//
// Linear panics if base is negative.
func Linear(base time.Duration) Schedule {
	mustNonNegative("Linear", "base", base)
	return func(yield func(time.Duration) bool) {
		d := base
		for yield(d) {
			d = addSat(d, base)
		}
	}
}

// Exponential returns the infinite Schedule base, 2·base, 4·base, …, that is
// base·2ⁱ for the i-th retry counted from 0, saturating at the largest
// Duration. Without a Cap, Exponential(100*time.Millisecond) waits 1.7 years
// before its 31st attempt; follow it with Cap.
//
// Exponential panics if base is negative.
func Exponential(base time.Duration) Schedule {
	mustNonNegative("Exponential", "base", base)
	return func(yield func(time.Duration) bool) {
		d := base
		for yield(d) {
			d = addSat(d, d)
		}
	}
}

// ExponentialFactor returns the infinite Schedule base·factorⁱ for the i-th
// retry counted from 0, rounded to the nearest nanosecond and saturating at
// the largest Duration. gRPC's connection backoff uses a factor of 1.6;
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
	return func(yield func(time.Duration) bool) {
		if base == 0 {
			for yield(0) {
			}
			return
		}
		f := float64(base)
		for yield(fromFloat(f)) {
			if f < float64(maxDuration) { // once saturated, stay there without touching +Inf
				f *= factor
			}
		}
	}
}

// Fibonacci returns the infinite Schedule base, base, 2·base, 3·base, 5·base,
// 8·base, …, saturating at the largest Duration. It grows more gently than
// Exponential (by about 1.618 per step).
//
// Fibonacci panics if base is negative.
func Fibonacci(base time.Duration) Schedule {
	mustNonNegative("Fibonacci", "base", base)
	return func(yield func(time.Duration) bool) {
		a, b := base, base
		for yield(a) {
			a, b = b, addSat(a, b)
		}
	}
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
	ds = slices.Clone(ds)
	return func(yield func(time.Duration) bool) {
		for _, d := range ds {
			if !yield(d) {
				return
			}
		}
	}
}
