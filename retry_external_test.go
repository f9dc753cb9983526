package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
)

// TestAllocations checks that a call that succeeds at once allocates
// nothing, with any option and with each one alone, Do and Retry alike.
func TestAllocations(t *testing.T) {
	skipRace(t)
	ctx := context.Background()
	sched := retry.Exponential(100 * time.Millisecond).Cap(2 * time.Second).FullJitter(nil).Take(5)
	clock := retry.NewFakeClock(epoch)
	budget := retry.NewBudget(0.1, 10)
	th, br := retry.NewThrottle(), retry.NewBreaker()
	fth, fbr := retry.NewThrottle(retry.ThrottleClock(clock)), retry.NewBreaker(retry.BreakerClock(clock))
	lat := retry.NewLatency()
	succeed := func(context.Context) error { return nil }
	succeedT := func(context.Context) (int, error) { return 1, nil }
	each := []struct {
		name string
		opt  retry.Option
	}{
		{"WithClock", retry.WithClock(clock)},
		{"If", retry.If(retry.IsTransient)},
		{"OnRetry", retry.OnRetry(func(retry.Attempt) {})},
		{"WithBudget", retry.WithBudget(budget)},
		{"MaxPushback", retry.MaxPushback(time.Second)},
		{"OnDone", retry.OnDone(func(retry.Outcome) {})},
		{"MaxElapsed", retry.MaxElapsed(time.Second)},
		{"MaxRetriesIf", retry.MaxRetriesIf(1, retry.IsTransient)},
		{"WithLatency", retry.WithLatency(lat)},
		{"WithThrottle", retry.WithThrottle(th)},
		{"WithBreaker", retry.WithBreaker(br)},
	}
	for _, o := range each {
		t.Run("Do "+o.name, func(t *testing.T) {
			assert.Zero(t, testing.AllocsPerRun(1000, func() { _ = retry.Do(ctx, sched, succeed, o.opt) }))
		})
		t.Run("Retry "+o.name, func(t *testing.T) {
			assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = retry.Retry(ctx, sched, succeedT, o.opt) }))
		})
	}
	tests := []struct {
		name string
		fn   func()
	}{
		{"Do", func() { _ = retry.Do(ctx, sched, succeed) }},
		{"Retry", func() { _, _ = retry.Retry(ctx, sched, succeedT) }},
		{"Do with every option but AttemptTimeout", func() {
			_ = retry.Do(ctx, sched, succeed, retry.WithClock(clock), retry.If(retry.IsTransient),
				retry.OnRetry(func(retry.Attempt) {}), retry.WithBudget(budget), retry.MaxPushback(time.Second),
				retry.OnDone(func(retry.Outcome) {}), retry.MaxElapsed(time.Second),
				retry.MaxRetriesIf(1, retry.IsTransient), retry.WithThrottle(fth), retry.WithBreaker(fbr))
		}},
		{"Retry with OnDone, MaxElapsed, IfValue and MaxRetriesIf", func() {
			_, _ = retry.Retry(ctx, sched, succeedT, retry.OnDone(func(retry.Outcome) {}), retry.MaxElapsed(time.Second),
				retry.IfValue(func(int) bool { return false }), retry.MaxRetriesIf(1, retry.IsTransient))
		}},
	}
	for _, tt := range tests {
		t.Run("success on the first attempt: "+tt.name, func(t *testing.T) {
			assert.Zero(t, testing.AllocsPerRun(1000, tt.fn))
		})
	}

	// AttemptTimeout's context costs the same in Do as in Retry: the
	// options add nothing.
	t.Run("AttemptTimeout costs Do what it costs Retry", func(t *testing.T) {
		do := testing.AllocsPerRun(1000, func() { _ = retry.Do(ctx, sched, succeed, retry.AttemptTimeout(time.Second)) })
		rt := testing.AllocsPerRun(1000, func() { _, _ = retry.Retry(ctx, sched, succeedT, retry.AttemptTimeout(time.Second)) })
		assert.Equal(t, rt, do)
	})

	// failing returns a call of Do on sched, taking n retries to succeed.
	failing := func(sched func(n int) retry.Schedule, n int, opts ...retry.Option) func() {
		s, calls := sched(n), 0
		fn := func(context.Context) error {
			if calls++; calls <= n {
				return errAlloc
			}
			return nil
		}
		return func() {
			calls = 0
			if err := retry.Do(ctx, s, fn, opts...); err != nil {
				panic(err)
			}
		}
	}
	builtIn := func(n int) retry.Schedule { return retry.Constant(time.Millisecond).Cap(time.Second).Take(n) }
	handWritten := func(n int) retry.Schedule { return opaque(retry.Constant(time.Millisecond)).Cap(time.Second).Take(n) }
	t.Run("a call that retries a built-in schedule allocates nothing on a fake clock", func(t *testing.T) {
		if !retry.Fusion {
			t.Skip("fusion is off (purego): every schedule takes the general path")
		}
		opts := []retry.Option{retry.WithClock(allocClock{}), retry.If(func(error) bool { return true }),
			retry.WithBudget(retry.NewBudget(1, 1<<20)), retry.MaxPushback(time.Second), retry.WithLatency(retry.NewLatency())}
		for _, opts := range [][]retry.Option{opts[:1], opts} {
			assert.Zero(t, testing.AllocsPerRun(1000, failing(builtIn, 2, opts...)))
			assert.Zero(t, testing.AllocsPerRun(100, failing(builtIn, 200, opts...)))
		}
		// With OnRetry, the start time that Attempt.Elapsed needs.
		opts = append(opts, retry.OnRetry(func(retry.Attempt) {}))
		assert.Equal(t, 1.0, testing.AllocsPerRun(1000, failing(builtIn, 2, opts...)))
		assert.Equal(t, 1.0, testing.AllocsPerRun(100, failing(builtIn, 200, opts...)))
	})
	t.Run("a call that retries a hand-written schedule allocates a fixed number of objects on a fake clock", func(t *testing.T) {
		// The loop and its yield function, and each of Cap's and Take's
		// relays with its step: made for the call, never reused.
		const perCall = 6
		assert.Equal(t, float64(perCall), testing.AllocsPerRun(1000, failing(handWritten, 2, retry.WithClock(allocClock{}))))
		assert.Equal(t, float64(perCall), testing.AllocsPerRun(100, failing(handWritten, 200, retry.WithClock(allocClock{}))), "nothing more per retry")
	})
}
