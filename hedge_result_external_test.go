package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
)

// TestOnHedgeDoneAllocations pins that OnHedgeDone costs no allocation
// beyond OnDone's.
func TestOnHedgeDoneAllocations(t *testing.T) {
	skipRace(t)
	ok := func(context.Context) (int, error) { return 1, nil }
	s := retry.Constant(time.Hour).Take(1)
	done := retry.OnDone(func(retry.Outcome) {})
	hedgeDone := retry.OnHedgeDone(func(retry.Outcome, retry.HedgeResult) {})
	withDone := testing.AllocsPerRun(1000, func() { _, _ = retry.Hedge(context.Background(), s, ok, done) })
	withHedgeDone := testing.AllocsPerRun(1000, func() { _, _ = retry.Hedge(context.Background(), s, ok, hedgeDone) })
	assert.LessOrEqual(t, withHedgeDone, withDone)
}
