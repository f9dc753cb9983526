package bench

import (
	"testing"
	"time"

	avast4 "github.com/avast/retry-go/v4"
	avast5 "github.com/avast/retry-go/v5"
	"github.com/seed-b8c8f69d/retry"
	sethvargo "github.com/sethvargo/go-retry"
)

// perRun is the number of delays one call takes from its policy: one before
// each retry.
const perRun = attempts - 1

// sink keeps the delays alive so that the compiler cannot drop their
// computation.
var sink time.Duration

// BenchmarkDelay measures each library's own primitive for the next delay of
// the standard policy, without any waiting (ours: ranging the schedule with a
// bound yield function, and, as retry-range, with a for-range statement). One op is one delay; the policy
// is restarted every perRun delays, as a call does, so a library that must
// set something up for each call pays for it once per perRun delays. None of
// these include the attempt limit. failsafe-go has no public primitive (its
// delays are computed inside the retry executor), so it has no row here.
func BenchmarkDelay(b *testing.B) {
	b.Run("lib=loop", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			sink += loopDelay(standard, i)
			if i++; i == perRun {
				i = 0
			}
		}
	})
	b.Run("lib=retry", func(b *testing.B) {
		// The policy without Take, ranged with a yield function bound once,
		// outside the measured loop: the schedule's own cost, as a caller
		// that ranges it again and again pays it. (Retry and Do do not range
		// a built-in schedule at all: they draw from its plan in their own
		// loop.)
		s := retry.Exponential(standard.base).Cap(standard.limit).FullJitter(nil)
		i := 0
		yield := func(d time.Duration) bool {
			sink += d
			i++
			return i < perRun
		}
		b.ReportAllocs()
		for n := 0; n < b.N; n += perRun {
			i = 0
			s(yield)
		}
	})
	b.Run("lib=retry-range", func(b *testing.B) {
		// The same with a for-range statement, which costs the caller three
		// allocations per range (the loop body's closure, the counter and
		// the range's state escape, since s is an opaque function).
		s := retry.Exponential(standard.base).Cap(standard.limit).FullJitter(nil)
		b.ReportAllocs()
		n := 0
		for n < b.N {
			i := 0
			for d := range s {
				sink += d
				if i++; i == perRun {
					break
				}
			}
			n += perRun
		}
	})
	b.Run("lib=cenkalti", func(b *testing.B) {
		bo := cenkaltiBackOff(standard)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if i == 0 {
				bo.Reset()
			}
			sink += bo.NextBackOff()
			if i++; i == perRun {
				i = 0
			}
		}
	})
	b.Run("lib=avast-v4", func(b *testing.B) {
		// Config has no exported constructor; its Options apply to a zero
		// one. The library passes n = 1 for the first wait.
		cfg := &avast4.Config{}
		for _, o := range avast4Options(standard) {
			o(cfg)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			sink += avast4.FullJitterBackoffDelay(uint(i+1), errFail, cfg)
			if i++; i == perRun {
				i = 0
			}
		}
	})
	b.Run("lib=avast-v5", func(b *testing.B) {
		r := avast5.New(avast5Options(standard)...)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			sink += avast5.FullJitterBackoffDelay(uint(i+1), errFail, r)
			if i++; i == perRun {
				i = 0
			}
		}
	})
	b.Run("lib=sethvargo", func(b *testing.B) {
		// The middleware chain holds the attempt count, so each run builds
		// a new one, as each call of Do must.
		b.ReportAllocs()
		var bo sethvargo.Backoff
		i := 0
		for b.Loop() {
			if i == 0 {
				bo = sethvargo.WithFullJitter(sethvargo.WithCappedDuration(standard.limit, sethvargo.NewExponential(standard.base)))
			}
			d, _ := bo.Next()
			sink += d
			if i++; i == perRun {
				i = 0
			}
		}
	})
}
