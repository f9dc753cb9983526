package retry

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

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
