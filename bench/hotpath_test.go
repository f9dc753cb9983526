package bench_test

import (
	"context"
	"slices"
	"testing"
	"time"

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
	cases := hotPathCases()
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

// hotPathCase is a contender of BenchmarkHotPath: call builds its guard and
// returns one successful call through it.
type hotPathCase struct {
	name string
	call func() func()
}

// hotPathCases returns BenchmarkHotPath's contenders.
func hotPathCases() []hotPathCase {
	ctx := context.Background()
	s := retry.Exponential(100e6).Cap(2e9).FullJitter(nil).Take(4)
	ok := func(context.Context) error { return nil }
	okString := func() (string, error) { return "", nil }
	okRun := func() error { return nil }
	return []hotPathCase{
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
}

// BenchmarkHotPathPairs measures each of our guards and its peer in the
// same stretches of time: blocks of 100 calls of one, then of the other,
// alternately, on one goroutine. On a loaded machine a burst of someone
// else's work then slows both alike, and the median block leaves the
// bursts out, so their ratio (ours/theirs, under 1 when ours costs less)
// holds where separate runs would not. ns/op is a pair of blocks';
// ours-ns and theirs-ns are each one's median block per call.
func BenchmarkHotPathPairs(b *testing.B) {
	byName := map[string]hotPathCase{}
	for _, c := range hotPathCases() {
		byName[c.name] = c
	}
	for _, pair := range [][2]string{
		{"retry-breaker", "gobreaker"},
		{"retry-throttle", "failsafe-direct"},
		{"retry-throttle", "failsafe-executor"},
	} {
		b.Run(pair[0]+"-vs-"+pair[1], func(b *testing.B) {
			ours, theirs := byName[pair[0]].call(), byName[pair[1]].call()
			const block = 100
			var tOurs, tTheirs []time.Duration
			for b.Loop() {
				t0 := time.Now()
				for range block {
					ours()
				}
				t1 := time.Now()
				for range block {
					theirs()
				}
				tOurs, tTheirs = append(tOurs, t1.Sub(t0)), append(tTheirs, time.Since(t1))
			}
			mo, mt := median(tOurs)/block, median(tTheirs)/block
			b.ReportMetric(float64(mo), "ours-ns")
			b.ReportMetric(float64(mt), "theirs-ns")
			b.ReportMetric(float64(mo)/float64(mt), "ratio")
		})
	}
}

// median returns the median of ds, which it sorts.
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}
