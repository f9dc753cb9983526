package retry

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// changes returns an OnStateChange option recording the changes in *got.
func changes(got *[]string) BreakerOption {
	return OnStateChange(func(from, to BreakerState) { *got = append(*got, from.String()+"→"+to.String()) })
}

// breakerCalls makes one-attempt calls through a Breaker on a clock: ok
// succeeds, bad fails with a retryable error, and both report whether fn
// ran (false: the Breaker did not let the call through).
type breakerCalls struct {
	t     *testing.T
	b     *Breaker
	clock Clock
}

func (c breakerCalls) call(ctx context.Context, err error) bool {
	ran := false
	got := Do(ctx, Delays(), func(context.Context) error { ran = true; return err }, WithBreaker(c.b), WithClock(c.clock))
	if !ran {
		require.ErrorIs(c.t, got, ErrBreakerOpen)
	}
	return ran
}

func (c breakerCalls) ok() bool  { return c.call(c.t.Context(), nil) }
func (c breakerCalls) bad() bool { return c.call(c.t.Context(), errBoom) }

// counts returns the outcomes and failures in b's window now.
func (b *Breaker) counts() (calls, failures uint64) {
	tick, _ := b.w.now(b.clock, nil)
	return b.w.sum(tick-(windowBuckets-1), tick)
}

// TestBreakerTransitions translates gobreaker v2's
// TestDefaultCircuitBreaker: closed → open on failures, open rejects
// successes and failures alike, half-open after the open period and not a
// moment before, a failed probe opens again, a successful one closes.
func TestBreakerTransitions(t *testing.T) {
	clock := NewFakeClock(epoch)
	var got []string
	b := NewBreaker(BreakerClock(clock), BreakerMinCalls(6), BreakerRatio(0.8),
		BreakerOpenPeriods(Constant(time.Minute)), changes(&got))
	c := breakerCalls{t, b, clock}
	for range 4 {
		require.True(t, c.bad())
	}
	require.True(t, c.ok())
	assert.Equal(t, BreakerClosed, b.State(), "5 outcomes: below the minimum")
	require.True(t, c.bad())
	assert.Equal(t, BreakerOpen, b.State(), "5 of 6 failed: 0.83 ≥ 0.8")

	assert.False(t, c.ok(), "open: a success is not let through")
	assert.False(t, c.bad(), "nor a failure")
	clock.Advance(59 * time.Second)
	assert.Equal(t, BreakerOpen, b.State())
	clock.Advance(time.Second)
	assert.Equal(t, BreakerHalfOpen, b.State(), "the open period is over")

	require.True(t, c.bad(), "the probe")
	assert.Equal(t, BreakerOpen, b.State(), "a failed probe opens again")
	clock.Advance(time.Minute)
	require.True(t, c.ok())
	assert.Equal(t, BreakerClosed, b.State(), "a successful probe closes")
	calls, failures := b.counts()
	assert.Zero(t, calls, "closing empties the window")
	assert.Zero(t, failures)
	assert.Equal(t, []string{"closed→open", "open→half-open", "half-open→open", "open→half-open", "half-open→closed"}, got)
}

// TestBreakerRatio translates gobreaker v2's TestCustomCircuitBreaker (a
// ratio of 0.6 over at least 3 outcomes, 3 probes, one over the limit
// rejected while the third is in flight) and failsafe-go's
// TestClosedStateFailureWithFailureRatio and
// TestClosedStateSuccessWithFailureRatio.
func TestBreakerRatio(t *testing.T) {
	t.Run("gobreaker custom", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var got []string
			b := NewBreaker(BreakerRatio(0.6), BreakerMinCalls(3), BreakerWindow(30*time.Second),
				BreakerProbes(3), BreakerOpenPeriods(Constant(90*time.Second)), changes(&got))
			c := breakerCalls{t, b, nil}
			for range 5 {
				require.True(t, c.ok())
				require.True(t, c.bad())
			}
			assert.Equal(t, BreakerClosed, b.State(), "half of them failed")
			time.Sleep(30 * time.Second) // the window has moved past them all
			require.True(t, c.bad())
			require.True(t, c.ok())
			assert.Equal(t, BreakerClosed, b.State(), "2 outcomes")
			require.True(t, c.bad())
			assert.Equal(t, BreakerOpen, b.State(), "2 of 3 failed: 0.67 ≥ 0.6")

			time.Sleep(90 * time.Second)
			assert.Equal(t, BreakerHalfOpen, b.State())
			require.True(t, c.ok())
			require.True(t, c.ok())
			assert.Equal(t, BreakerHalfOpen, b.State(), "2 of 3 probes succeeded")
			release := make(chan struct{})
			done := make(chan error)
			go func() {
				done <- Do(t.Context(), Delays(), func(context.Context) error { <-release; return nil }, WithBreaker(b))
			}()
			synctest.Wait()
			assert.False(t, c.ok(), "over the probes: rejected")
			close(release)
			require.NoError(t, <-done)
			assert.Equal(t, BreakerClosed, b.State())
			assert.Equal(t, []string{"closed→open", "open→half-open", "half-open→closed"}, got)
		})
	})
	t.Run("failsafe-go 2 of 3", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		b := NewBreaker(BreakerClock(clock), BreakerRatio(2.0/3), BreakerMinCalls(3))
		c := breakerCalls{t, b, clock}
		c.bad()
		c.ok()
		assert.Equal(t, BreakerClosed, b.State())
		c.bad()
		assert.Equal(t, BreakerOpen, b.State())
	})
	t.Run("failsafe-go 3 of 4 never reached", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		b := NewBreaker(BreakerClock(clock), BreakerRatio(0.75), BreakerMinCalls(4))
		c := breakerCalls{t, b, clock}
		for range 20 {
			c.ok()
			c.bad()
			assert.Equal(t, BreakerClosed, b.State())
		}
	})
}

// TestBreakerWindow translates gobreaker v2's
// TestRollingWindowCircuitBreaker: outcomes leave the window as it slides,
// bucket by bucket.
func TestBreakerWindow(t *testing.T) {
	clock := NewFakeClock(epoch)
	b := NewBreaker(BreakerClock(clock), BreakerRatio(0.6), BreakerMinCalls(3), BreakerWindow(32*time.Second))
	c := breakerCalls{t, b, clock}
	for range 5 {
		c.ok()
		c.bad()
	}
	calls, failures := b.counts()
	assert.Equal(t, [2]uint64{10, 5}, [2]uint64{calls, failures})
	clock.Advance(30 * time.Second) // 15 buckets of 2s later: still in the window
	c.ok()
	calls, failures = b.counts()
	assert.Equal(t, [2]uint64{11, 5}, [2]uint64{calls, failures})
	clock.Advance(2 * time.Second) // the first bucket is discarded
	c.bad()
	calls, failures = b.counts()
	assert.Equal(t, [2]uint64{2, 1}, [2]uint64{calls, failures})
	assert.Equal(t, BreakerClosed, b.State())
	c.bad()
	assert.Equal(t, BreakerOpen, b.State(), "2 of 3 failed")
}

// TestBreakerHalfOpen translates failsafe-go's half-open tests with a
// success threshold (TestHalfOpenSuccessWithSuccessThreshold,
// TestHalfOpenFailureWithSuccessThreshold), its TestTryAcquirePermit
// (openstate_test.go) and TestRemainingDelayInHalfOpenState.
func TestBreakerHalfOpen(t *testing.T) {
	open := func(t *testing.T, probes int) (*Breaker, *FakeClock, breakerCalls) {
		clock := NewFakeClock(epoch)
		b := NewBreaker(BreakerClock(clock), BreakerMinCalls(1), BreakerProbes(probes), BreakerOpenPeriods(Constant(100*time.Millisecond)))
		c := breakerCalls{t, b, clock}
		c.bad()
		require.Equal(t, BreakerOpen, b.State())
		return b, clock, c
	}
	t.Run("3 successes close", func(t *testing.T) {
		b, clock, c := open(t, 3)
		clock.Advance(100 * time.Millisecond)
		for range 3 {
			assert.Equal(t, BreakerHalfOpen, b.State())
			require.True(t, c.ok())
		}
		assert.Equal(t, BreakerClosed, b.State())
	})
	t.Run("one failure opens", func(t *testing.T) {
		b, clock, c := open(t, 3)
		clock.Advance(100 * time.Millisecond)
		c.ok()
		c.bad()
		assert.Equal(t, BreakerOpen, b.State())
	})
	t.Run("acquire a permit", func(t *testing.T) {
		b, clock, c := open(t, 1)
		assert.False(t, c.ok())
		clock.Advance(110 * time.Millisecond)
		assert.True(t, c.ok())
		assert.Equal(t, BreakerClosed, b.State())
	})
	t.Run("no delay left in half-open", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := NewBreaker(BreakerMinCalls(1), BreakerOpenPeriods(Constant(time.Second)))
			c := breakerCalls{t, b, nil}
			c.bad()
			time.Sleep(time.Second)
			release := make(chan struct{})
			go func() {
				_ = Do(t.Context(), Delays(), func(context.Context) error { <-release; return nil }, WithBreaker(b))
			}()
			synctest.Wait()
			outer := NewFakeClock(epoch)
			err := Do(t.Context(), Constant(time.Millisecond).Take(1), func(ctx context.Context) error {
				return Do(ctx, Delays(), func(context.Context) error { return nil }, WithBreaker(b))
			}, WithClock(outer))
			assert.ErrorIs(t, err, ErrBreakerOpen)
			assert.Equal(t, []time.Duration{time.Millisecond}, outer.Sleeps(), "a pushback of 0: the schedule's delay")
			close(release)
		})
	})
}

// TestBreakerSchedule checks the open periods: the k-th in a row is the
// k-th delay of the schedule, the last is kept when it runs out, and
// closing starts again from the first.
func TestBreakerSchedule(t *testing.T) {
	clock := NewFakeClock(epoch)
	b := NewBreaker(BreakerClock(clock), BreakerMinCalls(1), BreakerOpenPeriods(Delays(time.Second, 2*time.Second, 5*time.Second)))
	c := breakerCalls{t, b, clock}
	openFor := func() time.Duration {
		t.Helper()
		require.Equal(t, BreakerOpen, b.State())
		left, open := b.blocks(0)
		require.True(t, open)
		clock.Advance(left)
		require.Equal(t, BreakerHalfOpen, b.State())
		return left
	}
	c.bad()
	var got []time.Duration
	for range 4 {
		got = append(got, openFor())
		c.bad() // the probe fails
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 5 * time.Second}, got)
	got = append(got[:0], openFor())
	c.ok()
	require.Equal(t, BreakerClosed, b.State())
	c.bad()
	got = append(got, openFor())
	assert.Equal(t, []time.Duration{5 * time.Second, time.Second}, got, "after closing, the first delay again")

	t.Run("an empty schedule half-opens at once", func(t *testing.T) {
		b := NewBreaker(BreakerClock(clock), BreakerMinCalls(1), BreakerOpenPeriods(Delays()))
		c := breakerCalls{t, b, clock}
		c.bad()
		assert.Equal(t, BreakerHalfOpen, b.State())
	})
	t.Run("the default", func(t *testing.T) {
		b := NewBreaker(BreakerClock(clock), BreakerMinCalls(1))
		c := breakerCalls{t, b, clock}
		c.bad()
		var got []time.Duration
		for range 7 {
			got = append(got, openFor2(t, b, clock))
			c.bad()
		}
		assert.Equal(t, []time.Duration{5 * time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Second,
			5 * time.Second, 5 * time.Second, 5 * time.Second}, got)
	})
}

func openFor2(t *testing.T, b *Breaker, clock *FakeClock) time.Duration {
	t.Helper()
	left, open := b.blocks(0)
	require.True(t, open)
	clock.Advance(left)
	return left
}

// TestBreakerCancelled checks that callers who give up count for nothing:
// a burst of calls whose context ends during their attempt trips nothing,
// and a half-open probe cancelled so gives its slot back. Translates, and
// reverses, gobreaker v2's TestPanicInRequest: a panic counts for neither
// here, where gobreaker counts it as a failure.
func TestBreakerCancelled(t *testing.T) {
	cancelled := func(t *testing.T, b *Breaker, clock Clock) error {
		ctx, cancel := context.WithCancel(t.Context())
		return Do(ctx, Constant(0), func(ctx context.Context) error { cancel(); return ctx.Err() },
			WithBreaker(b), WithClock(clock))
	}
	t.Run("a burst trips nothing", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		b := NewBreaker(BreakerClock(clock), BreakerMinCalls(1))
		for range 100 {
			require.ErrorIs(t, cancelled(t, b, clock), context.Canceled)
		}
		assert.Equal(t, BreakerClosed, b.State())
		calls, _ := b.counts()
		assert.Zero(t, calls)
	})
	t.Run("a cancelled probe gives its slot back", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		b := NewBreaker(BreakerClock(clock), BreakerMinCalls(1), BreakerOpenPeriods(Constant(time.Second)))
		c := breakerCalls{t, b, clock}
		c.bad()
		clock.Advance(time.Second)
		require.ErrorIs(t, cancelled(t, b, clock), context.Canceled)
		assert.Equal(t, BreakerHalfOpen, b.State())
		assert.True(t, c.ok(), "the slot is free again")
		assert.Equal(t, BreakerClosed, b.State())
	})
	t.Run("a panicking probe gives its slot back", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		b := NewBreaker(BreakerClock(clock), BreakerMinCalls(1), BreakerOpenPeriods(Constant(time.Second)))
		c := breakerCalls{t, b, clock}
		c.bad()
		clock.Advance(time.Second)
		assert.PanicsWithValue(t, "oops", func() {
			_ = Do(t.Context(), Constant(0), func(context.Context) error { panic("oops") }, WithBreaker(b), WithClock(clock))
		})
		assert.True(t, c.ok())
		assert.Equal(t, BreakerClosed, b.State())
	})
}

// TestBreakerGeneration translates gobreaker v2's TestGeneration: an
// outcome that arrives after the Breaker changed state since its attempt
// was let through counts for nothing.
func TestBreakerGeneration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBreaker(BreakerMinCalls(2), BreakerProbes(2), BreakerOpenPeriods(Constant(time.Second)))
		c := breakerCalls{t, b, nil}
		release := make(chan struct{})
		done := make(chan error)
		go func() { // let through while closed, answers late
			done <- Do(t.Context(), Delays(), func(context.Context) error { <-release; return nil }, WithBreaker(b))
		}()
		synctest.Wait()
		c.bad()
		c.bad()
		require.Equal(t, BreakerOpen, b.State())
		time.Sleep(time.Second)
		require.True(t, c.ok(), "the first of 2 probes")
		close(release)
		require.NoError(t, <-done)
		assert.Equal(t, BreakerHalfOpen, b.State(), "the late success is not a probe's")
		require.True(t, c.ok())
		assert.Equal(t, BreakerClosed, b.State())
	})
}

// TestBreakerInParallel translates gobreaker v2's
// TestCircuitBreakerInParallel: concurrent successes are all counted.
func TestBreakerInParallel(t *testing.T) {
	clock := NewFakeClock(epoch)
	b := NewBreaker(BreakerClock(clock))
	const goroutines, calls = 10, 1000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range calls {
				_ = Do(t.Context(), Delays(), func(context.Context) error { return nil }, WithBreaker(b), WithClock(clock))
			}
		})
	}
	wg.Wait()
	n, failures := b.counts()
	assert.Equal(t, uint64(goroutines*calls), n)
	assert.Zero(t, failures)
}

// TestBreakerWhatCounts pins what counts as a success and as a failure.
func TestBreakerWhatCounts(t *testing.T) {
	clock := NewFakeClock(epoch)
	b := NewBreaker(BreakerClock(clock), BreakerMinCalls(1000))
	do := func(fn func(context.Context) error, opts ...Option) {
		_ = Do(t.Context(), Constant(0).Take(1), fn, append(opts, WithBreaker(b), WithClock(clock))...)
	}
	errNotFound := errors.New("not found")
	do(func(context.Context) error { return nil })                                                  // success
	do(func(context.Context) error { return Permanent(errBoom) })                                   // success: an answer
	do(func(context.Context) error { return errNotFound }, If(func(e error) bool { return false })) // success: an answer
	do(func(context.Context) error { return RetryAfter(errBoom, -1) })                              // failure: pushback
	do(func(context.Context) error { return errBoom })                                              // 2 failures: retried once
	calls, failures := b.counts()
	assert.Equal(t, [2]uint64{6, 3}, [2]uint64{calls, failures})
	synctest.Test(t, func(t *testing.T) {
		b := NewBreaker(BreakerMinCalls(1000))
		_ = Do(t.Context(), Delays(), func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
			AttemptTimeout(time.Second), WithBreaker(b), If(func(error) bool { return false }))
		calls, failures := b.counts()
		assert.Equal(t, [2]uint64{1, 1}, [2]uint64{calls, failures}, "an attempt's own timeout is a failure, whatever If says")
	})
}

// TestBreakerRetries checks a Retry through a Breaker: an open Breaker ends
// the call at once, without waiting for a retry it would not let through
// and without a Budget token; one that half-opens during the wait lets the
// retry through as a probe.
func TestBreakerRetries(t *testing.T) {
	t.Run("open: no wait, no token", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		b := NewBreaker(BreakerClock(clock), BreakerMinCalls(2), BreakerOpenPeriods(Constant(time.Minute)))
		budget := NewBudget(0, 10)
		calls := 0
		err := Do(t.Context(), Constant(time.Second).Take(10), func(context.Context) error { calls++; return errBoom },
			WithBreaker(b), WithClock(clock), WithBudget(budget))
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.ErrorIs(t, err, ErrBreakerOpen)
		assert.ErrorIs(t, err, errBoom)
		assert.Equal(t, 2, e.Attempts)
		assert.Equal(t, 2, calls)
		assert.Equal(t, []time.Duration{time.Second}, clock.Sleeps())
		assert.Equal(t, 9.0, budget.Tokens(), "one retry made, none refused")
	})
	t.Run("half-open after the wait: a probe", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		b := NewBreaker(BreakerClock(clock), BreakerMinCalls(1), BreakerOpenPeriods(Constant(time.Second)))
		calls := 0
		err := Do(t.Context(), Constant(2*time.Second), func(context.Context) error {
			if calls++; calls == 1 {
				return errBoom
			}
			return nil
		}, WithBreaker(b), WithClock(clock))
		require.NoError(t, err)
		assert.Equal(t, 2, calls)
		assert.Equal(t, BreakerClosed, b.State())
	})
	t.Run("rejected after the wait: the token goes back", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := NewBreaker(BreakerMinCalls(1), BreakerOpenPeriods(Constant(time.Second)))
			budget := NewBudget(0, 10)
			c := breakerCalls{t, b, nil}
			c.bad() // open for 1s
			time.Sleep(time.Second)
			release := make(chan struct{})
			go func() { // takes the only probe slot
				_ = Do(t.Context(), Delays(), func(context.Context) error { <-release; return nil }, WithBreaker(b))
			}()
			synctest.Wait()
			calls := 0
			err := Do(t.Context(), Constant(time.Millisecond), func(context.Context) error { calls++; return errBoom },
				WithBreaker(b), WithBudget(budget))
			assert.ErrorIs(t, err, ErrBreakerOpen)
			assert.Zero(t, calls)
			assert.Equal(t, 10.0, budget.Tokens())
			close(release)
		})
	})
}

// TestBreakerOuterPushback checks that an outer Retry around a call that an
// open Breaker stopped waits for the rest of the open period.
func TestBreakerOuterPushback(t *testing.T) {
	clock := NewFakeClock(epoch)
	b := NewBreaker(BreakerClock(clock), BreakerMinCalls(1), BreakerOpenPeriods(Constant(time.Minute)))
	breakerCalls{t, b, clock}.bad()
	clock.Advance(15 * time.Second)
	outer := NewFakeClock(epoch)
	var reasons []error
	_ = Do(t.Context(), Constant(time.Millisecond).Take(1), func(ctx context.Context) error {
		return Do(ctx, Delays(), func(context.Context) error { return nil }, WithBreaker(b), WithClock(clock),
			OnDone(func(o Outcome) { reasons = append(reasons, o.Reason) }))
	}, WithClock(outer))
	assert.Equal(t, []time.Duration{45 * time.Second}, outer.Sleeps())
	require.Len(t, reasons, 2)
	assert.ErrorIs(t, reasons[0], ErrBreakerOpen)
}

func TestBreakerBadInput(t *testing.T) {
	for _, tt := range []struct {
		name, want string
		f          func()
	}{
		{"ratio 0", "retry: BreakerRatio: ratio 0 is not in (0, 1]", func() { BreakerRatio(0) }},
		{"ratio above 1", "retry: BreakerRatio: ratio 1.5 is not in (0, 1]", func() { BreakerRatio(1.5) }},
		{"ratio NaN", "retry: BreakerRatio: ratio NaN is not in (0, 1]", func() { BreakerRatio(nan()) }},
		{"min calls 0", "retry: BreakerMinCalls: count 0 is less than 1", func() { BreakerMinCalls(0) }},
		{"probes 0", "retry: BreakerProbes: count 0 is less than 1", func() { BreakerProbes(0) }},
		{"window 0", "retry: BreakerWindow: window 0s is not positive", func() { BreakerWindow(0) }},
		{"nil schedule", "retry: BreakerOpenPeriods of a nil Schedule", func() { BreakerOpenPeriods(nil) }},
		{"nil hook", "retry: OnStateChange: nil function", func() { OnStateChange(nil) }},
		{"nil Breaker", "retry: WithBreaker: nil Breaker", func() { WithBreaker(nil) }},
	} {
		t.Run(tt.name, func(t *testing.T) { assert.PanicsWithValue(t, tt.want, tt.f) })
	}
	assert.Equal(t, "BreakerState(7)", BreakerState(7).String())
}

// TestBreakerHedge checks that each attempt Hedge starts asks the Breaker:
// a half-open Breaker with one probe lets the first attempt through and
// not the hedge, and a loser Hedge cancels gives its probe slot back.
func TestBreakerHedge(t *testing.T) {
	halfOpen := func(t *testing.T, probes int) *Breaker {
		b := NewBreaker(BreakerMinCalls(1), BreakerProbes(probes), BreakerOpenPeriods(Constant(time.Second)))
		breakerCalls{t, b, nil}.bad()
		time.Sleep(time.Second)
		require.Equal(t, BreakerHalfOpen, b.State())
		return b
	}
	t.Run("one probe: no hedge", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := halfOpen(t, 1)
			var calls atomic.Int32
			v, err := Hedge(t.Context(), Constant(10*time.Millisecond).Take(3), func(ctx context.Context) (int, error) {
				calls.Add(1)
				time.Sleep(50 * time.Millisecond)
				return 7, nil
			}, WithBreaker(b))
			require.NoError(t, err)
			assert.Equal(t, 7, v)
			assert.Equal(t, int32(1), calls.Load(), "the hedge was not let through")
			assert.Equal(t, BreakerClosed, b.State())
		})
	})
	t.Run("a loser gives its slot back", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := halfOpen(t, 2)
			var calls atomic.Int32
			_, err := Hedge(t.Context(), Constant(10*time.Millisecond).Take(1), func(ctx context.Context) (int, error) {
				if calls.Add(1) == 1 {
					<-ctx.Done() // the first loses to the hedge
					return 0, ctx.Err()
				}
				return 1, nil
			}, WithBreaker(b))
			require.NoError(t, err)
			synctest.Wait()
			assert.Equal(t, BreakerHalfOpen, b.State(), "1 of 2 probes succeeded, the loser counts for nothing")
			assert.True(t, breakerCalls{t, b, nil}.ok(), "its slot is free")
			assert.Equal(t, BreakerClosed, b.State())
		})
	})
	t.Run("open: no attempt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := NewBreaker(BreakerMinCalls(1), BreakerOpenPeriods(Constant(time.Minute)))
			breakerCalls{t, b, nil}.bad()
			var outcome Outcome
			_, err := Hedge(t.Context(), Constant(time.Millisecond), func(ctx context.Context) (int, error) {
				t.Error("called")
				return 0, nil
			}, WithBreaker(b), OnDone(func(o Outcome) { outcome = o }))
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.ErrorIs(t, err, ErrBreakerOpen)
			assert.Zero(t, e.Attempts)
			assert.ErrorIs(t, outcome.Reason, ErrBreakerOpen)
		})
	})
}
