package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// Count calls by how they ended, for metrics.
func ExampleOnDone() {
	outcomes := map[string]int{}
	record := retry.OnDone(func(o retry.Outcome) {
		switch {
		case o.Err == nil:
			outcomes["success"]++
		case o.Reason == nil:
			outcomes["not retried"]++
		case errors.Is(o.Reason, retry.ErrExhausted):
			outcomes["exhausted"]++
		default:
			outcomes["other"]++
		}
		fmt.Printf("%d attempt(s) in %v: %v\n", o.Attempts, o.Elapsed, o.Err)
	})
	ctx := context.Background()
	s := retry.Constant(time.Second).Take(2)
	clock := retry.WithClock(retry.NewFakeClock(epoch))
	_, _ = retry.Retry(ctx, s, flaky(0), clock, record)
	_, _ = retry.Retry(ctx, s, flaky(1), clock, record)
	_, _ = retry.Retry(ctx, s, flaky(5), clock, record)
	_ = retry.Do(ctx, s, func(context.Context) error { return retry.Permanent(errUnavailable) }, clock, record)
	fmt.Println(outcomes)
	// Output:
	// 1 attempt(s) in 0s: <nil>
	// 2 attempt(s) in 1s: <nil>
	// 3 attempt(s) in 2s: retry: gave up after 3 attempts: schedule exhausted: last error: service unavailable
	// 1 attempt(s) in 0s: service unavailable
	// map[exhausted:1 not retried:1 success:2]
}

// Give up once a minute has gone, without cutting an attempt short.
func ExampleMaxElapsed() {
	clock := retry.NewFakeClock(epoch)
	_, err := retry.Retry(context.Background(), retry.Exponential(10*time.Second), func(context.Context) (int, error) {
		fmt.Println("attempt at", clock.Now().Sub(epoch))
		clock.Advance(5 * time.Second) // each attempt takes 5 s
		return 0, errUnavailable
	}, retry.WithClock(clock), retry.MaxElapsed(time.Minute))
	fmt.Println(err)
	fmt.Println("gave up at", clock.Now().Sub(epoch))
	// Output:
	// attempt at 0s
	// attempt at 15s
	// attempt at 40s
	// retry: gave up after 3 attempts: max elapsed time reached: last error: service unavailable
	// gave up at 45s
}

// Poll a job until it is no longer pending.
func ExampleIfValue() {
	clock := retry.NewFakeClock(epoch)
	states := []string{"pending", "pending", "done"}
	polls := 0
	state, err := retry.Retry(context.Background(), retry.Constant(time.Second).Take(5),
		func(context.Context) (string, error) {
			polls++
			return states[polls-1], nil
		},
		retry.WithClock(clock),
		retry.IfValue(func(state string) bool { return state == "pending" }))
	fmt.Println(state, err, polls)
	// Output: done <nil> 3
}

// A job that stays pending: the last value comes back with the error.
func ExampleIfValue_givingUp() {
	clock := retry.NewFakeClock(epoch)
	state, err := retry.Retry(context.Background(), retry.Constant(time.Second).Take(2),
		func(context.Context) (string, error) { return "pending", nil },
		retry.WithClock(clock),
		retry.IfValue(func(state string) bool { return state == "pending" }))
	var re *retry.Error
	errors.As(err, &re)
	fmt.Println(state, "|", err, "|", re.Last)
	// Output: pending | retry: gave up after 3 attempts: schedule exhausted | <nil>
}

// Retry a rate-limit error twice at most, other errors on the whole
// schedule.
func ExampleMaxRetriesIf() {
	errRateLimited := errors.New("429 too many requests")
	clock := retry.NewFakeClock(epoch)
	errs := []error{errUnavailable, errRateLimited, errUnavailable, errRateLimited, errRateLimited, nil}
	calls := 0
	err := retry.Do(context.Background(), retry.Constant(time.Second).Take(10), func(context.Context) error {
		calls++
		return errs[calls-1]
	}, retry.WithClock(clock), retry.MaxRetriesIf(2, func(err error) bool { return errors.Is(err, errRateLimited) }))
	fmt.Println(calls, err)
	fmt.Println(errors.Is(err, retry.ErrExhausted), errors.Is(err, errRateLimited))
	// Output:
	// 5 retry: gave up after 5 attempts: schedule exhausted: last error: 429 too many requests
	// true true
}
