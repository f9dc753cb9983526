package retry

import (
	"context"
	"testing"
	"time"
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
		c    Clock
	}{{"real", nil}, {"frozen", frozenClock{epoch}}} {
		for _, g := range []int{1, 2, 8} {
			b.Run("clock="+clock.name+"/goroutines="+itoa(g), func(b *testing.B) {
				th := NewThrottle(ThrottleClock(clock.c))
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
}

// BenchmarkClockRead is what the Throttle and the Breaker pay to read the
// real clock once.
func BenchmarkClockRead(b *testing.B) {
	b.ReportAllocs()
	var d time.Duration
	for b.Loop() {
		d += time.Since(monoBase)
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
