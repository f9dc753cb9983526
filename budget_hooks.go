package retry

import "github.com/seed-b8c8f69d/retry/internal/budgetinfo"

// The adapters that run their own retry loop (retryaws) reach a Budget
// through these hooks: the same deposit and withdrawal as Retry's.
func init() {
	budgetinfo.Credit = func(b any) { b.(*Budget).credit() }
	budgetinfo.Withdraw = func(b any) bool { return b.(*Budget).withdraw() }
}
