package retry_test

import (
	"context"
	"fmt"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

func ExampleLatency() {
	lat := retry.NewLatency()
	// Hedge after the observed 95th percentile, kept between 5 ms and 1 s.
	hedgeAfter := lat.Quantile(0.95).AtLeast(5 * time.Millisecond).Cap(time.Second).Take(1)
	printDelays(hedgeAfter) // no observations yet: the cap

	for i := range 1000 {
		lat.Record(time.Duration(i+1) * 100 * time.Microsecond) // 0.1 ms, 0.2 ms, …, 100 ms
	}
	for d := range hedgeAfter {
		fmt.Println(d.Round(time.Millisecond)) // within 0.79% of the exact 95 ms
	}
	// Output:
	// [1s]
	// 95ms
}

func ExampleLatency_Record() {
	lat := retry.NewLatency()
	for range 100 {
		lat.Record(20 * time.Millisecond)
	}
	for d := range lat.Quantile(0.5).Take(1) {
		fmt.Println(d.Round(time.Millisecond))
	}
	// Output: 20ms
}

func ExampleLatency_Quantile() {
	lat := retry.NewLatency()
	p99 := lat.Quantile(0.99)
	for i := range 200 {
		lat.Record(time.Duration(i+1) * time.Millisecond) // 1 ms … 200 ms
	}
	// Every delay is the estimate at the time it is drawn.
	for d := range p99.Take(2) {
		fmt.Println(d.Round(time.Millisecond))
	}
	// Output:
	// 198ms
	// 198ms
}

func ExampleWithLatency() {
	lat := retry.NewLatency()
	clock := retry.NewFakeClock(epoch)
	call := func(ctx context.Context) error {
		return clock.Sleep(ctx, 30*time.Millisecond) // an attempt that takes 30 ms
	}
	for range 100 {
		_ = retry.Do(context.Background(), policy, call, retry.WithLatency(lat), retry.WithClock(clock))
	}
	for d := range lat.Quantile(0.5).Take(1) {
		fmt.Println(d.Round(time.Millisecond))
	}
	// Output: 30ms
}
