package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// A message consumer guards its handler with a Breaker without Retry: it
// asks the Breaker first, and reports each message's outcome.
func ExampleBreaker_Allow() {
	clock := retry.NewFakeClock(epoch)
	b := retry.NewBreaker(retry.BreakerClock(clock), retry.BreakerMinCalls(4), retry.BreakerOpenPeriods(retry.Constant(time.Minute)))
	handle := func(msg int) error {
		if msg%2 == 0 {
			return errors.New("database unavailable")
		}
		return nil
	}
	ctx := context.Background()
	for msg := range 6 {
		p, err := b.Allow()
		if err != nil {
			fmt.Printf("message %d: put back: %v\n", msg, err)
			continue
		}
		err = handle(msg)
		p.Report(ctx, err) // or p.Success(), p.Failure(), p.Drop()
		fmt.Printf("message %d: %v\n", msg, err)
	}
	s := b.Snapshot()
	fmt.Printf("%v for %v: %d failures of %d\n", s.State, s.OpenFor, s.Failures, s.Requests)
	// Output:
	// message 0: database unavailable
	// message 1: <nil>
	// message 2: database unavailable
	// message 3: <nil>
	// message 4: database unavailable
	// message 5: put back: retry: circuit breaker open
	// open for 1m0s: 3 failures of 5
}

// A dependency that answers, but too slowly to be of use, opens a Breaker
// with BreakerSlowCall as one that fails would.
func ExampleBreakerSlowCall() {
	clock := retry.NewFakeClock(epoch)
	b := retry.NewBreaker(retry.BreakerClock(clock), retry.BreakerWindow(time.Minute), retry.BreakerMinCalls(4),
		retry.BreakerSlowCall(time.Second))
	for call := range 6 {
		err := retry.Do(context.Background(), retry.Delays(), func(context.Context) error {
			clock.Advance(2 * time.Second) // a slow answer
			return nil
		}, retry.WithBreaker(b), retry.WithClock(clock))
		fmt.Printf("call %d: %v\n", call, err)
	}
	// Output:
	// call 0: <nil>
	// call 1: <nil>
	// call 2: <nil>
	// call 3: <nil>
	// call 4: retry: gave up after 0 attempts: circuit breaker open
	// call 5: retry: gave up after 0 attempts: circuit breaker open
}
