package retry

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

// lockoutRun offers perSecond one-attempt calls a second, evenly spaced, to
// th on clock for d, against a dependency that answers them if up, and
// returns how many th let through.
func lockoutRun(t *testing.T, th *Throttle, clock *FakeClock, perSecond int, d time.Duration, up bool) (offered, through int) {
	t.Helper()
	gap := time.Second / time.Duration(perSecond)
	for range int(d / gap) {
		clock.Advance(gap)
		offered++
		_ = Do(t.Context(), Delays(), func(context.Context) error {
			through++
			if up {
				return nil
			}
			return errBoom
		}, WithThrottle(th), WithClock(clock))
	}
	return offered, through
}

// TestThrottleNeverLocksOut checks that a Throttle with its defaults lets
// the calls through again soon after a dependency that was hard down
// answers again, however long it was down and whether or not the Throttle
// had seen it healthy first: from 5 s after the recovery on (with the
// default window), every second lets through at least 90% of the attempts.
func TestThrottleNeverLocksOut(t *testing.T) {
	const perSecond = 50
	for _, tt := range []struct {
		name            string
		healthy, outage time.Duration
		window          time.Duration // 0: the default
		within          int           // seconds after the recovery
	}{
		{"cold start, 5s outage", 0, 5 * time.Second, 0, 5},
		{"cold start, 30-minute outage", 0, 30 * time.Minute, 0, 5},
		{"after 5 minutes healthy, 30-minute outage", 5 * time.Minute, 30 * time.Minute, 0, 5},
		{"after 5 minutes healthy, 20s outage", 5 * time.Minute, 20 * time.Second, 0, 5},
		// A longer window takes about half of it.
		{"1-minute window, 30-minute outage", 5 * time.Minute, 30 * time.Minute, time.Minute, 35},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := NewFakeClock(epoch)
			opts := []ThrottleOption{ThrottleClock(clock), ThrottleRand(rand.NewPCG(7, 8))}
			if tt.window > 0 {
				opts = append(opts, ThrottleWindow(tt.window))
			}
			th := NewThrottle(opts...)
			lockoutRun(t, th, clock, perSecond, tt.healthy, true)
			lockoutRun(t, th, clock, perSecond, tt.outage, false)
			var first []int // let through in each second before, for the message
			for range tt.within {
				_, through := lockoutRun(t, th, clock, perSecond, time.Second, true)
				first = append(first, through)
			}
			for s := tt.within; s < tt.within+60; s++ {
				offered, through := lockoutRun(t, th, clock, perSecond, time.Second, true)
				if through < offered*9/10 {
					t.Fatalf("second %d after the recovery: %d of %d let through, want at least 90%% (the seconds before: %v of %d each; p now %.3f)",
						s, through, offered, first, perSecond, th.Probability())
				}
			}
		})
	}
}
