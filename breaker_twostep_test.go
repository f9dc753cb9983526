package retry_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-b8c8f69d/retry"
)

var errDep = errors.New("dependency failed")

// TestBreakerAllow checks the two-step use: Allow, then a report, with the
// same transitions as inside Retry.
func TestBreakerAllow(t *testing.T) {
	clock := retry.NewFakeClock(epoch)
	b := retry.NewBreaker(retry.BreakerClock(clock), retry.BreakerMinCalls(4), retry.BreakerOpenPeriods(retry.Constant(time.Minute)))
	for range 2 {
		p, err := b.Allow()
		require.NoError(t, err)
		p.Success()
	}
	for range 2 {
		p, err := b.Allow()
		require.NoError(t, err)
		p.Failure()
	}
	assert.Equal(t, retry.BreakerOpen, b.State(), "2 failures of 4 reach the ratio 0.5")
	_, err := b.Allow()
	require.ErrorIs(t, err, retry.ErrBreakerOpen)
	// The pushback: an outer Retry waits out the open period.
	var waited []time.Duration
	calls := 0
	_ = retry.Do(context.Background(), retry.Constant(time.Second).Take(1), func(context.Context) error {
		calls++
		p, err := b.Allow()
		if err != nil {
			return err
		}
		p.Drop() // the probe's slot is free again
		return nil
	}, retry.WithClock(clock), retry.OnRetry(func(a retry.Attempt) { waited = append(waited, a.Delay) }))
	assert.Equal(t, []time.Duration{time.Minute}, waited)
	assert.Equal(t, 2, calls)
	assert.Equal(t, retry.BreakerHalfOpen, b.State(), "the outer Retry waited the minute on the clock")

	p, err := b.Allow()
	require.NoError(t, err)
	_, err = b.Allow()
	require.ErrorIs(t, err, retry.ErrBreakerOpen, "one probe at a time")
	p.Success()
	assert.Equal(t, retry.BreakerClosed, b.State())
	assert.Equal(t, retry.BreakerSnapshot{State: retry.BreakerClosed}, b.Snapshot(), "closing empties the window")

	var zero retry.BreakerPermit
	zero.Success() // reports nothing
	zero.Failure()
}

// TestBreakerReport checks that Report counts an error as an attempt of
// Retry, Do or Hedge would: inside Retry, and through Allow and Report, the
// same script of outcomes gives the same counts.
func TestBreakerReport(t *testing.T) {
	outcomes := []struct {
		name   string
		cancel bool // the caller gives up during the attempt
		err    error
	}{
		{"success", false, nil},
		{"a retryable error", false, errDep},
		{"a Permanent error: the dependency answered", false, retry.Permanent(errDep)},
		{"a refusal: negative RetryAfter", false, retry.RetryAfter(errDep, -1)},
		{"a RetryAfter", false, retry.RetryAfter(errDep, time.Second)},
		{"a Permanent refusal", false, retry.Permanent(retry.RetryAfter(errDep, -1))},
		{"an error after the caller gave up: nothing", true, errDep},
		{"a success after the caller gave up: a success", true, nil},
	}
	for _, o := range outcomes {
		t.Run(o.name, func(t *testing.T) {
			inside := retry.NewBreaker(retry.BreakerMinCalls(100))
			ctx, cancel := context.WithCancel(context.Background())
			_ = retry.Do(ctx, retry.Delays(), func(context.Context) error {
				if o.cancel {
					cancel()
				}
				return o.err
			}, retry.WithBreaker(inside))
			cancel()

			outside := retry.NewBreaker(retry.BreakerMinCalls(100))
			ctx, cancel = context.WithCancel(context.Background())
			p, err := outside.Allow()
			require.NoError(t, err)
			if o.cancel {
				cancel()
			}
			p.Report(ctx, o.err)
			cancel()
			assert.Equal(t, inside.Snapshot(), outside.Snapshot())
		})
	}
	t.Run("the script runs", func(t *testing.T) {
		b := retry.NewBreaker(retry.BreakerMinCalls(100))
		for _, o := range outcomes {
			p, _ := b.Allow()
			ctx, cancel := context.WithCancel(context.Background())
			if o.cancel {
				cancel()
			}
			p.Report(ctx, o.err)
			cancel()
		}
		assert.Equal(t, retry.BreakerSnapshot{State: retry.BreakerClosed, Requests: 7, Failures: 3, ConsecutiveFailures: 0}, b.Snapshot(),
			"failures: the retryable error, the refusal and the RetryAfter; the Permanent refusal answered")
	})
}

// TestBreakerForgottenReport checks that a permit never reported cannot
// wedge a half-open Breaker: after one window without a report, its probe
// is taken as lost, a new probe goes through, and the lost one's late
// report counts for nothing.
func TestBreakerForgottenReport(t *testing.T) {
	clock := retry.NewFakeClock(epoch)
	var changes []string
	b := retry.NewBreaker(retry.BreakerClock(clock), retry.BreakerMinCalls(1), retry.BreakerWindow(time.Minute),
		retry.BreakerOpenPeriods(retry.Constant(time.Second)),
		retry.OnStateChange(func(from, to retry.BreakerState) { changes = append(changes, from.String()+"→"+to.String()) }))
	p, err := b.Allow()
	require.NoError(t, err)
	p.Failure()
	clock.Advance(time.Second)
	forgotten, err := b.Allow()
	require.NoError(t, err, "half-open: a probe")
	for _, d := range []time.Duration{0, time.Second, 58 * time.Second} {
		clock.Advance(d)
		_, err = b.Allow()
		require.ErrorIs(t, err, retry.ErrBreakerOpen, "the probe is in flight")
	}
	clock.Advance(time.Second) // a window since the probe
	probe, err := b.Allow()
	require.NoError(t, err, "the forgotten probe is taken as lost")
	_, err = b.Allow()
	require.ErrorIs(t, err, retry.ErrBreakerOpen, "one probe again")
	forgotten.Failure() // late: counts for nothing
	assert.Equal(t, retry.BreakerHalfOpen, b.State())
	probe.Success()
	assert.Equal(t, retry.BreakerClosed, b.State())
	assert.Equal(t, []string{"closed→open", "open→half-open", "half-open→closed"}, changes)
}

// TestBreakerSnapshot checks the counts a snapshot shows.
func TestBreakerSnapshot(t *testing.T) {
	clock := retry.NewFakeClock(epoch)
	b := retry.NewBreaker(retry.BreakerClock(clock), retry.BreakerMinCalls(10), retry.BreakerOpenPeriods(retry.Constant(time.Minute)))
	report := func(outcomes ...bool) {
		for _, ok := range outcomes {
			p, err := b.Allow()
			require.NoError(t, err)
			if ok {
				p.Success()
			} else {
				p.Failure()
			}
		}
	}
	assert.Equal(t, retry.BreakerSnapshot{State: retry.BreakerClosed}, b.Snapshot())
	report(true, false, false, true, false, false, false)
	p, _ := b.Allow()
	p.Drop()
	assert.Equal(t, retry.BreakerSnapshot{State: retry.BreakerClosed, Requests: 7, Failures: 5, ConsecutiveFailures: 3}, b.Snapshot())
	report(true, false, false)
	assert.Equal(t, retry.BreakerSnapshot{State: retry.BreakerOpen, Requests: 10, Failures: 7, OpenFor: time.Minute}, b.Snapshot(),
		"tripped on the 10th outcome: the count of consecutive failures starts afresh")
	clock.Advance(20 * time.Second)
	assert.Equal(t, 40*time.Second, b.Snapshot().OpenFor)
	clock.Advance(40 * time.Second)
	assert.Equal(t, retry.BreakerSnapshot{State: retry.BreakerHalfOpen}, b.Snapshot(), "a minute later, the window has slid past them")
}

// TestBreakerSlowCall checks BreakerSlowCall: a dependency that answers
// every call, but most of them too slowly, opens the Breaker within one
// window; a healthy one, whose calls are now and then slow, never does in
// 30 minutes. Calls take their time on a FakeClock.
func TestBreakerSlowCall(t *testing.T) {
	const limit = 500 * time.Millisecond
	run := func(t *testing.T, d time.Duration, latency func(r *rand.Rand) time.Duration) (calls int, opened time.Duration) {
		clock := retry.NewFakeClock(epoch)
		// A minute's window: at about two calls a second, the default 5 s
		// window never holds BreakerMinCalls' 20 calls.
		b := retry.NewBreaker(retry.BreakerClock(clock), retry.BreakerWindow(time.Minute), retry.BreakerSlowCall(limit))
		r := rand.New(rand.NewPCG(1, 2))
		for clock.Now().Sub(epoch) < d {
			err := retry.Do(context.Background(), retry.Delays(), func(context.Context) error {
				calls++
				clock.Advance(latency(r))
				return nil
			}, retry.WithBreaker(b), retry.WithClock(clock))
			if errors.Is(err, retry.ErrBreakerOpen) {
				return calls, clock.Now().Sub(epoch)
			}
			require.NoError(t, err)
			clock.Advance(100 * time.Millisecond)
		}
		return calls, -1
	}
	t.Run("most calls slow, no error: opens within one window", func(t *testing.T) {
		calls, opened := run(t, 10*time.Minute, func(r *rand.Rand) time.Duration {
			if r.Float64() < 0.7 {
				return limit + time.Millisecond
			}
			return 10 * time.Millisecond
		})
		require.Positive(t, opened, "never opened in 10 minutes, %d calls", calls)
		assert.Less(t, opened, time.Minute, "opened after %v, %d calls", opened, calls)
	})
	t.Run("healthy: 30 minutes without a trip", func(t *testing.T) {
		calls, opened := run(t, 30*time.Minute, func(r *rand.Rand) time.Duration {
			if r.Float64() < 0.05 {
				return 2 * limit // now and then a slow call
			}
			return time.Duration(r.Int64N(int64(limit)))
		})
		assert.Equal(t, time.Duration(-1), opened, "opened after %d calls", calls)
		assert.Greater(t, calls, 3000)
	})
	t.Run("a slow probe reopens", func(t *testing.T) {
		clock := retry.NewFakeClock(epoch)
		b := retry.NewBreaker(retry.BreakerClock(clock), retry.BreakerSlowCall(limit), retry.BreakerMinCalls(1),
			retry.BreakerOpenPeriods(retry.Constant(time.Second)))
		p, _ := b.Allow()
		clock.Advance(limit + 1)
		p.Success()
		assert.Equal(t, retry.BreakerOpen, b.State(), "one slow call of one")
		clock.Advance(time.Second)
		p, err := b.Allow()
		require.NoError(t, err)
		clock.Advance(limit + 1)
		p.Success()
		assert.Equal(t, retry.BreakerOpen, b.State())
		clock.Advance(time.Second)
		p, _ = b.Allow()
		clock.Advance(limit) // not slower than the limit
		p.Success()
		assert.Equal(t, retry.BreakerClosed, b.State())
	})
}

// TestBreakerOpenPeriods checks that the k-th open period in a row is the
// k-th delay of the schedule, and that finding it costs O(1): 2 000 trips
// in a row range a hand-written schedule for a number of delays linear in
// 2 000 (walking it from its start at each trip took 2 001 000 steps).
func TestBreakerOpenPeriods(t *testing.T) {
	trips := func(b *retry.Breaker, clock *retry.FakeClock, n int) []time.Duration {
		var periods []time.Duration
		for range n {
			p, err := b.Allow()
			if err != nil {
				panic(err)
			}
			p.Failure()
			d := b.Snapshot().OpenFor
			periods = append(periods, d)
			clock.Advance(d)
		}
		return periods
	}
	t.Run("hand-written", func(t *testing.T) {
		steps := 0
		linear := func(yield func(time.Duration) bool) { // 1s, 2s, 3s, …
			for i := 1; ; i++ {
				steps++
				if !yield(time.Duration(i) * time.Second) {
					return
				}
			}
		}
		clock := retry.NewFakeClock(epoch)
		b := retry.NewBreaker(retry.BreakerClock(clock), retry.BreakerMinCalls(1), retry.BreakerOpenPeriods(linear))
		const n = 2000
		periods := trips(b, clock, n)
		for k, d := range periods {
			if d != time.Duration(k+1)*time.Second {
				t.Fatalf("open period %d: %v, want %v", k+1, d, time.Duration(k+1)*time.Second)
			}
		}
		assert.LessOrEqual(t, steps, 4*n+16, "steps ranged for %d open periods", n)
		// Closing ends the streak: the next one starts from the first delay.
		p, _ := b.Allow()
		p.Success()
		require.Equal(t, retry.BreakerClosed, b.State())
		assert.Equal(t, []time.Duration{time.Second, 2 * time.Second}, trips(b, clock, 2))
	})
	t.Run("built-in", func(t *testing.T) {
		clock := retry.NewFakeClock(epoch)
		b := retry.NewBreaker(retry.BreakerClock(clock), retry.BreakerMinCalls(1),
			retry.BreakerOpenPeriods(retry.Exponential(time.Second).Take(3)))
		assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second},
			trips(b, clock, 5), "the last delay once the schedule has run out")
	})
	t.Run("none", func(t *testing.T) {
		clock := retry.NewFakeClock(epoch)
		b := retry.NewBreaker(retry.BreakerClock(clock), retry.BreakerMinCalls(1), retry.BreakerOpenPeriods(retry.Delays()))
		assert.Equal(t, []time.Duration{0, 0}, trips(b, clock, 2), "a schedule without delays half-opens at once")
	})
}

// TestBreakerZero checks that a Breaker not made by NewBreaker is refused
// with a retry: message, where it is first used.
func TestBreakerZero(t *testing.T) {
	var b retry.Breaker
	assert.PanicsWithValue(t, "retry: WithBreaker: Breaker not made by NewBreaker", func() { retry.WithBreaker(&b) })
	assert.PanicsWithValue(t, "retry: Breaker.State: Breaker not made by NewBreaker", func() { b.State() })
	assert.PanicsWithValue(t, "retry: Breaker.Allow: Breaker not made by NewBreaker", func() { _, _ = b.Allow() })
	assert.PanicsWithValue(t, "retry: Breaker.Snapshot: Breaker not made by NewBreaker", func() { b.Snapshot() })
	assert.PanicsWithValue(t, "retry: BreakerSlowCall: duration 0s is not positive", func() { retry.BreakerSlowCall(0) })
}
