package bench

import (
	"context"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"
	"github.com/seed-b8c8f69d/retry"
)

// BenchmarkHedge measures hedging, against failsafe-go's hedge policy, the
// only Go library among the contenders that hedges; a bare call of the
// function is the floor. Both are given one hedge after a delay.
//
// first-wins: the first attempt succeeds at once, long before the delay of
// 1 s: the cost hedging adds to a call that did not need it (an attempt on
// a goroutine of its own, a timer armed and stopped, a context).
//
// hedge-wins: the first attempt waits until its context is cancelled; the
// hedge, started at once (a delay of 0, so that the OS timer slack of a
// short sleep does not dominate), succeeds and cancels it: the whole hedge
// path.
func BenchmarkHedge(b *testing.B) {
	ctx := context.Background()
	ok := func(context.Context) (int, error) { return 1, nil }
	// stuck returns an fn whose first attempt of each call blocks until its
	// context is cancelled, and whose second succeeds; new makes one per call.
	stuck := func() func(context.Context) (int, error) {
		first := make(chan struct{}, 1)
		first <- struct{}{}
		return func(ctx context.Context) (int, error) {
			select {
			case <-first:
				<-ctx.Done()
				return 0, ctx.Err()
			default:
				return 2, nil
			}
		}
	}
	scenarios := []struct {
		name  string
		delay time.Duration
		fn    func() func(context.Context) (int, error)
		want  int
	}{
		{"first-wins", time.Second, func() func(context.Context) (int, error) { return ok }, 1},
		{"hedge-wins", 0, stuck, 2},
	}
	for _, sc := range scenarios {
		b.Run(sc.name+"/lib=bare", func(b *testing.B) {
			if sc.name != "first-wins" {
				b.Skip("a bare call cannot hedge")
			}
			b.ReportAllocs()
			for b.Loop() {
				if v, err := ok(ctx); err != nil || v != sc.want {
					b.Fatal(v, err)
				}
			}
		})
		b.Run(sc.name+"/lib=retry", func(b *testing.B) {
			s := retry.Constant(sc.delay).Take(1)
			b.ReportAllocs()
			for b.Loop() {
				if v, err := retry.Hedge(ctx, s, sc.fn()); err != nil || v != sc.want {
					b.Fatal(v, err)
				}
			}
		})
		// The adaptive delay of the README, against a fixed one with the
		// same WithLatency option, when the first attempt wins: Quantile is
		// fused like Constant, so the two cost the same. (When every first
		// attempt hangs, as in hedge-wins, the p95 that WithLatency tracks is
		// the hang, and the delay rises to the Cap: not a cost to measure.)
		b.Run(sc.name+"/lib=retry-adaptive", func(b *testing.B) {
			if sc.name != "first-wins" {
				b.Skip("the delay would rise to the Cap")
			}
			lat := retry.NewLatency()
			for range 100 {
				lat.Record(sc.delay) // a p95 of 1 s
			}
			s := lat.Quantile(0.95).Cap(time.Second).Take(1)
			opts := []retry.Option{retry.WithLatency(lat)}
			b.ReportAllocs()
			for b.Loop() {
				if v, err := retry.Hedge(ctx, s, sc.fn(), opts...); err != nil || v != sc.want {
					b.Fatal(v, err)
				}
			}
		})
		b.Run(sc.name+"/lib=retry-observed", func(b *testing.B) {
			if sc.name != "first-wins" {
				b.Skip("compared with retry-adaptive only")
			}
			s := retry.Constant(sc.delay).Take(1)
			opts := []retry.Option{retry.WithLatency(retry.NewLatency())}
			b.ReportAllocs()
			for b.Loop() {
				if v, err := retry.Hedge(ctx, s, sc.fn(), opts...); err != nil || v != sc.want {
					b.Fatal(v, err)
				}
			}
		})
		b.Run(sc.name+"/lib=failsafe", func(b *testing.B) {
			ex := failsafe.With(hedgepolicy.NewWithDelay[int](sc.delay))
			b.ReportAllocs()
			for b.Loop() {
				fn := sc.fn()
				v, err := ex.WithContext(ctx).GetWithExecution(func(e failsafe.Execution[int]) (int, error) {
					return fn(e.Context())
				})
				if err != nil || v != sc.want {
					b.Fatal(v, err)
				}
			}
		})
	}
}
