package k8s_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"k8s.io/apimachinery/pkg/util/wait"
)

// jobStatus returns a fake job whose status is "pending" for the first
// pending polls and "done" afterwards.
func jobStatus(pending int) func(ctx context.Context) (string, error) {
	var n atomic.Int64
	return func(ctx context.Context) (string, error) {
		if n.Add(1) <= int64(pending) {
			return "pending", nil
		}
		return "done", nil
	}
}

// Example_k8sBefore is the guide's k8s.io/apimachinery wait.Backoff
// snippet.
func Example_k8sBefore() {
	ctx := context.Background()
	job := jobStatus(2) // "pending" twice, then "done"

	backoff := wait.Backoff{Duration: time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 5, Cap: 10 * time.Millisecond}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		status, err := job(ctx)
		if err != nil {
			return false, err // stops at once
		}
		return status == "done", nil // false: try again
	})
	fmt.Println(err)
	// Output:
	// <nil>
}

// Example_k8sAfter is the same poll with retry.
func Example_k8sAfter() {
	ctx := context.Background()
	job := jobStatus(2) // "pending" twice, then "done"

	policy := retry.Exponential(time.Millisecond).Cap(10*time.Millisecond).Jitter(0.1, nil).Take(4)
	status, err := retry.Retry(ctx, policy, func(ctx context.Context) (string, error) {
		status, err := job(ctx)
		return status, retry.Permanent(err) // an error stops at once
	}, retry.IfValue(func(status string) bool { return status != "done" })) // not done: try again
	fmt.Println(status, err)
	// Output:
	// done <nil>
}

// errNotFound is a condition's error.
var errNotFound = errors.New("not found")

// calls returns a condition that records the time since start of each of
// its calls and returns done and err.
func calls(start time.Time, at *[]time.Duration, done bool, err error) wait.ConditionWithContextFunc {
	return func(context.Context) (bool, error) {
		*at = append(*at, time.Since(start))
		return done, err
	}
}

// TestK8sDifferences checks what the guide says a user of
// k8s.io/apimachinery's wait.Backoff will find different.
func TestK8sDifferences(t *testing.T) {
	t.Run("Steps counts calls of the condition", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var at []time.Duration
			err := wait.ExponentialBackoffWithContext(t.Context(), wait.Backoff{Duration: time.Second, Factor: 2, Steps: 4},
				calls(time.Now(), &at, false, nil))
			if want := []time.Duration{0, 1 * time.Second, 3 * time.Second, 7 * time.Second}; !slices.Equal(at, want) {
				t.Errorf("wait: calls at %v, want %v", at, want)
			}
			if !wait.Interrupted(err) {
				t.Errorf("wait: %v, want an interrupted error", err)
			}
		})
	})
	t.Run("an error from the condition stops at once", func(t *testing.T) {
		var at []time.Duration
		err := wait.ExponentialBackoffWithContext(t.Context(), wait.Backoff{Duration: time.Second, Steps: 4},
			calls(time.Now(), &at, false, errNotFound))
		if len(at) != 1 || err != errNotFound {
			t.Errorf("wait: %d calls, %v; want 1 and the error as it is", len(at), err)
		}
	})
	t.Run("Jitter only lengthens a delay", func(t *testing.T) {
		b := wait.Backoff{Duration: time.Second, Jitter: 0.5}
		for range 100 {
			if d := b.Step(); d < time.Second || d > 1500*time.Millisecond {
				t.Fatalf("wait: a delay of %v, want in [1s, 1.5s]", d)
			}
		}
	})
	t.Run("reaching Cap ends the retries after one more sleep", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			var at []time.Duration
			err := wait.ExponentialBackoffWithContext(t.Context(),
				wait.Backoff{Duration: time.Second, Factor: 2, Steps: 10, Cap: 5 * time.Second},
				calls(start, &at, false, nil))
			if want := []time.Duration{0, 1 * time.Second, 3 * time.Second}; !slices.Equal(at, want) {
				t.Errorf("wait: calls at %v, want %v", at, want)
			}
			if took := time.Since(start); took != 7*time.Second || !wait.Interrupted(err) {
				t.Errorf("wait: returned %v after %v, want an interrupted error after 7s", err, took)
			}

			start = time.Now()
			var ours []time.Duration
			retry.Retry(t.Context(), retry.Exponential(time.Second).Cap(5*time.Second).Take(9),
				func(ctx context.Context) (bool, error) {
					ours = append(ours, time.Since(start))
					return false, errNotFound
				})
			if len(ours) != 10 || ours[9]-ours[8] != 5*time.Second {
				t.Errorf("retry: calls at %v, want 10, the last waits at the cap", ours)
			}
		})
	})
	t.Run("a zero Backoff never calls the condition", func(t *testing.T) {
		var at []time.Duration
		err := wait.ExponentialBackoffWithContext(t.Context(), wait.Backoff{}, calls(time.Now(), &at, true, nil))
		if len(at) != 0 || !wait.Interrupted(err) {
			t.Errorf("wait: %d calls, %v; want none and an interrupted error", len(at), err)
		}
	})
	t.Run("a context deadline: a wait in vain, then only the context's error", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
			defer cancel()
			start := time.Now()
			var at []time.Duration
			err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 25 * time.Minute, Steps: 10},
				calls(start, &at, false, nil))
			if took := time.Since(start); len(at) != 3 || took != time.Hour || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("wait: %d calls, %v after %v; want 3 and the context's error after 1h", len(at), err, took)
			}
		})
	})
}
