package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// BenchmarkThrottle measures a Throttle's own work per attempt (asking it,
// then reporting an accept) from 1, 2 and 8 goroutines at once
// (b.SetParallelism: goroutines per GOMAXPROCS; run with -cpu 1,2,8 to vary
// GOMAXPROCS too). A healthy dependency: the probability stays 0. On the
// real clock, reading the time is part of the work; with clock=frozen (a
// Clock whose Now returns a constant) it is not, which shows the cost of
// the counters alone. BenchmarkClockRead is the reading alone.
func BenchmarkThrottle(b *testing.B) {
	for _, clock := range []struct {
		name string
		c    retry.Clock
	}{{"real", nil}, {"frozen", frozenClock{epoch}}} {
		for _, g := range []int{1, 2, 8} {
			b.Run("clock="+clock.name+"/goroutines="+itoa(g), func(b *testing.B) {
				th := retry.NewThrottle(retry.ThrottleClock(clock.c))
				b.ReportAllocs()
				b.SetParallelism(g)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						retry.ThrottleAttempt(th)
					}
				})
			})
		}
	}
}

// BenchmarkClockRead is what the Throttle and the Breaker pay to read the
// real clock once.
func BenchmarkClockRead(b *testing.B) {
	b.ReportAllocs()
	var d time.Duration
	base := time.Now()
	for b.Loop() {
		d += time.Since(base)
	}
	_ = d
}

// frozenClock is a Clock whose time never moves.
type frozenClock struct{ t time.Time }

func (c frozenClock) Now() time.Time                                   { return c.t }
func (c frozenClock) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// BenchmarkBreaker is BenchmarkThrottle for a closed Breaker, each attempt
// a success.
func BenchmarkBreaker(b *testing.B) {
	for _, g := range []int{1, 2, 8} {
		b.Run("goroutines="+itoa(g), func(b *testing.B) {
			br := retry.NewBreaker()
			b.ReportAllocs()
			b.SetParallelism(g)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if p, err := br.Allow(); err == nil {
						p.Success()
					}
				}
			})
		})
	}
}

// BenchmarkOverloadDo measures Do on the success path, on the real clock,
// with WithThrottle, WithBreaker, both, WithLimiter, all three, and none.
// The three share one reading of the clock (the Limiter reads it again to
// time the attempt).
func BenchmarkOverloadDo(b *testing.B) {
	ctx := context.Background()
	succeed := func(context.Context) error { return nil }
	th, br := retry.WithThrottle(retry.NewThrottle()), retry.WithBreaker(retry.NewBreaker())
	li := retry.WithLimiter(retry.NewLimiter())
	for _, c := range []struct {
		name string
		opts []retry.Option
	}{
		{"opt=none", nil},
		{"opt=WithThrottle", []retry.Option{th}},
		{"opt=WithBreaker", []retry.Option{br}},
		{"opt=both", []retry.Option{th, br}},
		{"opt=WithLimiter", []retry.Option{li}},
		{"opt=all", []retry.Option{th, br, li}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = retry.Do(ctx, benchSchedule, succeed, c.opts...)
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
