package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-b8c8f69d/retry"
)

// The allocation tests run from this external package, where users call
// from: inlining and escape analysis differ there. Inside the package, a
// call's variadic options could stay on the stack where a user's would not
// (golang.org/issue/79592: an instantiation made in package retry, reached
// from an inlined body, has no escape facts in another package).

var errAlloc = errors.New("alloc test error")

// allocClock is a Clock that records nothing, so that allocation tests
// measure Retry alone.
type allocClock struct{}

func (allocClock) Now() time.Time { return epoch }
func (allocClock) Sleep(ctx context.Context, _ time.Duration) error {
	return ctx.Err()
}

// opaque returns s behind a Schedule of its own, as a hand-written
// Schedule would be: Retry and Do take the general path.
func opaque(s retry.Schedule) retry.Schedule {
	return func(yield func(time.Duration) bool) { s(yield) }
}

func skipRace(t *testing.T) {
	t.Helper()
	if retry.RaceEnabled {
		t.Skip("the race detector allocates")
	}
}

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

// TestOverloadAllocations checks that a Throttle and a Breaker add no
// allocation to a call that succeeds at once, on the real clock and on a
// FakeClock, nor asking a Breaker outside Retry and reporting.
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
	for _, tt := range []struct {
		name string
		fn   func()
	}{
		{"Do WithThrottle", func() { _ = retry.Do(ctx, sched, succeed, retry.WithThrottle(th)) }},
		{"Do WithBreaker", func() { _ = retry.Do(ctx, sched, succeed, retry.WithBreaker(br)) }},
		{"Do with both", func() { _ = retry.Do(ctx, sched, succeed, retry.WithThrottle(th), retry.WithBreaker(br)) }},
		{"Retry with both", func() { _, _ = retry.Retry(ctx, sched, succeedT, retry.WithThrottle(th), retry.WithBreaker(br)) }},
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

// TestErrorAllocations checks that matching a call's *Error with errors.Is
// allocates nothing, nor a relative pushback on the retry path.
func TestErrorAllocations(t *testing.T) {
	skipRace(t)
	_, err := retry.Retry(context.Background(), retry.Delays(), func(context.Context) (int, error) { return 0, errAlloc })
	require.ErrorIs(t, err, errAlloc)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = errors.Is(err, errAlloc) }), "errors.Is does not allocate")

	ctx, once, calls := context.Background(), retry.Constant(0).Take(1), 0
	allocs := func(first error) float64 {
		fn := func(context.Context) error {
			if calls++; calls == 1 {
				return first
			}
			return nil
		}
		return testing.AllocsPerRun(100, func() {
			calls = 0
			_ = retry.Do(ctx, once, fn, retry.WithClock(allocClock{}))
		})
	}
	assert.Equal(t, allocs(errAlloc), allocs(retry.RetryAfter(errAlloc, time.Second)), "a pushback allocates nothing")
}

// TestBudgetAllocations checks that reading a Budget allocates nothing.
func TestBudgetAllocations(t *testing.T) {
	skipRace(t)
	b := retry.NewBudget(0.1, 10)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = b.Tokens() }))
}

// TestLatencyAllocations checks that recording a latency and reading the
// estimate a Quantile schedule draws from allocate nothing, nor a Retry
// that records its attempts.
func TestLatencyAllocations(t *testing.T) {
	skipRace(t)
	l := retry.NewLatency()
	e := retry.NewEstimate(l, 0.95)
	var i int
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		i++
		l.Record(time.Duration(i) * time.Microsecond)
		e.Get()
	}))
	opts := []retry.Option{retry.WithLatency(l)}
	ok := func(context.Context) (int, error) { return 1, nil }
	s := retry.Constant(0) // built once, as building a Schedule allocates
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		_, _ = retry.Retry(context.Background(), s, ok, opts...)
	}))
}

// TestHedgeAllocations pins what a Hedge whose first attempt wins
// allocates, so that a change that adds to it is noticed (the cost is
// measured by BenchmarkHedge).
func TestHedgeAllocations(t *testing.T) {
	skipRace(t)
	ok := func(context.Context) (int, error) { return 1, nil }
	s := retry.Constant(time.Hour).Take(1)
	allocs := testing.AllocsPerRun(1000, func() {
		_, _ = retry.Hedge(context.Background(), s, ok)
	})
	most := 6.0
	if !retry.Fusion {
		most += 3 // purego: Take is a relay (two allocations) and Hedge ranges it (one)
	}
	assert.LessOrEqual(t, allocs, most)
	t.Logf("%v allocations", allocs)
}

// TestHedgeAdaptiveAllocations checks that the README's adaptive chain,
// a Latency's Quantile bounded by AtLeast, Cap and Take, costs a Hedge call
// no more than a fixed delay with the same options: Quantile is a plan's
// source, so the chain is fused and Hedge draws it from its plan.
func TestHedgeAdaptiveAllocations(t *testing.T) {
	skipRace(t)
	if !retry.Fusion {
		t.Skip("purego: no chain is fused")
	}
	ok := func(context.Context) (int, error) { return 1, nil }
	lat := retry.NewLatency()
	for range retry.LatWarmup {
		lat.Record(time.Hour)
	}
	opts := []retry.Option{retry.WithLatency(lat)}
	count := func(s retry.Schedule) float64 {
		return testing.AllocsPerRun(1000, func() {
			_, _ = retry.Hedge(context.Background(), s, ok, opts...)
		})
	}
	require.True(t, retry.PlanOf(lat.Quantile(0.95).AtLeast(5*time.Millisecond).Cap(time.Hour).Take(1)))
	fixed := count(retry.Constant(time.Hour).Take(1))
	adaptive := count(lat.Quantile(0.95).AtLeast(5 * time.Millisecond).Cap(time.Hour).Take(1))
	assert.LessOrEqual(t, adaptive, fixed)
	t.Logf("fixed %v, adaptive %v allocations", fixed, adaptive)
}

// TestOnHedgeDoneAllocations pins that OnHedgeDone costs no allocation
// beyond OnDone's.
func TestOnHedgeDoneAllocations(t *testing.T) {
	skipRace(t)
	ok := func(context.Context) (int, error) { return 1, nil }
	s := retry.Constant(time.Hour).Take(1)
	done := retry.OnDone(func(retry.Outcome) {})
	hedgeDone := retry.OnHedgeDone(func(retry.Outcome, retry.HedgeResult) {})
	withDone := testing.AllocsPerRun(1000, func() { _, _ = retry.Hedge(context.Background(), s, ok, done) })
	withHedgeDone := testing.AllocsPerRun(1000, func() { _, _ = retry.Hedge(context.Background(), s, ok, hedgeDone) })
	assert.LessOrEqual(t, withHedgeDone, withDone)
}
