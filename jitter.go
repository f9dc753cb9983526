package retry

import (
	"math/rand/v2"
	"time"
)

// DecorrelatedJitter returns the infinite Schedule of AWS's "decorrelated
// jitter": each delay is drawn uniformly from [base, 3·previous] and capped
// at limit, with base standing in for the delay before the first:
//
//	d₀ = min(limit, uniform[base, 3·base])
//	dᵢ = min(limit, uniform[base, 3·dᵢ₋₁])
//
// It never waits less than base and keeps clients apart without a separate
// jitter step. It grows more slowly than Exponential: below the limit, the
// mean of each delay is 1.5 times the mean of the one before plus base/2,
// and most runs grow much more slowly than the mean (from a base of 1 ms,
// the 16th delay averages 1.4 s with a median of 68 ms, where Exponential
// waits 33 s), so it takes more retries to reach long delays. Because it is
// capped inside the recurrence, it needs no Cap. src is used as in
// FullJitter.
//
// DecorrelatedJitter panics if base is not positive (each delay grows from
// the one before, so a base of 0 would stay 0 forever) or limit is less than
// base.
func DecorrelatedJitter(base, limit time.Duration, src rand.Source) Schedule {
	if base <= 0 {
		panic("retry: DecorrelatedJitter: base " + base.String() + " is not positive")
	}
	if limit < base {
		panic("retry: DecorrelatedJitter: limit " + limit.String() + " is less than base " + base.String())
	}
	return sourceSchedule(sourceSpec{kind: srcDecorrelated, base: base, limit: limit, src: source{src}})
}

// SmoothJitter returns the infinite Schedule of the smooth exponential jitter
// that Polly (.NET) adopted as its default ("decorrelated jitter V2"). With
// tᵢ = i + U[0,1) and f(t) = 2ᵗ·tanh(√(4t)), the i-th delay (from 0) is
//
//	(f(tᵢ) − f(tᵢ₋₁)) · median / 1.4, with f(t₋₁) = 0.
//
// The sum of the first k+1 delays is f(tₖ)·median/1.4: its median is close to
// median·2ᵏ (0.9·median for k = 0), the sum of the first n delays always stays
// below median·2ⁿ/1.4 ≈ 0.72·median·2ⁿ, and clients are spread evenly in time
// instead of bunching at the boundaries of exponential steps. It needs no Cap to stay spread out (a
// Cap would pile delays up at the limit); bound it with Take or Within. The
// values saturate at the largest Duration once f overflows. src is used as in
// FullJitter.
//
// SmoothJitter panics if median is negative.
func SmoothJitter(median time.Duration, src rand.Source) Schedule {
	mustNonNegative("SmoothJitter", "median", median)
	return sourceSchedule(sourceSpec{kind: srcSmooth, base: median, factor: float64(median) / 1.4, src: source{src}})
}
