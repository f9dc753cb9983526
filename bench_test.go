package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// The benchmarks compare Retry with a hand-written loop, the floor any
// retry helper is measured against: a ctx check before each attempt and one
// time.Timer reused between waits.

// handLoop retries fn with the exponential policy written out by hand.
func handLoop(ctx context.Context, base, limit time.Duration, attempts int, fn func(context.Context) error) error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	delay := base
	for i := 1; ; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := fn(ctx)
		if err == nil || i == attempts {
			return err
		}
		if timer == nil {
			timer = time.NewTimer(delay)
		} else {
			timer.Reset(delay)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		delay = min(2*delay, limit)
	}
}

// handLoopClock is handLoop on a Clock, for the fake-clock comparison.
func handLoopClock(ctx context.Context, c retry.Clock, base, limit time.Duration, attempts int, fn func(context.Context) error) error {
	delay := base
	for i := 1; ; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := fn(ctx)
		if err == nil || i == attempts {
			return err
		}
		if err := c.Sleep(ctx, delay); err != nil {
			return err
		}
		delay = min(2*delay, limit)
	}
}

var benchSchedule = retry.Exponential(100 * time.Millisecond).Cap(2 * time.Second).FullJitter(nil).Take(4)

func BenchmarkSuccess(b *testing.B) {
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	b.Run("impl=loop", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = handLoop(ctx, 100*time.Millisecond, 2*time.Second, 5, fn)
		}
	})
	b.Run("impl=retry", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = retry.Do(ctx, benchSchedule, fn)
		}
	})
	b.Run("impl=retry-generic", func(b *testing.B) {
		b.ReportAllocs()
		fn := func(context.Context) (int, error) { return 1, nil }
		for b.Loop() {
			_, _ = retry.Retry(ctx, benchSchedule, fn)
		}
	})
	b.Run("impl=retry-budget", func(b *testing.B) {
		b.ReportAllocs()
		budget := retry.NewBudget(0.1, 10)
		for b.Loop() {
			_ = retry.Do(ctx, benchSchedule, fn, retry.WithBudget(budget))
		}
	})
}

// failTwice returns an fn that fails twice, then succeeds, then starts over.
func failTwice() func(context.Context) error {
	calls := 0
	return func(context.Context) error {
		if calls++; calls%3 != 0 {
			return errAlloc
		}
		return nil
	}
}

// BenchmarkTwoFailures measures two retries per op: on the fake clock
// (Retry's own cost), and on the real clock with 1 ns delays, where the
// timer path runs but sleeping does not dominate.
func BenchmarkTwoFailures(b *testing.B) {
	ctx := context.Background()
	b.Run("clock=fake/impl=loop", func(b *testing.B) {
		b.ReportAllocs()
		clock := allocClock{}
		fn := failTwice()
		for b.Loop() {
			_ = handLoopClock(ctx, clock, time.Nanosecond, time.Nanosecond, 5, fn)
		}
	})
	b.Run("clock=fake/impl=retry", func(b *testing.B) {
		b.ReportAllocs()
		clock := allocClock{}
		fn := failTwice()
		s := retry.Exponential(time.Nanosecond).Cap(time.Nanosecond).Take(4)
		for b.Loop() {
			_ = retry.Do(ctx, s, fn, retry.WithClock(clock))
		}
	})
	b.Run("clock=fakeclock/impl=retry", func(b *testing.B) {
		b.ReportAllocs()
		fn := failTwice()
		s := retry.Exponential(time.Nanosecond).Cap(time.Nanosecond).Take(4)
		clock := retry.NewFakeClock(epoch)
		for i := 0; b.Loop(); i++ {
			if i%1024 == 0 { // keep the record of sleeps from growing without bound
				clock = retry.NewFakeClock(epoch)
			}
			_ = retry.Do(ctx, s, fn, retry.WithClock(clock))
		}
	})
	b.Run("clock=real/impl=loop", func(b *testing.B) {
		b.ReportAllocs()
		fn := failTwice()
		for b.Loop() {
			_ = handLoop(ctx, time.Nanosecond, time.Nanosecond, 5, fn)
		}
	})
	b.Run("clock=real/impl=retry", func(b *testing.B) {
		b.ReportAllocs()
		fn := failTwice()
		s := retry.Exponential(time.Nanosecond).Cap(time.Nanosecond).Take(4)
		for b.Loop() {
			_ = retry.Do(ctx, s, fn)
		}
	})
}

// BenchmarkScheduleValue is the cost of producing one delay of the
// recommended schedule.
func BenchmarkScheduleValue(b *testing.B) {
	s := retry.Exponential(100 * time.Millisecond).Cap(2 * time.Second).FullJitter(nil)
	drawDelays(b, s)
}

// drawDelays draws b.N delays from one run of s.
func drawDelays(b *testing.B, s retry.Schedule) {
	b.ReportAllocs()
	var sum time.Duration
	n := 0
	for d := range s {
		sum += d
		if n++; n == b.N {
			break
		}
	}
	if sum < 0 {
		b.Fatal("negative")
	}
}
