package retry

import (
	"slices"
	"strconv"
	"time"
)

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

// Quantile returns an infinite Schedule whose every delay is the current
// estimate of the q-quantile of l's latencies: Quantile(0.95) is the
// latency that 95% of the recent observations did not exceed (their
// nearest-rank 95th percentile, within 0.79%).
//
// Until l has recorded 100 observations, the Schedule yields the largest
// Duration, so that nothing is hedged or retried on a guess; bound the
// delays with Cap (which then sets the delay used while l warms up) and
// AtLeast:
//
//	lat.Quantile(0.95).AtLeast(5 * time.Millisecond).Cap(time.Second).Take(1)
//
// The estimate is computed at most once per 64 observations and shared by
// every run of the Schedule, in any goroutine; in between, a draw costs a
// few atomic loads. Like Constant's, the Schedule is one that Retry, Do and
// Hedge draw from without a yield function, with its combinators fused
// into it: a Hedge on the chain above allocates what one on
// Constant(d).Take(1) does. The estimate never exceeds about 18 minutes and is at
// least about 1 µs (see Latency).
//
// Quantile panics if l is nil or if q is NaN or outside (0, 1).
func (l *Latency) Quantile(q float64) Schedule {
	if l == nil {
		panic("retry: Quantile of a nil Latency")
	}
	if !(q > 0 && q < 1) {
		panic("retry: Quantile: q " + strconv.FormatFloat(q, 'g', -1, 64) + " is not in (0, 1)")
	}
	e := &estimate{l: l, q: q}
	e.d.Store(int64(maxDuration))
	// A plan's source, like Constant's: combinators fuse with it, and
	// Retry, Do and Hedge draw its delays in their flat loops.
	return sourceSchedule(sourceSpec{kind: srcQuantile, est: e})
}
