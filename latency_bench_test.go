package retry_test

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// lognormalSamples returns n latencies drawn from a lognormal distribution
// of median m and shape σ = 1.
func lognormalSamples(r *rand.Rand, n int, m time.Duration) []time.Duration {
	ds := make([]time.Duration, n)
	for i := range ds {
		ds[i] = time.Duration(float64(m) * math.Exp(r.NormFloat64()))
	}
	return ds
}

func BenchmarkLatencyRecord(b *testing.B) {
	samples := lognormalSamples(rand.New(rand.NewPCG(1, 2)), 4096, 10*time.Millisecond)
	b.Run("one goroutine", func(b *testing.B) {
		l := retry.NewLatency()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			l.Record(samples[i&4095])
			i++
		}
	})
	b.Run("8 goroutines", func(b *testing.B) {
		l := retry.NewLatency()
		b.ReportAllocs()
		// RunParallel starts parallelism·GOMAXPROCS goroutines.
		b.SetParallelism((8 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		b.RunParallel(func(pb *testing.PB) {
			i := rand.IntN(4096)
			for pb.Next() {
				l.Record(samples[i&4095])
				i++
			}
		})
	})
}

func BenchmarkLatencyQuantile(b *testing.B) {
	l := retry.NewLatency()
	for _, d := range lognormalSamples(rand.New(rand.NewPCG(1, 2)), retry.LatRetained, 10*time.Millisecond) {
		l.Record(d)
	}
	b.Run("cached", func(b *testing.B) {
		e := retry.NewEstimate(l, 0.95)
		b.ReportAllocs()
		for b.Loop() {
			e.Get()
		}
	})
	b.Run("computed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l.QuantileNow(0.95)
		}
	})
}

// BenchmarkSeededDraw is the cost of one delay drawn from a seeded source,
// the path that takes the package's lock.
func BenchmarkSeededDraw(b *testing.B) {
	s := retry.Exponential(100 * time.Millisecond).Cap(2 * time.Second).FullJitter(rand.NewPCG(1, 2))
	drawDelays(b, s)
}
