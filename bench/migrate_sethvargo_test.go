package bench_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seed-b8c8f69d/retry"
	sethvargo "github.com/sethvargo/go-retry"
)

// Example_sethvargoBefore is the guide's sethvargo/go-retry snippet.
func Example_sethvargoBefore() {
	ctx := context.Background()
	api := flakyAPI(errUnavailable, errRateLimited) // fails twice, then answers "hello"

	b := sethvargo.NewExponential(time.Millisecond)
	b = sethvargo.WithCappedDuration(10*time.Millisecond, b)
	b = sethvargo.WithFullJitter(b)
	b = sethvargo.WithMaxRetries(4, b)
	body, err := sethvargo.DoValue(ctx, b, func(ctx context.Context) (string, error) {
		body, err := api(ctx)
		if isStatus(err, http.StatusBadRequest) {
			return "", err
		}
		return body, sethvargo.RetryableError(err)
	})
	fmt.Println(body, err)
	// Output:
	// hello <nil>
}

// Example_sethvargoAfter is the same call with retry.
func Example_sethvargoAfter() {
	ctx := context.Background()
	api := flakyAPI(errUnavailable, errRateLimited) // fails twice, then answers "hello"

	policy := retry.Exponential(time.Millisecond).Cap(10 * time.Millisecond).FullJitter(nil).Take(4)
	body, err := retry.Retry(ctx, policy, func(ctx context.Context) (string, error) {
		body, err := api(ctx)
		if isStatus(err, http.StatusBadRequest) {
			return "", retry.Permanent(err)
		}
		return body, err
	})
	fmt.Println(body, err)
	// Output:
	// hello <nil>
}

// next returns the first n delays of b.
func next(b sethvargo.Backoff, n int) []time.Duration {
	var ds []time.Duration
	for range n {
		d, stop := b.Next()
		if stop {
			break
		}
		ds = append(ds, d)
	}
	return ds
}

// TestSethvargoDifferences checks what the guide says a sethvargo/go-retry
// user will find different.
func TestSethvargoDifferences(t *testing.T) {
	t.Run("Fibonacci starts base, 2·base, 3·base; ours base, base, 2·base", func(t *testing.T) {
		theirs := next(sethvargo.NewFibonacci(time.Second), 5)
		ours := slices.Collect(retry.Fibonacci(time.Second).Take(5).Seq())
		if fmt.Sprint(theirs) != "[1s 2s 3s 5s 8s]" || fmt.Sprint(ours) != "[1s 1s 2s 3s 5s]" {
			t.Errorf("sethvargo %v, retry %v", theirs, ours)
		}
	})
	t.Run("only errors marked RetryableError are retried", func(t *testing.T) {
		calls := 0
		err := sethvargo.Do(t.Context(), sethvargo.NewConstant(time.Second), func(context.Context) error {
			calls++
			return errUnavailable
		})
		if calls != 1 || err != errUnavailable {
			t.Errorf("sethvargo: %d attempts, err %v; want 1 and the error as it is", calls, err)
		}
	})
	t.Run("a Backoff keeps counting across calls", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			shared := sethvargo.WithMaxRetries(2, sethvargo.NewConstant(time.Second))
			var first, second int
			sethvargo.Do(t.Context(), shared, func(context.Context) error {
				first++
				return sethvargo.RetryableError(errUnavailable)
			})
			sethvargo.Do(t.Context(), shared, func(context.Context) error {
				second++
				return sethvargo.RetryableError(errUnavailable)
			})
			if first != 3 || second != 1 {
				t.Errorf("sethvargo: %d then %d attempts with one Backoff, want 3 then 1", first, second)
			}
		})
	})
	t.Run("giving up returns the last error unmarked; DoValue the zero value", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			v, err := sethvargo.DoValue(t.Context(), sethvargo.WithMaxRetries(1, sethvargo.NewConstant(time.Second)),
				func(context.Context) (string, error) { return "partial", sethvargo.RetryableError(errUnavailable) })
			if v != "" || err != errUnavailable {
				t.Errorf("sethvargo: %q, %v; want the zero value and the last error as it is", v, err)
			}
		})
	})
	t.Run("a context deadline: a wait in vain, then only the context's error", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
			defer cancel()
			start := time.Now()
			calls := 0
			err := sethvargo.Do(ctx, sethvargo.NewConstant(25*time.Minute), func(context.Context) error {
				calls++
				return sethvargo.RetryableError(errUnavailable)
			})
			if took := time.Since(start); calls != 3 || took != time.Hour {
				t.Errorf("sethvargo: %d attempts in %v, want 3 in 1h", calls, took)
			}
			if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errUnavailable) {
				t.Errorf("sethvargo: %v, want the context's error alone", err)
			}
		})
	})
	t.Run("WithMaxDuration: timed from when it is built, a last attempt at the limit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := sethvargo.WithMaxDuration(time.Hour, sethvargo.NewConstant(25*time.Minute))
			start := time.Now()
			var at []time.Duration
			sethvargo.Do(t.Context(), b, func(context.Context) error {
				at = append(at, time.Since(start))
				return sethvargo.RetryableError(errUnavailable)
			})
			if want := []time.Duration{0, 25 * time.Minute, 50 * time.Minute, time.Hour}; !slices.Equal(at, want) {
				t.Errorf("sethvargo: attempts at %v, want %v", at, want)
			}

			b = sethvargo.WithMaxDuration(time.Hour, sethvargo.NewConstant(25*time.Minute))
			time.Sleep(45 * time.Minute) // built long before the call
			start, at = time.Now(), nil
			sethvargo.Do(t.Context(), b, func(context.Context) error {
				at = append(at, time.Since(start))
				return sethvargo.RetryableError(errUnavailable)
			})
			if want := []time.Duration{0, 15 * time.Minute}; !slices.Equal(at, want) {
				t.Errorf("sethvargo: attempts at %v, want %v", at, want)
			}

			start, at = time.Now(), nil
			_, err := retry.Retry(t.Context(), retry.Constant(25*time.Minute), func(context.Context) (int, error) {
				at = append(at, time.Since(start))
				return 0, errUnavailable
			}, retry.MaxElapsed(time.Hour))
			if want := []time.Duration{0, 25 * time.Minute, 50 * time.Minute}; !slices.Equal(at, want) || time.Since(start) != 50*time.Minute {
				t.Errorf("retry: attempts at %v, returned after %v; want %v and 50m", at, time.Since(start), want)
			}
			if !errors.Is(err, retry.ErrMaxElapsed) {
				t.Errorf("retry: %v, want ErrMaxElapsed", err)
			}
		})
	})
}
