package bench_test

import (
	"context"
	"testing"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/adaptivethrottler"
	"github.com/seed-b8c8f69d/retry"
	"github.com/sony/gobreaker/v2"
)

// BenchmarkHotPath measures the success path of a call guarded by a circuit
// breaker or an adaptive throttle, ours and the peers', side by side in one
// run (run it with -cpu 1,2,8): the dependency answers at once, so what is
// measured is the guard's own cost per call.
//
//   - retry-breaker: retry.Do(ctx, s, fn, retry.WithBreaker(b)), b closed.
//   - gobreaker: sony/gobreaker v2's cb.Execute(fn), closed, default settings.
//   - retry-throttle: retry.Do(ctx, s, fn, retry.WithThrottle(t)).
//   - failsafe-executor: failsafe-go's failsafe.With(t).Run(fn) with an
//     adaptivethrottler, the way its README calls a policy.
//   - failsafe-direct: the same throttler's TryAcquirePermit, then
//     RecordSuccess, with the call in between: its cheapest use.
//
// Each case runs serially (one goroutine: the cost a call pays) and in
// parallel (b.RunParallel, one goroutine per P: the cost under contention).
// Every guard is built once, outside the measured loop; ours get a
// schedule, as a real call would have, that the success path never ranges.
func BenchmarkHotPath(b *testing.B) {
	ctx := context.Background()
	s := retry.Exponential(100e6).Cap(2e9).FullJitter(nil).Take(4)
	ok := func(context.Context) error { return nil }
	okString := func() (string, error) { return "", nil }
	okRun := func() error { return nil }
	cases := []struct {
		name string
		call func() func()
	}{
		{"retry-breaker", func() func() {
			br := retry.NewBreaker()
			return func() {
				if err := retry.Do(ctx, s, ok, retry.WithBreaker(br)); err != nil {
					panic(err)
				}
			}
		}},
		{"gobreaker", func() func() {
			cb := gobreaker.NewCircuitBreaker[string](gobreaker.Settings{Name: "bench"})
			return func() {
				if _, err := cb.Execute(okString); err != nil {
					panic(err)
				}
			}
		}},
		{"retry-throttle", func() func() {
			th := retry.NewThrottle()
			return func() {
				if err := retry.Do(ctx, s, ok, retry.WithThrottle(th)); err != nil {
					panic(err)
				}
			}
		}},
		{"failsafe-executor", func() func() {
			th := adaptivethrottler.NewWithDefaults[any]()
			ex := failsafe.With[any](th)
			return func() {
				if err := ex.Run(okRun); err != nil {
					panic(err)
				}
			}
		}},
		{"failsafe-direct", func() func() {
			th := adaptivethrottler.NewWithDefaults[any]()
			return func() {
				if !th.TryAcquirePermit() {
					panic("rejected")
				}
				if err := okRun(); err != nil {
					panic(err)
				}
				th.RecordSuccess()
			}
		}},
	}
	for _, mode := range []string{"serial", "parallel"} {
		for _, c := range cases {
			b.Run("mode="+mode+"/lib="+c.name, func(b *testing.B) {
				call := c.call()
				b.ReportAllocs()
				if mode == "serial" {
					for b.Loop() {
						call()
					}
					return
				}
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						call()
					}
				})
			})
		}
	}
}
