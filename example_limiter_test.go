package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

func ExampleWithLimiter() {
	// One Limiter for all the calls to one dependency; it starts at 2
	// attempts in flight here, to show a refusal.
	limiter := retry.NewLimiter(retry.LimiterInitial(2))
	ctx := context.Background()
	call := func() error {
		return retry.Do(ctx, retry.Exponential(100*time.Millisecond).Take(3), func(context.Context) error {
			fmt.Println("in flight:", limiter.InFlight())
			return nil
		}, retry.WithLimiter(limiter))
	}
	_ = call()
	// Two requests of another kind hold both permits.
	p1, _ := limiter.TryAcquire()
	p2, _ := limiter.TryAcquire()
	err := call()
	fmt.Println(errors.Is(err, retry.ErrLimited))
	p1.Success()
	p2.Success()
	_ = call()
	// Output:
	// in flight: 1
	// true
	// in flight: 1
}

func ExampleLimiter_Acquire() {
	limiter := retry.NewLimiter()
	// Around work that is not a Retry call: hold a permit while it runs,
	// and say how it ended.
	permit, err := limiter.Acquire(context.Background())
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	fmt.Println("limit:", limiter.Limit(), "in flight:", limiter.InFlight())
	permit.Success() // or Failure() for an overload signal, Drop() if the caller gave up
	fmt.Println("in flight:", limiter.InFlight())
	// Output:
	// limit: 20 in flight: 1
	// in flight: 0
}
