package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// BenchmarkHedge measures what Hedge adds to a call whose first attempt
// succeeds before the first delay: the bare call is the floor.
func BenchmarkHedge(b *testing.B) {
	ctx := context.Background()
	ok := func(context.Context) (int, error) { return 1, nil }
	b.Run("impl=bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ok(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=handoff", func(b *testing.B) {
		// The least a call of fn on a goroutine of its own costs: the
		// goroutine, and a channel hand-off of its result.
		b.ReportAllocs()
		for b.Loop() {
			ch := make(chan int, 1)
			run := func() { v, _ := ok(ctx); ch <- v }
			go run()
			<-ch
		}
	})
	b.Run("impl=floor", func(b *testing.B) {
		// What any Hedge whose attempts run on goroutines of their own,
		// in a context that reports why it was cancelled, pays: that
		// context, a goroutine and a channel hand-off, a timer armed (one
		// that calls a function: a channel timer costs two allocations
		// more) and stopped, and the context cancelled.
		b.ReportAllocs()
		for b.Loop() {
			actx, cancel := context.WithCancelCause(ctx)
			wake := make(chan int, 2)
			run := func() { v, _ := ok(actx); wake <- v }
			go run()
			t := time.AfterFunc(time.Second, func() { wake <- 0 })
			<-wake
			t.Stop()
			cancel(retry.ErrHedgeLost)
		}
	})
	b.Run("impl=hedge", func(b *testing.B) {
		s := retry.Constant(time.Second).Take(2)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := retry.Hedge(ctx, s, ok); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=hedge-p95", func(b *testing.B) {
		// The adaptive schedule of the README, with every attempt observed.
		lat := retry.NewLatency()
		for range retry.LatWarmup {
			lat.Record(time.Second)
		}
		s := lat.Quantile(0.95).AtLeast(5 * time.Millisecond).Cap(time.Second).Take(1)
		opts := []retry.Option{retry.WithLatency(lat)}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := retry.Hedge(ctx, s, ok, opts...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=hedge-fixed-observe", func(b *testing.B) {
		// hedge-p95's call with a fixed delay instead: the adaptive chain,
		// fused, costs the same.
		lat := retry.NewLatency()
		s := retry.Constant(time.Second).Take(1)
		opts := []retry.Option{retry.WithLatency(lat)}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := retry.Hedge(ctx, s, ok, opts...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=hedge-observe", func(b *testing.B) {
		// Options written at the call, as usual: passing them allocates
		// nothing.
		lat, budget := retry.NewLatency(), retry.NewBudget(0.1, 10)
		s := retry.Constant(time.Second).Take(2)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := retry.Hedge(ctx, s, ok, retry.WithLatency(lat), retry.WithBudget(budget)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=hedge-options", func(b *testing.B) {
		s := retry.Constant(time.Second).Take(2)
		opts := []retry.Option{retry.If(retry.IsTransient), retry.OnRetry(func(retry.Attempt) {}), retry.WithBudget(retry.NewBudget(0.1, 10)), retry.OnDiscard(func(int) {})}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := retry.Hedge(ctx, s, ok, opts...); err != nil {
				b.Fatal(err)
			}
		}
	})
}
