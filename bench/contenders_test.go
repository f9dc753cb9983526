package bench

import (
	"context"

	avast4 "github.com/avast/retry-go/v4"
	avast5 "github.com/avast/retry-go/v5"
	"github.com/cenkalti/backoff/v5"
	"github.com/failsafe-go/failsafe-go"
	"github.com/seed-b8c8f69d/retry"
	sethvargo "github.com/sethvargo/go-retry"
)

// A caller makes one call of op with retries, under ctx.
type caller func(ctx context.Context, op func(context.Context) error) error

// A contender is one library, or the hand-written loop, for the scenarios
// that park many concurrent calls. build translates a policy once; the
// caller it returns may be used by any number of goroutines at once, so it
// builds per call whatever the library cannot share, and passes each call
// its own ctx the way the library takes one. (The single-goroutine
// benchmarks call each library directly instead, so that no indirect call
// blurs the small differences they measure.)
type contender struct {
	name  string
	build func(p policy) caller
}

var contenders = []contender{
	{"loop", func(p policy) caller {
		return func(ctx context.Context, op func(context.Context) error) error {
			return loopDo(ctx, p, op)
		}
	}},
	{"retry", func(p policy) caller {
		s := ours(p)
		return func(ctx context.Context, op func(context.Context) error) error {
			return retry.Do(ctx, s, op)
		}
	}},
	{"retry-generic", func(p policy) caller {
		// Retry[T], the generic form, with a value.
		s := ours(p)
		return func(ctx context.Context, op func(context.Context) error) error {
			_, err := retry.Retry(ctx, s, func(ctx context.Context) (int, error) { return 1, op(ctx) })
			return err
		}
	}},
	{"retry-options", func(p policy) caller {
		// Do with options: a classifier, a hook, a budget with room for
		// every parked call's retry, a bound on pushback and a latency
		// tracker (see oursOptions).
		s, opts := ours(p), oursOptions()
		return func(ctx context.Context, op func(context.Context) error) error {
			return retry.Do(ctx, s, op, opts...)
		}
	}},
	{"cenkalti", func(p policy) caller {
		// The ExponentialBackOff is not safe for concurrent use.
		return func(ctx context.Context, op func(context.Context) error) error {
			_, err := backoff.Retry(ctx, func() (struct{}, error) { return struct{}{}, op(ctx) }, cenkaltiOptions(cenkaltiBackOff(p))...)
			return err
		}
	}},
	{"avast-v4", func(p policy) caller {
		opts := avast4Options(p)
		opts = opts[:len(opts):len(opts)] // so that each call's append copies
		return func(ctx context.Context, op func(context.Context) error) error {
			return avast4.Do(func() error { return op(ctx) }, append(opts, avast4.Context(ctx))...)
		}
	}},
	{"avast-v5", func(p policy) caller {
		// A Retrier holds its context, so a call with its own context
		// needs its own Retrier.
		opts := avast5Options(p)
		opts = opts[:len(opts):len(opts)]
		return func(ctx context.Context, op func(context.Context) error) error {
			return avast5.New(append(opts, avast5.Context(ctx))...).Do(func() error { return op(ctx) })
		}
	}},
	{"sethvargo", func(p policy) caller {
		return func(ctx context.Context, op func(context.Context) error) error {
			return sethvargo.Do(ctx, sethvargoBackoff(p), func(ctx context.Context) error {
				return sethvargo.RetryableError(op(ctx))
			})
		}
	}},
	{"failsafe", func(p policy) caller {
		ex := failsafe.With(failsafePolicy(p))
		return func(ctx context.Context, op func(context.Context) error) error {
			return ex.WithContext(ctx).Run(func() error { return op(ctx) })
		}
	}},
}
