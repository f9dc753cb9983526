package retry_test

import (
	"context"
	"fmt"

	"github.com/seed-b8c8f69d/retry"
)

func ExampleBudget_Tokens() {
	budget := retry.NewBudget(0.1, 10)
	clock := retry.NewFakeClock(epoch)
	// Three requests to a dependency that is down, each retried twice: six
	// tokens spent; the first deposit of 0.1 is lost to the full reserve, the
	// other two are kept, so 10 − 6 + 0.2 are left.
	for range 3 {
		_ = retry.Do(context.Background(), retry.Constant(0).Take(2), func(context.Context) error {
			return errUnavailable
		}, retry.WithBudget(budget), retry.WithClock(clock))
	}
	// A metrics gauge reads the balance; its whole part is the retries left.
	fmt.Printf("%.1f tokens left\n", budget.Tokens())
	// Output: 4.2 tokens left
}

func ExampleBudget_String() {
	budget := retry.NewBudget(0.1, 10)
	_ = retry.Do(context.Background(), retry.Constant(0).Take(3), func(context.Context) error {
		return errUnavailable
	}, retry.WithBudget(budget), retry.WithClock(retry.NewFakeClock(epoch)))
	fmt.Println(budget)
	// Output: retry.Budget{tokens: 7/10, ratio: 0.1}
}

// A loop of one's own (a message consumer's redelivery, another SDK's
// retryer) spends the same Budget as Retry: Deposit once per call, Withdraw
// before each retry, and no retry when Withdraw says no.
func ExampleBudget_Withdraw() {
	budget := retry.NewBudget(0.1, 2)
	for call := 1; call <= 3; call++ {
		budget.Deposit()
		attempts := 1
		for attempts < 3 && budget.Withdraw() { // the dependency keeps failing
			attempts++
		}
		fmt.Printf("call %d: %d attempts, %.1f tokens left\n", call, attempts, budget.Tokens())
	}
	// Output:
	// call 1: 3 attempts, 0.0 tokens left
	// call 2: 1 attempts, 0.1 tokens left
	// call 3: 1 attempts, 0.2 tokens left
}
