package retry_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

func ExampleNewThrottle() {
	clock := retry.NewFakeClock(epoch)
	// One Throttle for all the calls to one dependency. The clock and the
	// seeded source make this example repeatable; in production, the
	// defaults (K = 2, a 5-second window, the real clock) need no options.
	throttle := retry.NewThrottle(retry.ThrottleClock(clock), retry.ThrottleRand(rand.NewPCG(1, 2)))
	// 100 calls a second for 10 seconds, each of one attempt.
	run := func(up bool) (sent, throttled int) {
		for range 1000 {
			clock.Advance(10 * time.Millisecond)
			err := retry.Do(context.Background(), retry.Delays(), func(context.Context) error {
				sent++
				if !up {
					return context.DeadlineExceeded
				}
				return nil
			}, retry.WithThrottle(throttle), retry.WithClock(clock))
			if errors.Is(err, retry.ErrThrottled) {
				throttled++
			}
		}
		return sent, throttled
	}
	sent, throttled := run(true)
	fmt.Printf("up:        %d attempts sent, %d calls throttled\n", sent, throttled)
	sent, throttled = run(false)
	fmt.Printf("down:      %d attempts sent, %d calls throttled\n", sent, throttled)
	fmt.Printf("rejection probability now: %.2f\n", throttle.Probability())
	sent, throttled = run(true)
	fmt.Printf("up again:  %d attempts sent, %d calls throttled\n", sent, throttled)
	fmt.Printf("rejection probability now: %.2f\n", throttle.Probability())
	// Output:
	// up:        1000 attempts sent, 0 calls throttled
	// down:      421 attempts sent, 579 calls throttled
	// rejection probability now: 0.90
	// up again:  815 attempts sent, 185 calls throttled
	// rejection probability now: 0.00
}

func ExampleNewBreaker() {
	clock := retry.NewFakeClock(epoch)
	breaker := retry.NewBreaker(
		retry.BreakerRatio(0.5),  // opens when half the outcomes in the window failed,
		retry.BreakerMinCalls(4), // once there are at least 4,
		retry.BreakerWindow(time.Minute),
		retry.BreakerProbes(1), // and lets 1 probe through when half-open;
		retry.BreakerOpenPeriods(retry.Exponential(5*time.Second).Cap(2*time.Minute)), // open 5s, then 10s, …
		retry.BreakerClock(clock),
		retry.OnStateChange(func(from, to retry.BreakerState) { fmt.Println("breaker:", from, "→", to) }),
	)
	call := func(err error) error {
		return retry.Do(context.Background(), retry.Constant(time.Second).Take(5),
			func(context.Context) error { return err }, retry.WithBreaker(breaker), retry.WithClock(clock))
	}
	// The fourth failure opens the breaker: the call stops at once.
	err := call(errUnavailable)
	fmt.Println(errors.Is(err, retry.ErrBreakerOpen), breaker.State())
	// Open: no attempt is made, and no wait.
	err = call(nil)
	var e *retry.Error
	if errors.As(err, &e) {
		fmt.Println(e.Attempts, "attempts:", err)
	}
	clock.Advance(5 * time.Second)
	fmt.Println(call(errUnavailable) != nil, breaker.State()) // the probe fails: open for 10s
	clock.Advance(10 * time.Second)
	fmt.Println(call(nil), breaker.State())
	// Output:
	// breaker: closed → open
	// true open
	// 0 attempts: retry: gave up after 0 attempts: circuit breaker open
	// breaker: open → half-open
	// breaker: half-open → open
	// true open
	// breaker: open → half-open
	// breaker: half-open → closed
	// <nil> closed
}
