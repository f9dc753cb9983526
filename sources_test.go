package retry

import (
	"context"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stretchr/testify/assert"
)

// TestSourcesAtTheirLimits: the sources with arguments at the ends of their
// ranges stay within their documented bounds and saturate.
func TestSourcesAtTheirLimits(t *testing.T) {
	t.Run("Linear saturates", func(t *testing.T) {
		assert.Equal(t, []time.Duration{maxDuration, maxDuration, maxDuration}, first(Linear(maxDuration), 3))
		ds := first(Linear(maxDuration/3+1), 4)
		assert.Equal(t, []time.Duration{maxDuration/3 + 1, 2 * (maxDuration/3 + 1), maxDuration, maxDuration}, ds)
		assert.Equal(t, []time.Duration{0, 0, 0}, first(Linear(0), 3))
	})
	t.Run("Fibonacci saturates", func(t *testing.T) {
		assert.Equal(t, []time.Duration{maxDuration, maxDuration, maxDuration}, first(Fibonacci(maxDuration), 3))
		ds := first(Fibonacci(1), 100)
		assert.Equal(t, time.Duration(7540113804746346429), ds[91]) // F(92), the largest that fits
		assert.Equal(t, maxDuration, ds[92])
		assert.Equal(t, maxDuration, ds[99])
	})
	t.Run("ExponentialFactor with a factor next to 1", func(t *testing.T) {
		f := math.Nextafter(1, 2) // 1+2⁻⁵²
		ds := first(ExponentialFactor(maxDuration/2, f), 3)
		assert.Equal(t, []time.Duration{maxDuration / 2, maxDuration/2 + 1024, maxDuration/2 + 2048}, ds)
		assert.Equal(t, []time.Duration{time.Hour, time.Hour, time.Hour}, first(ExponentialFactor(time.Hour, 1+1e-16), 3))
	})
	t.Run("DecorrelatedJitter", func(t *testing.T) {
		src := rand.NewPCG(5, 6)
		for _, tc := range []struct{ base, limit time.Duration }{
			{1, 1}, {1, maxDuration}, {maxDuration, maxDuration}, {maxDuration / 3, maxDuration}, {time.Nanosecond, 2},
		} {
			prev := tc.base
			for i, d := range first(DecorrelatedJitter(tc.base, tc.limit, src), 10_000) {
				hi := min(tc.limit, mulSat(prev, 3))
				if d < tc.base || d > hi {
					t.Fatalf("DecorrelatedJitter(%d, %d): delay %d is %d, outside [%d, %d]", tc.base, tc.limit, i, d, tc.base, hi)
				}
				prev = d
			}
		}
	})
	t.Run("SmoothJitter", func(t *testing.T) {
		src := rand.NewPCG(7, 8)
		for _, median := range []time.Duration{0, 1, 2, time.Hour, maxDuration / 2, maxDuration} {
			ds := first(SmoothJitter(median, src), 2000)
			for i, d := range ds {
				if d < 0 {
					t.Fatalf("SmoothJitter(%d): delay %d is %d", median, i, d)
				}
			}
			if median > 0 {
				assert.Equal(t, maxDuration, ds[len(ds)-1], "SmoothJitter(%d) saturates", median)
			}
		}
	})
}

// exactPowers returns the first n values of base·factorⁱ rounded to the
// nearest nanosecond, halfway cases up, and saturating at the largest
// Duration, computed with 4000-bit floats: exact for the first 70 or so
// values, and far more precise than a rounding to nanoseconds needs after.
func exactPowers(base time.Duration, factor float64, n int) []time.Duration {
	const prec = 4000
	out := make([]time.Duration, 0, n)
	v := new(big.Float).SetPrec(prec).SetInt64(int64(base))
	half := new(big.Float).SetPrec(prec).SetFloat64(0.5)
	limit := new(big.Int).SetInt64(math.MaxInt64)
	saturated := false
	for range n {
		if !saturated {
			z, _ := new(big.Float).SetPrec(prec).Add(v, half).Int(nil) // floor, the value being positive
			if z.Cmp(limit) >= 0 {
				saturated = true
			} else {
				out = append(out, time.Duration(z.Int64()))
				if math.IsInf(factor, 1) {
					saturated = base > 0
				} else {
					v.Mul(v, new(big.Float).SetPrec(prec).SetFloat64(factor))
				}
				continue
			}
		}
		out = append(out, maxDuration)
	}
	return out
}

// TestExponentialFactorIsExact: ExponentialFactor's delays are base·factorⁱ
// rounded to the nearest nanosecond, as its doc says. A float64 product
// drifted from the exact value by up to microseconds over a long run, and
// rounded bases above 2⁵³ ns: ExponentialFactor(math.MaxInt64/2, 2.1)
// started at MaxInt64/2+1.
func TestExponentialFactorIsExact(t *testing.T) {
	t.Run("the first delay is base", func(t *testing.T) {
		for _, base := range []time.Duration{1, 3, 1<<53 + 1, math.MaxInt64 / 2, math.MaxInt64 - 1, maxDuration} {
			for _, f := range []float64{1, 1.6, 2, 2.1, math.Inf(1)} {
				assert.Equal(t, base, first(ExponentialFactor(base, f), 1)[0], "base %d, factor %v", base, f)
			}
		}
	})
	t.Run("a factor of 2 is Exponential", func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for range 1000 {
			base := time.Duration(r.Int64N(math.MaxInt64)) >> r.IntN(63)
			assert.Equal(t, first(Exponential(base), 70), first(ExponentialFactor(base, 2), 70), "base %d", base)
		}
	})
	t.Run("a factor of 1 keeps base", func(t *testing.T) {
		for _, base := range []time.Duration{1, 1<<53 + 1, maxDuration - 1, maxDuration} {
			assert.Equal(t, []time.Duration{base, base, base}, first(ExponentialFactor(base, 1), 3))
		}
	})
	t.Run("halfway cases round up", func(t *testing.T) {
		// 1, 1.5, 2.25, 3.375, 5.0625, 7.59375, 11.390625
		assert.Equal(t, []time.Duration{1, 2, 2, 3, 5, 8, 11}, first(ExponentialFactor(1, 1.5), 7))
		// 3·2⁵⁹·(1+2⁻³⁰)² ends in ·5 exactly.
		base := time.Duration(3) << 59
		want := exactPowers(base, 1+1.0/(1<<30), 3)
		assert.Equal(t, want, first(ExponentialFactor(base, 1+1.0/(1<<30)), 3))
	})
	t.Run("against exact arithmetic", func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		special := []float64{1, 1.5, 1.6, 2, 3, 10, 1.1, 1e300, math.Inf(1), math.Nextafter(1, 2), 1 + 1e-9, 1 + 1e-16}
		for c := range 2000 {
			base := time.Duration(math.Exp2(r.Float64() * 63))
			if c%4 == 0 {
				base = time.Duration(r.Int64N(1000) + 1)
			}
			var factor float64
			switch c % 5 {
			case 0:
				factor = special[r.IntN(len(special))]
			case 1:
				factor = 1 + math.Exp2(-r.Float64()*52)
			default:
				factor = 1 + r.Float64()*3
			}
			want := exactPowers(base, factor, 100)
			require.Equal(t, want, first(ExponentialFactor(base, factor), 100), "base %d, factor %v", base, factor)
		}
	})
	t.Run("gRPC's 1.6 over a long run", func(t *testing.T) {
		base := 100 * time.Millisecond
		assert.Equal(t, exactPowers(base, 1.6, 200), first(ExponentialFactor(base, 1.6), 200))
	})
	t.Run("Retry waits the same", func(t *testing.T) {
		for _, tc := range []struct {
			base   time.Duration
			factor float64
		}{{100 * time.Millisecond, 1.6}, {3, 1.1}, {1<<53 + 1, 2}, {maxDuration / 2, 2.1}} {
			clock := NewFakeClock(time.Time{})
			err := Do(t.Context(), ExponentialFactor(tc.base, tc.factor).Take(100), func(context.Context) error { return errBoom },
				WithClock(clock))
			require.ErrorIs(t, err, ErrExhausted)
			assert.Equal(t, exactPowers(tc.base, tc.factor, 100), clock.Sleeps(), "base %d, factor %v", tc.base, tc.factor)
		}
	})
}
