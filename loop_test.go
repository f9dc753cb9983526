package retry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestGatedCall checks that a call whose only options are WithThrottle,
// WithBreaker, WithLimiter and WithClock (gatedCall's first attempt) decides exactly as
// the general path does: the same script of outcomes, run once through
// each, gives the same errors, attempts, Breaker states and Throttle
// probabilities. A no-op OnRetry sends the second run the general way.
func TestGatedCall(t *testing.T) {
	run := func(general bool) []string {
		clock := NewFakeClock(epoch)
		br := NewBreaker(BreakerClock(clock), BreakerMinCalls(4), BreakerOpenPeriods(Constant(time.Second)))
		th := NewThrottle(ThrottleClock(clock), ThrottleK(8), ThrottleRand(rand.NewPCG(1, 2)))
		lim := NewLimiter(LimiterClock(clock))
		opts := []Option{WithBreaker(br), WithThrottle(th), WithLimiter(lim), WithClock(clock)}
		if general {
			opts = append(opts, OnRetry(func(Attempt) {}))
		}
		var log []string
		outcomes := []error{nil, errBoom, errBoom, nil, Permanent(errBoom), errBoom, errBoom, errBoom, errBoom, errBoom, nil}
		for i := range 60 {
			calls := 0
			ctx, cancel := context.WithCancel(context.Background())
			if i%13 == 12 {
				cancel() // a call whose caller gave up before it started
			}
			err := func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("panic %v", r)
					}
				}()
				return Do(ctx, Constant(100*time.Millisecond).Take(2), func(context.Context) error {
					calls++
					if i%17 == 16 {
						panic("boom") // its probe or ticket counts for nothing
					}
					return outcomes[(i+calls)%len(outcomes)]
				}, opts...)
			}()
			cancel()
			log = append(log, fmt.Sprintf("%d: %d calls, %v, %v, p=%.3f, limit %d, in flight %d", i, calls, err, br.State(), th.Probability(), lim.Limit(), lim.InFlight()))
			clock.Advance(300 * time.Millisecond)
		}
		return log
	}
	assert.Equal(t, run(true), run(false))
}
