package retry

import (
	"context"
	"testing"
)

// BenchmarkThrottle measures a Throttle's own work per attempt (asking it,
// then reporting an accept) on the real clock, from 1, 2 and 8 goroutines
// at once (b.SetParallelism, with the default GOMAXPROCS; run with
// -cpu 1,2,8 to vary GOMAXPROCS too). A healthy dependency: the
// probability stays 0.
func BenchmarkThrottle(b *testing.B) {
	for _, g := range []int{1, 2, 8} {
		b.Run("goroutines="+itoa(g), func(b *testing.B) {
			th := NewThrottle()
			b.ReportAllocs()
			b.SetParallelism(g)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					tk, ok := th.admit(nil)
					if ok {
						th.settle(tk, accepted)
					}
				}
			})
		})
	}
}

// BenchmarkBreaker is BenchmarkThrottle for a closed Breaker, each attempt
// a success.
func BenchmarkBreaker(b *testing.B) {
	for _, g := range []int{1, 2, 8} {
		b.Run("goroutines="+itoa(g), func(b *testing.B) {
			br := NewBreaker()
			b.ReportAllocs()
			b.SetParallelism(g)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					tk, _, ok := br.admit(nil)
					if ok {
						br.report(tk, accepted)
					}
				}
			})
		})
	}
}

// BenchmarkOverloadDo measures Do on the success path, on the real clock,
// with WithThrottle, WithBreaker, both, and neither, interleaved.
func BenchmarkOverloadDo(b *testing.B) {
	ctx := context.Background()
	succeed := func(context.Context) error { return nil }
	th, br := WithThrottle(NewThrottle()), WithBreaker(NewBreaker())
	for _, c := range []struct {
		name string
		opts []Option
	}{
		{"opt=none", nil},
		{"opt=WithThrottle", []Option{th}},
		{"opt=WithBreaker", []Option{br}},
		{"opt=both", []Option{th, br}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Do(ctx, benchSchedule, succeed, c.opts...)
			}
		})
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
