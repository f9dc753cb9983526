package bench_test

import (
	"context"
	"testing"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/seed-b8c8f69d/retry"
)

// BenchmarkLimiter compares the cost of taking a permit and releasing it
// with a latency sample, with retry.Limiter and with failsafe-go's
// adaptivelimiter (its direct AcquirePermit/TryAcquirePermit and Record,
// without an executor), in one run: sequential, and from GOMAXPROCS
// goroutines at once. Both limiters are pinned at 1000 (floor and ceiling),
// far above the concurrency the benchmark reaches, so no permit is refused
// (the parallel rounds fail if one is) and the figure is the cost of the
// bookkeeping alone: both still record every sample and update their
// estimates. docs/LIMITER.md reports the figures.
func BenchmarkLimiter(b *testing.B) {
	ctx := context.Background()
	ours := func() *retry.Limiter { return retry.NewLimiter(retry.LimiterMin(1000), retry.LimiterMax(1000)) }
	theirs := func() adaptivelimiter.AdaptiveLimiter[any] {
		return adaptivelimiter.NewBuilder[any]().WithLimits(1000, 1000, 1000).Build()
	}
	b.Run("retry/Acquire", func(b *testing.B) {
		l := ours()
		b.ReportAllocs()
		for b.Loop() {
			p, err := l.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			p.Success()
		}
	})
	b.Run("failsafe/AcquirePermit", func(b *testing.B) {
		l := theirs()
		b.ReportAllocs()
		for b.Loop() {
			p, err := l.AcquirePermit(ctx)
			if err != nil {
				b.Fatal(err)
			}
			p.Record()
		}
	})
	b.Run("retry/TryAcquire", func(b *testing.B) {
		l := ours()
		b.ReportAllocs()
		for b.Loop() {
			p, ok := l.TryAcquire()
			if !ok {
				b.Fatal("refused")
			}
			p.Success()
		}
	})
	b.Run("failsafe/TryAcquirePermit", func(b *testing.B) {
		l := theirs()
		b.ReportAllocs()
		for b.Loop() {
			p, ok := l.TryAcquirePermit()
			if !ok {
				b.Fatal("refused")
			}
			p.Record()
		}
	})
	b.Run("retry/parallel", func(b *testing.B) {
		l := ours()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p, ok := l.TryAcquire()
				if !ok {
					b.Error("refused")
					return
				}
				p.Success()
			}
		})
	})
	b.Run("failsafe/parallel", func(b *testing.B) {
		l := theirs()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p, ok := l.TryAcquirePermit()
				if !ok {
					b.Error("refused")
					return
				}
				p.Record()
			}
		})
	})
}
