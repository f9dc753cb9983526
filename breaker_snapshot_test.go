package retry_test

import (
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
