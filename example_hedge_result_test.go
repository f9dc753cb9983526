package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// OnHedgeDone tells which attempt won: here the first attempt fails, so
// the first hedge (attempt 2) starts at once and wins.
func ExampleOnHedgeDone() {
	clock := retry.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	calls := 0
	v, err := retry.Hedge(context.Background(), retry.Constant(50*time.Millisecond).Take(2),
		func(context.Context) (string, error) {
			calls++
			if calls == 1 {
				return "", errors.New("connection reset")
			}
			return "ok", nil
		},
		retry.WithClock(clock),
		retry.OnHedgeDone(func(o retry.Outcome, r retry.HedgeResult) {
			fmt.Printf("attempts %d, winner %d, failed %d, abandoned %d\n",
				o.Attempts, r.Winner, r.Failed, o.Attempts-r.Failed-min(r.Winner, 1))
		}))
	fmt.Println(v, err)
	// Output:
	// attempts 2, winner 2, failed 1, abandoned 0
	// ok <nil>
}
