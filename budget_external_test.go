package retry_test

import (
	"testing"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
)

// TestBudgetAllocations checks that reading a Budget allocates nothing.
func TestBudgetAllocations(t *testing.T) {
	skipRace(t)
	b := retry.NewBudget(0.1, 10)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = b.Tokens() }))
}
