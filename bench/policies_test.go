package bench

import (
	"time"

	avast4 "github.com/avast/retry-go/v4"
	avast5 "github.com/avast/retry-go/v5"
	"github.com/cenkalti/backoff/v5"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/seed-b8c8f69d/retry"
	sethvargo "github.com/sethvargo/go-retry"
)

// This file translates a policy into each library's own terms. Where a
// library has no exact equivalent, the comment says what it gets instead.

// ours is the policy as a Schedule: Cap before FullJitter draws below the
// cap, and Take(attempts-1) allows attempts attempts.
func ours(p policy) retry.Schedule {
	s := retry.Exponential(p.base).Cap(p.limit).FullJitter(nil)
	if p.floor > 0 {
		s = s.AtLeast(p.floor)
	}
	return s.Take(attempts - 1)
}

// oursOptions are the options of the retry-options contender: one of each
// that a parked call can use without changing what it waits for (If
// accepting every error, an OnRetry hook that does nothing, a Budget whose
// reserve covers a million retries, MaxPushback and WithLatency), built once.
// AttemptTimeout is left out: it makes a context per attempt, and
// context.WithTimeout's own frames (about 600 B of them, down to the timer
// it arms) grow the goroutine's stack to 4 KiB on the first attempt,
// whatever the retry loop; see bench/README.md.
func oursOptions() []retry.Option {
	return []retry.Option{
		retry.If(func(error) bool { return true }),
		retry.OnRetry(func(retry.Attempt) {}),
		retry.WithBudget(retry.NewBudget(0.1, 1_000_000)),
		retry.MaxPushback(time.Minute),
		retry.WithLatency(retry.NewLatency()),
	}
}

// cenkaltiBackOff is the policy as an ExponentialBackOff, which draws from
// [i·(1−f), i·(1+f)] around an interval i. With f = 1, an initial interval of
// base/2 and a maximum of limit/2, the draw is uniform over [0, min(base·2ⁿ,
// limit)]: exactly full jitter. For tiny the halves round up to 1 ns, so the
// draws are 0, 1 or 2 ns. An ExponentialBackOff holds state and is not safe
// for concurrent use: one per goroutine, reset by every Retry call.
func cenkaltiBackOff(p policy) *backoff.ExponentialBackOff {
	return &backoff.ExponentialBackOff{
		InitialInterval:     half(p.base),
		RandomizationFactor: 1,
		Multiplier:          2,
		MaxInterval:         half(p.limit),
	}
}

// cenkaltiOptions are the Retry options for b: attempts tries and, like
// every other contender, no limit on the elapsed time. (The default limit of
// 15 minutes never matters to the standard policy, but it makes a call that
// draws a wait over 15 minutes from the parked policy give up at once
// instead of waiting.)
func cenkaltiOptions(b backoff.BackOff) []backoff.RetryOption {
	return []backoff.RetryOption{backoff.WithBackOff(b), backoff.WithMaxTries(attempts), backoff.WithMaxElapsedTime(0)}
}

// avast4Options is the policy for retry-go v4: FullJitterBackoffDelay draws
// from [0, min(Delay·2ⁿ, MaxDelay)) where n counts from 1 for the first
// wait, so Delay is base/2 (1 ns for tiny, whose draws are then all 0).
func avast4Options(p policy) []avast4.Option {
	return []avast4.Option{
		avast4.Attempts(attempts),
		avast4.Delay(half(p.base)),
		avast4.MaxDelay(p.limit),
		avast4.DelayType(avast4.FullJitterBackoffDelay),
	}
}

// avast5Options is avast4Options for retry-go v5, whose FullJitterBackoffDelay
// is the same.
func avast5Options(p policy) []avast5.Option {
	return []avast5.Option{
		avast5.Attempts(attempts),
		avast5.Delay(half(p.base)),
		avast5.MaxDelay(p.limit),
		avast5.DelayType(avast5.FullJitterBackoffDelay),
	}
}

// sethvargoBackoff is the policy as a go-retry middleware chain, in the order
// its README gives: WithFullJitter draws from [0, d), after the cap. The
// chain holds state (the attempt counter), so it is built for every call.
func sethvargoBackoff(p policy) sethvargo.Backoff {
	b := sethvargo.NewExponential(p.base)
	b = sethvargo.WithCappedDuration(p.limit, b)
	b = sethvargo.WithFullJitter(b)
	return sethvargo.WithMaxRetries(attempts-1, b)
}

// failsafePolicy is the policy as a failsafe-go RetryPolicy. Its jitter
// factor f spreads a delay d over [d·(1−f), d·(1+f)), so, as for cenkalti,
// f = 1 with half the base and half the cap is full jitter. The policy is
// safe for concurrent use and built once.
func failsafePolicy(p policy) retrypolicy.RetryPolicy[any] {
	return retrypolicy.NewBuilder[any]().
		WithMaxAttempts(attempts).
		WithBackoff(half(p.base), half(p.limit)).
		WithJitterFactor(1).
		Build()
}
