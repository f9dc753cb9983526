package bench_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/seed-b8c8f69d/retry"
)

// Example_failsafeBefore is the guide's failsafe-go snippet.
func Example_failsafeBefore() {
	ctx := context.Background()
	job := jobStatus(2) // "pending" twice, then "done"

	policy := retrypolicy.NewBuilder[string]().
		HandleResult("pending").
		WithMaxRetries(4).
		WithBackoff(time.Millisecond, 10*time.Millisecond).
		WithJitterFactor(0.5).
		Build()
	status, err := failsafe.With(policy).
		WithContext(ctx).
		OnDone(func(e failsafe.ExecutionDoneEvent[string]) {
			fmt.Println("done after", e.Attempts(), "attempts:", e.Result, e.Error)
		}).
		Get(func() (string, error) { return job(ctx) })
	fmt.Println(status, err)
	// Output:
	// done after 3 attempts: done <nil>
	// done <nil>
}

// Example_failsafeAfter is the same call with retry.
func Example_failsafeAfter() {
	ctx := context.Background()
	job := jobStatus(2) // "pending" twice, then "done"

	policy := retry.Exponential(time.Millisecond).Cap(10*time.Millisecond).Jitter(0.5, nil).Take(4)
	status, err := retry.Retry(ctx, policy, job,
		retry.IfValue(func(status string) bool { return status == "pending" }),
		retry.OnDone(func(o retry.Outcome) {
			fmt.Println("done after", o.Attempts, "attempts:", o.Err)
		}),
	)
	fmt.Println(status, err)
	// Output:
	// done after 3 attempts: <nil>
	// done <nil>
}

// TestFailsafeDifferences checks what the guide says a failsafe-go user will
// find different.
func TestFailsafeDifferences(t *testing.T) {
	t.Run("defaults: 3 attempts, no delay, ExceededError", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			var at []time.Duration
			op := attemptTimes(start, errUnavailable, &at)
			v, err := failsafe.With(retrypolicy.NewWithDefaults[string]()).Get(func() (string, error) { return op(t.Context()) })
			if want := []time.Duration{0, 0, 0}; !slices.Equal(at, want) {
				t.Errorf("failsafe: attempts at %v, want %v", at, want)
			}
			if v != "" || !errors.Is(err, retrypolicy.ErrExceeded) || !errors.Is(err, errUnavailable) {
				t.Errorf("failsafe: %q, %v; want the zero value and an ExceededError wrapping the last error", v, err)
			}
		})
	})
	t.Run("HandleResult: exhausted, the last result is in the error only", func(t *testing.T) {
		policy := retrypolicy.NewBuilder[string]().HandleResult("pending").WithMaxRetries(1).Build()
		v, err := failsafe.With(policy).Get(func() (string, error) { return "pending", nil })
		e := retrypolicy.AsExceededError(err)
		if v != "" || e == nil || e.LastResult != "pending" || e.LastError != nil {
			t.Errorf("failsafe: %q, %#v", v, err)
		}
		v, err = retry.Retry(t.Context(), retry.Constant(0).Take(1), func(context.Context) (string, error) { return "pending", nil },
			retry.IfValue(func(s string) bool { return s == "pending" }))
		var re *retry.Error
		if v != "pending" || !errors.As(err, &re) || re.Last != nil || !errors.Is(err, retry.ErrExhausted) {
			t.Errorf("retry: %q, %v; want the last value and an *Error without a last error", v, err)
		}
	})
	t.Run("OnRetry runs after the delay, OnRetryScheduled before it", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			var scheduled, retried []time.Duration
			policy := retrypolicy.NewBuilder[string]().WithMaxRetries(1).WithDelay(time.Second).
				OnRetryScheduled(func(failsafe.ExecutionScheduledEvent[string]) { scheduled = append(scheduled, time.Since(start)) }).
				OnRetry(func(failsafe.ExecutionEvent[string]) { retried = append(retried, time.Since(start)) }).
				Build()
			failsafe.With(policy).Get(func() (string, error) { return "", errUnavailable })
			if !slices.Equal(scheduled, []time.Duration{0}) || !slices.Equal(retried, []time.Duration{time.Second}) {
				t.Errorf("failsafe: OnRetryScheduled at %v, OnRetry at %v; want [0s] and [1s]", scheduled, retried)
			}
		})
	})
	t.Run("WithMaxDuration: a last attempt at the limit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// Each attempt takes a minute: with attempts that take no time,
			// fake time would stop at exactly the limit, which failsafe does
			// not count as past it, and the zero waits would never end.
			start := time.Now()
			var at []time.Duration
			op := attemptTimes(start, errUnavailable, &at)
			policy := retrypolicy.NewBuilder[string]().WithMaxRetries(-1).WithDelay(25 * time.Minute).
				WithMaxDuration(time.Hour).Build()
			_, err := failsafe.With(policy).Get(func() (string, error) {
				defer time.Sleep(time.Minute)
				return op(t.Context())
			})
			if want := []time.Duration{0, 26 * time.Minute, 52 * time.Minute, time.Hour}; !slices.Equal(at, want) {
				t.Errorf("failsafe: attempts at %v, want %v", at, want)
			}
			if !errors.Is(err, retrypolicy.ErrExceeded) {
				t.Errorf("failsafe: %v", err)
			}

			start, at = time.Now(), nil
			op = attemptTimes(start, errUnavailable, &at)
			_, err = retry.Retry(t.Context(), retry.Constant(25*time.Minute), func(ctx context.Context) (string, error) {
				defer time.Sleep(time.Minute)
				return op(ctx)
			}, retry.MaxElapsed(time.Hour))
			if want := []time.Duration{0, 26 * time.Minute, 52 * time.Minute}; !slices.Equal(at, want) || time.Since(start) != 53*time.Minute {
				t.Errorf("retry: attempts at %v, returned after %v; want %v and 53m", at, time.Since(start), want)
			}
			if !errors.Is(err, retry.ErrMaxElapsed) {
				t.Errorf("retry: %v, want ErrMaxElapsed", err)
			}
		})
	})
	t.Run("a context deadline: a wait in vain, then only the context's error", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
			defer cancel()
			start := time.Now()
			var at []time.Duration
			op := attemptTimes(start, errUnavailable, &at)
			policy := retrypolicy.NewBuilder[string]().WithMaxRetries(-1).WithDelay(25 * time.Minute).Build()
			_, err := failsafe.With(policy).WithContext(ctx).Get(func() (string, error) { return op(ctx) })
			if took := time.Since(start); len(at) != 3 || took != time.Hour {
				t.Errorf("failsafe: %d attempts in %v, want 3 in 1h", len(at), took)
			}
			if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errUnavailable) {
				t.Errorf("failsafe: %v, want the context's error alone", err)
			}
		})
	})
}
