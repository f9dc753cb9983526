package pgtest

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// leakChecked runs m and then fails the run if any goroutine the tests
// started (the runner's, the drivers', the proxies') is still there. Main
// calls it: the cluster itself runs until after this check.
func leakChecked(m *testing.M) func() int {
	return func() int {
		code := m.Run()
		if code == 0 {
			if err := goleak.Find(goleak.IgnoreAnyFunction("github.com/seed-b8c8f69d/retry/retrysql/internal/pgtest.Start.func1")); err != nil {
				fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
				return 1
			}
		}
		return code
	}
}
