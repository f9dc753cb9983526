package bench_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/seed-b8c8f69d/retry"
)

// Example_cenkaltiBefore is the guide's cenkalti/backoff v5 snippet.
func Example_cenkaltiBefore() {
	ctx := context.Background()
	api := flakyAPI(errUnavailable, errRateLimited) // fails twice, then answers "hello"

	operation := func() (string, error) {
		body, err := api(ctx)
		if isStatus(err, http.StatusBadRequest) {
			return "", backoff.Permanent(err)
		}
		return body, err
	}
	b := &backoff.ExponentialBackOff{
		InitialInterval:     time.Millisecond,
		RandomizationFactor: 0.5,
		Multiplier:          1.5,
		MaxInterval:         10 * time.Millisecond,
	}
	body, err := backoff.Retry(ctx, operation,
		backoff.WithBackOff(b),
		backoff.WithMaxTries(5),
		backoff.WithMaxElapsedTime(time.Minute),
		backoff.WithNotify(func(err error, d time.Duration) {
			fmt.Println("retrying after", err)
		}),
	)
	fmt.Println(body, err)
	// Output:
	// retrying after status 503
	// retrying after status 429
	// hello <nil>
}

// Example_cenkaltiAfter is the same call with retry.
func Example_cenkaltiAfter() {
	ctx := context.Background()
	api := flakyAPI(errUnavailable, errRateLimited) // fails twice, then answers "hello"

	policy := retry.ExponentialFactor(time.Millisecond, 1.5).Cap(10*time.Millisecond).Jitter(0.5, nil).Take(4)
	body, err := retry.Retry(ctx, policy, func(ctx context.Context) (string, error) {
		body, err := api(ctx)
		if isStatus(err, http.StatusBadRequest) {
			return "", retry.Permanent(err)
		}
		return body, err
	},
		retry.MaxElapsed(time.Minute),
		retry.OnRetry(func(a retry.Attempt) {
			fmt.Println("retrying after", a.Err)
		}),
	)
	fmt.Println(body, err)
	// Output:
	// retrying after status 503
	// retrying after status 429
	// hello <nil>
}

// attemptTimes returns a call that always fails with err and records the
// time since start of each of its attempts.
func attemptTimes(start time.Time, err error, at *[]time.Duration) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		*at = append(*at, time.Since(start))
		return "", err
	}
}

// TestCenkaltiDifferences checks what the guide says a cenkalti/backoff v5
// user will find different.
func TestCenkaltiDifferences(t *testing.T) {
	t.Run("gives up after 15 minutes by default", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var at []time.Duration
			op := attemptTimes(time.Now(), errUnavailable, &at)
			_, err := backoff.Retry(t.Context(), func() (string, error) { return op(t.Context()) },
				backoff.WithBackOff(backoff.NewConstantBackOff(time.Minute)))
			if len(at) != 16 || at[15] != 15*time.Minute {
				t.Errorf("cenkalti: attempts at %v, want 16, the last at 15m", at)
			}
			if err != errUnavailable {
				t.Errorf("cenkalti: err = %v, want the last error as it is", err)
			}

			at = nil
			_, err = retry.Retry(t.Context(), retry.Constant(time.Minute), attemptTimes(time.Now(), errUnavailable, &at),
				retry.MaxElapsed(15*time.Minute))
			if len(at) != 16 || at[15] != 15*time.Minute {
				t.Errorf("retry: attempts at %v, want 16, the last at 15m", at)
			}
			if !errors.Is(err, retry.ErrMaxElapsed) || !errors.Is(err, errUnavailable) {
				t.Errorf("retry: err = %v, want an *Error matching ErrMaxElapsed and the last error", err)
			}
		})
	})
	t.Run("WithMaxTries counts attempts and returns the last error as it is", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var at []time.Duration
			op := attemptTimes(time.Now(), errUnavailable, &at)
			_, err := backoff.Retry(t.Context(), func() (string, error) { return op(t.Context()) },
				backoff.WithBackOff(backoff.NewConstantBackOff(time.Second)), backoff.WithMaxTries(3))
			if len(at) != 3 || err != errUnavailable {
				t.Errorf("cenkalti: %d attempts, err %v; want 3 and the last error as it is", len(at), err)
			}

			at = nil
			_, err = retry.Retry(t.Context(), retry.Constant(time.Second).Take(2), attemptTimes(time.Now(), errUnavailable, &at))
			var re *retry.Error
			if len(at) != 3 || !errors.As(err, &re) || !errors.Is(err, retry.ErrExhausted) || !errors.Is(err, errUnavailable) {
				t.Errorf("retry: %d attempts, err %v; want 3 and an *Error matching ErrExhausted and the last error", len(at), err)
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
			_, err := backoff.Retry(ctx, func() (string, error) { return op(ctx) },
				backoff.WithBackOff(backoff.NewConstantBackOff(25*time.Minute)), backoff.WithMaxElapsedTime(0))
			if want := []time.Duration{0, 25 * time.Minute, 50 * time.Minute}; !equalDurations(at, want) {
				t.Errorf("cenkalti: attempts at %v, want %v", at, want)
			}
			if took := time.Since(start); took != time.Hour {
				t.Errorf("cenkalti returned after %v, want 1h: it waits until the deadline", took)
			}
			if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errUnavailable) {
				t.Errorf("cenkalti: err = %v, want the context's error without the last error", err)
			}

			ctx, cancel = context.WithTimeout(t.Context(), time.Hour)
			defer cancel()
			start, at = time.Now(), nil
			_, err = retry.Retry(ctx, retry.Constant(25*time.Minute), attemptTimes(start, errUnavailable, &at))
			if want := []time.Duration{0, 25 * time.Minute, 50 * time.Minute}; !equalDurations(at, want) {
				t.Errorf("retry: attempts at %v, want %v", at, want)
			}
			if took := time.Since(start); took != 50*time.Minute {
				t.Errorf("retry returned after %v, want 50m: it does not start a wait past the deadline", took)
			}
			if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, errUnavailable) {
				t.Errorf("retry: err = %v, want both the context's error and the last error", err)
			}
		})
	})
	t.Run("RetryAfter waits exactly that long and resets the backoff", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			var at []time.Duration
			n := 0
			op := func() (string, error) {
				at = append(at, time.Since(start))
				if n++; n == 2 {
					return "", backoff.RetryAfter(1)
				}
				return "", errUnavailable
			}
			b := &backoff.ExponentialBackOff{InitialInterval: 10 * time.Second, Multiplier: 2, MaxInterval: time.Hour}
			backoff.Retry(t.Context(), op, backoff.WithBackOff(b), backoff.WithMaxTries(4))
			// Waits: 10s; then 1s (Retry-After); then 10s again (reset).
			if want := []time.Duration{0, 10 * time.Second, 11 * time.Second, 21 * time.Second}; !equalDurations(at, want) {
				t.Errorf("cenkalti: attempts at %v, want %v", at, want)
			}

			start, at, n = time.Now(), nil, 0
			retry.Retry(t.Context(), retry.Exponential(10*time.Second).Take(3), func(context.Context) (string, error) {
				at = append(at, time.Since(start))
				if n++; n == 2 {
					return "", retry.RetryAfter(errRateLimited, time.Second)
				}
				return "", errUnavailable
			})
			// Waits: 10s; then max(1s, 20s); then 40s: the pushback uses up a step.
			if want := []time.Duration{0, 10 * time.Second, 30 * time.Second, 70 * time.Second}; !equalDurations(at, want) {
				t.Errorf("retry: attempts at %v, want %v", at, want)
			}
		})
	})
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
