package retry_test

import (
	"context"
	"testing"

	"github.com/seed-b8c8f69d/retry"
)

// TestBudgetManualMatchesRetry: Deposit and Withdraw are the very deposit
// and withdrawal Do makes, so a hand loop and Do spend a Budget alike.
func TestBudgetManualMatchesRetry(t *testing.T) {
	byDo, byHand := retry.NewBudget(0.5, 3), retry.NewBudget(0.5, 3)
	for call := range 5 {
		var doAttempts int
		_ = retry.Do(context.Background(), retry.Constant(0).Take(4), func(context.Context) error {
			doAttempts++
			return errUnavailable
		}, retry.WithBudget(byDo), retry.WithClock(retry.NewFakeClock(epoch)))
		byHand.Deposit()
		handAttempts := 1
		for handAttempts < 5 && byHand.Withdraw() {
			handAttempts++
		}
		if doAttempts != handAttempts || byDo.Tokens() != byHand.Tokens() {
			t.Fatalf("call %d: Do made %d attempts leaving %v tokens, the hand loop %d leaving %v",
				call, doAttempts, byDo.Tokens(), handAttempts, byHand.Tokens())
		}
	}
}

func TestOptionJudgesValues(t *testing.T) {
	if !retry.IfValue(func(int) bool { return false }).JudgesValues() {
		t.Error("IfValue's option does not judge values")
	}
	for name, o := range map[string]retry.Option{
		"If":         retry.If(func(error) bool { return true }),
		"MaxElapsed": retry.MaxElapsed(1),
		"WithBudget": retry.WithBudget(retry.NewBudget(0.1, 1)),
		"zero":       {},
	} {
		if o.JudgesValues() {
			t.Errorf("%s's option judges values", name)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = retry.MaxElapsed(1).JudgesValues() }); n != 0 {
		t.Errorf("JudgesValues: %v allocations, want 0", n)
	}
}
