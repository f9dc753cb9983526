package retry_test

import (
	"context"
	"fmt"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

func ExampleFakeClock() {
	// The zero FakeClock is ready to use; its time starts at the zero
	// time.Time, which suits tests that only look at the waits.
	var clock retry.FakeClock
	_ = retry.Do(context.Background(), retry.Exponential(time.Second).Take(3), func(context.Context) error {
		return errUnavailable
	}, retry.WithClock(&clock))
	fmt.Println(clock.Sleeps(), clock.Now().Sub(time.Time{}))
	// Output: [1s 2s 4s] 7s
}
