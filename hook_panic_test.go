package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// TestBudgetRefundOnHookPanic checks that the token a retry withdrew from
// the Budget goes back when an OnRetry hook panics before the retry is
// made, as it does when the call's context ends at the same point: the
// retry was not made.
func TestBudgetRefundOnHookPanic(t *testing.T) {
	failing := func(context.Context) error { return errors.New("transient") }
	hook := retry.OnRetry(func(retry.Attempt) { panic("hook") })
	for _, tt := range []struct {
		name string
		call func(b *retry.Budget, clock retry.Option)
	}{
		{"Do", func(b *retry.Budget, clock retry.Option) {
			_ = retry.Do(t.Context(), retry.Constant(time.Second).Take(3), failing, retry.WithBudget(b), clock, hook)
		}},
		{"Do, general loop", func(b *retry.Budget, clock retry.Option) {
			_ = retry.Do(t.Context(), retry.Constant(time.Second).Take(3), failing, retry.WithBudget(b), clock, hook,
				retry.MaxElapsed(time.Hour))
		}},
		{"Retry", func(b *retry.Budget, clock retry.Option) {
			_, _ = retry.Retry(t.Context(), retry.Constant(time.Second).Take(3),
				func(ctx context.Context) (int, error) { return 0, failing(ctx) }, retry.WithBudget(b), clock, hook)
		}},
		{"Hedge", func(b *retry.Budget, clock retry.Option) {
			_, _ = retry.Hedge(t.Context(), retry.Constant(time.Second).Take(3),
				func(ctx context.Context) (int, error) { return 0, failing(ctx) }, retry.WithBudget(b), clock, hook)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := retry.NewBudget(0, 3)
			func() {
				defer func() {
					if r := recover(); r != "hook" {
						t.Errorf("panic: got %v, want hook", r)
					}
				}()
				tt.call(b, retry.WithClock(retry.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))))
			}()
			if got := b.Tokens(); got != 3 {
				t.Errorf("tokens left: got %v, want 3 (the retry was not made)", got)
			}
		})
	}
}
