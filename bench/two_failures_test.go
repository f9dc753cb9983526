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

// failTwice returns an attempt function that fails twice, succeeds on the
// third attempt, and starts over: every call that makes three attempts
// succeeds.
func failTwice() func(context.Context) error {
	n := 0
	return func(context.Context) error {
		if n++; n%3 != 0 {
			return errFail
		}
		return nil
	}
}

// BenchmarkTwoFailures measures a call that fails twice and succeeds on the
// third attempt, with every library's policy scaled down to 1 ns (the tiny
// policy) so that both retries run the library's timer path without the
// sleep dominating. ns/op covers three attempts and two waits.
func BenchmarkTwoFailures(b *testing.B) {
	ctx := context.Background()

	b.Run("lib=loop", func(b *testing.B) {
		op := failTwice()
		b.ReportAllocs()
		for b.Loop() {
			if err := loopDo(ctx, tiny, op); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lib=retry", func(b *testing.B) {
		s, op := ours(tiny), failTwice()
		b.ReportAllocs()
		for b.Loop() {
			if err := retry.Do(ctx, s, op); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lib=cenkalti", func(b *testing.B) {
		opts, op := cenkaltiOptions(cenkaltiBackOff(tiny)), failTwice()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := backoff.Retry(ctx, func() (struct{}, error) { return struct{}{}, op(ctx) }, opts...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lib=avast-v4", func(b *testing.B) {
		opts, op := avast4Options(tiny), failTwice()
		b.ReportAllocs()
		for b.Loop() {
			if err := avast4.Do(func() error { return op(ctx) }, opts...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lib=avast-v5", func(b *testing.B) {
		r, op := avast5.New(avast5Options(tiny)...), failTwice()
		b.ReportAllocs()
		for b.Loop() {
			if err := r.Do(func() error { return op(ctx) }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lib=sethvargo", func(b *testing.B) {
		op := failTwice()
		retryable := func(ctx context.Context) error { return sethvargo.RetryableError(op(ctx)) }
		b.ReportAllocs()
		for b.Loop() {
			if err := sethvargo.Do(ctx, sethvargoBackoff(tiny), retryable); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lib=failsafe", func(b *testing.B) {
		ex, op := failsafe.With(failsafePolicy(tiny)), failTwice()
		b.ReportAllocs()
		for b.Loop() {
			if err := ex.Run(func() error { return op(ctx) }); err != nil {
				b.Fatal(err)
			}
		}
	})
}
