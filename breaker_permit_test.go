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
