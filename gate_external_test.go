package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
)

// TestOverloadAllocations checks that a Throttle, a Breaker and a Limiter
// add no allocation to a call that succeeds at once, on the real clock and
// on a FakeClock, nor asking a Breaker outside Retry and reporting.
func TestOverloadAllocations(t *testing.T) {
	skipRace(t)
	ctx := context.Background()
	sched := retry.Exponential(100 * time.Millisecond).Take(5)
	succeed := func(context.Context) error { return nil }
	succeedT := func(context.Context) (int, error) { return 1, nil }
	th, br := retry.NewThrottle(), retry.NewBreaker()
	clock := retry.NewFakeClock(epoch)
	fth, fbr := retry.NewThrottle(retry.ThrottleClock(clock)), retry.NewBreaker(retry.BreakerClock(clock))
	slow := retry.NewBreaker(retry.BreakerSlowCall(time.Second))
	li := retry.NewLimiter()
	for _, tt := range []struct {
		name string
		fn   func()
	}{
		{"Do WithThrottle", func() { _ = retry.Do(ctx, sched, succeed, retry.WithThrottle(th)) }},
		{"Do WithBreaker", func() { _ = retry.Do(ctx, sched, succeed, retry.WithBreaker(br)) }},
		{"Do with both", func() { _ = retry.Do(ctx, sched, succeed, retry.WithThrottle(th), retry.WithBreaker(br)) }},
		{"Retry with both", func() { _, _ = retry.Retry(ctx, sched, succeedT, retry.WithThrottle(th), retry.WithBreaker(br)) }},
		{"Do with both and WithLimiter", func() {
			_ = retry.Do(ctx, sched, succeed, retry.WithThrottle(th), retry.WithBreaker(br), retry.WithLimiter(li))
		}},
		{"Do with both on a FakeClock", func() {
			_ = retry.Do(ctx, sched, succeed, retry.WithThrottle(fth), retry.WithBreaker(fbr), retry.WithClock(clock))
		}},
		{"Do WithBreaker, BreakerSlowCall", func() { _ = retry.Do(ctx, sched, succeed, retry.WithBreaker(slow)) }},
		{"Breaker.Allow and Success", func() {
			p, err := br.Allow()
			if err != nil {
				panic(err)
			}
			p.Success()
		}},
		{"Breaker.Allow and Report", func() {
			p, _ := br.Allow()
			p.Report(ctx, nil)
		}},
		{"Breaker.Snapshot", func() { _ = br.Snapshot() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Zero(t, testing.AllocsPerRun(1000, tt.fn))
		})
	}
}
