package bench

import (
	"context"
	"testing"

	avast4 "github.com/avast/retry-go/v4"
	avast5 "github.com/avast/retry-go/v5"
	"github.com/cenkalti/backoff/v5"
	"github.com/failsafe-go/failsafe-go"
	"github.com/seed-b8c8f69d/retry"
	sethvargo "github.com/sethvargo/go-retry"
)

// BenchmarkSuccess measures a call whose first attempt succeeds: the cost a
// retry library adds to every call that never needed it. Each library is
// called as its README shows, with whatever it lets callers build once built
// outside the loop.
func BenchmarkSuccess(b *testing.B) {
	ctx := context.Background()
	ok := func(context.Context) error { return nil }

	b.Run("lib=loop", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := loopDo(ctx, standard, ok); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lib=retry", func(b *testing.B) {
		s := ours(standard)
		b.ReportAllocs()
		for b.Loop() {
			if err := retry.Do(ctx, s, ok); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lib=cenkalti", func(b *testing.B) {
		opts := cenkaltiOptions(cenkaltiBackOff(standard))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := backoff.Retry(ctx, func() (struct{}, error) { return struct{}{}, ok(ctx) }, opts...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lib=avast-v4", func(b *testing.B) {
		opts := avast4Options(standard)
		b.ReportAllocs()
		for b.Loop() {
			if err := avast4.Do(func() error { return ok(ctx) }, opts...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lib=avast-v5", func(b *testing.B) {
		r := avast5.New(avast5Options(standard)...)
		b.ReportAllocs()
		for b.Loop() {
			if err := r.Do(func() error { return ok(ctx) }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lib=sethvargo", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := sethvargo.Do(ctx, sethvargoBackoff(standard), ok); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lib=failsafe", func(b *testing.B) {
		ex := failsafe.With(failsafePolicy(standard))
		b.ReportAllocs()
		for b.Loop() {
			if err := ex.Run(func() error { return ok(ctx) }); err != nil {
				b.Fatal(err)
			}
		}
	})
}
