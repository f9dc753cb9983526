package retry

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: no
// timer, attempt context or wait may be left running by Retry.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
