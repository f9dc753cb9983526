package bench_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	avast "github.com/avast/retry-go/v4"
	avast5 "github.com/avast/retry-go/v5"
	"github.com/seed-b8c8f69d/retry"
)

// Example_avastV4Before is the guide's avast/retry-go v4 snippet.
func Example_avastV4Before() {
	ctx := context.Background()
	api := flakyAPI(errUnavailable, errRateLimited) // fails twice, then answers "hello"

	body, err := avast.DoWithData(func() (string, error) {
		return api(ctx)
	},
		avast.Context(ctx),
		avast.Attempts(5),
		avast.Delay(time.Millisecond),
		avast.MaxDelay(10*time.Millisecond),
		avast.DelayType(avast.FullJitterBackoffDelay),
		avast.RetryIf(func(err error) bool { return !isStatus(err, http.StatusBadRequest) }),
		avast.AttemptsForError(3, errRateLimited),
		avast.OnRetry(func(n uint, err error) { fmt.Printf("attempt %d: %v\n", n+1, err) }),
		avast.LastErrorOnly(true),
	)
	fmt.Println(body, err)
	// Output:
	// attempt 1: status 503
	// attempt 2: status 429
	// hello <nil>
}

// Example_avastV5Before is the guide's avast/retry-go v5 snippet.
func Example_avastV5Before() {
	ctx := context.Background()
	api := flakyAPI(errUnavailable, errRateLimited) // fails twice, then answers "hello"

	body, err := avast5.NewWithData[string](
		avast5.Context(ctx),
		avast5.Attempts(5),
		avast5.Delay(time.Millisecond),
		avast5.MaxDelay(10*time.Millisecond),
		avast5.DelayType(avast5.FullJitterBackoffDelay),
		avast5.RetryIf(func(err error) bool { return !isStatus(err, http.StatusBadRequest) }),
		avast5.AttemptsForError(3, errRateLimited),
		avast5.OnRetry(func(n uint, err error) { fmt.Printf("attempt %d: %v\n", n+1, err) }),
		avast5.LastErrorOnly(true),
	).Do(func() (string, error) {
		return api(ctx)
	})
	fmt.Println(body, err)
	// Output:
	// attempt 1: status 503
	// attempt 2: status 429
	// hello <nil>
}

// Example_avastAfter is the same call with retry.
func Example_avastAfter() {
	ctx := context.Background()
	api := flakyAPI(errUnavailable, errRateLimited) // fails twice, then answers "hello"

	policy := retry.Exponential(2 * time.Millisecond).Cap(10 * time.Millisecond).FullJitter(nil).Take(4)
	body, err := retry.Retry(ctx, policy, api,
		retry.If(func(err error) bool { return !isStatus(err, http.StatusBadRequest) }),
		retry.MaxRetriesIf(2, func(err error) bool { return errors.Is(err, errRateLimited) }),
		retry.OnRetry(func(a retry.Attempt) { fmt.Printf("attempt %d: %v\n", a.Number, a.Err) }),
	)
	fmt.Println(body, err)
	// Output:
	// attempt 1: status 503
	// attempt 2: status 429
	// hello <nil>
}

// TestAvastDifferences checks what the guide says an avast/retry-go user
// will find different.
func TestAvastDifferences(t *testing.T) {
	t.Run("OnRetry is called after the last attempt too, numbered from 0", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var calls int
			var seen []uint
			avast.DoWithData(func() (string, error) { return always(errUnavailable, &calls)(t.Context()) },
				avast.Attempts(3), avast.Delay(time.Second),
				avast.OnRetry(func(n uint, err error) { seen = append(seen, n) }))
			if calls != 3 || fmt.Sprint(seen) != "[0 1 2]" {
				t.Errorf("avast v4: %d attempts, OnRetry saw %v; want 3 and [0 1 2]", calls, seen)
			}
			calls, seen = 0, nil
			avast5.NewWithData[string](avast5.Attempts(3), avast5.Delay(time.Second),
				avast5.OnRetry(func(n uint, err error) { seen = append(seen, n) }),
			).Do(func() (string, error) { return always(errUnavailable, &calls)(t.Context()) })
			if calls != 3 || fmt.Sprint(seen) != "[0 1 2]" {
				t.Errorf("avast v5: %d attempts, OnRetry saw %v; want 3 and [0 1 2]", calls, seen)
			}

			calls = 0
			var numbers []int
			retry.Retry(t.Context(), retry.Constant(time.Second).Take(2), always(errUnavailable, &calls),
				retry.OnRetry(func(a retry.Attempt) { numbers = append(numbers, a.Number) }))
			if calls != 3 || fmt.Sprint(numbers) != "[1 2]" {
				t.Errorf("retry: %d attempts, OnRetry saw %v; want 3 and [1 2]", calls, numbers)
			}
		})
	})
	t.Run("a failed call returns the zero value", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			partial := func() (string, error) { return "partial", errUnavailable }
			v4, _ := avast.DoWithData(partial, avast.Attempts(2))
			v5, _ := avast5.NewWithData[string](avast5.Attempts(2)).Do(partial)
			ours, _ := retry.Retry(t.Context(), retry.Constant(time.Second).Take(1),
				func(context.Context) (string, error) { return partial() })
			if v4 != "" || v5 != "" || ours != "partial" {
				t.Errorf("values %q, %q, %q; want avast's empty, ours the last attempt's", v4, v5, ours)
			}
		})
	})
	t.Run("the error: every attempt's, and what errors.Unwrap returns", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			errs := []error{errUnavailable, errRateLimited}
			fails := func() func() error {
				n := 0
				return func() error { n++; return errs[(n-1)%2] }
			}
			err4 := avast.Do(fails(), avast.Attempts(2))
			err5 := avast5.New(avast5.Attempts(2)).Do(fails())
			f := fails()
			ours := retry.Do(t.Context(), retry.Constant(time.Second).Take(1), func(context.Context) error { return f() })
			if got := err4.Error(); got != "All attempts fail:\n#1: status 503\n#2: status 429" {
				t.Errorf("avast v4: %q", got)
			}
			if !errors.Is(err4, errUnavailable) || !errors.Is(err5, errUnavailable) {
				t.Error("avast: errors.Is does not find the first attempt's error")
			}
			if errors.Is(ours, errUnavailable) || !errors.Is(ours, errRateLimited) {
				t.Error("retry: errors.Is should find the last error only")
			}
			if errors.Unwrap(err4) != errRateLimited || errors.Unwrap(err5) != nil || errors.Unwrap(ours) != nil {
				t.Errorf("errors.Unwrap: v4 %v, v5 %v, retry %v; want the last error, nil, nil",
					errors.Unwrap(err4), errors.Unwrap(err5), errors.Unwrap(ours))
			}
			var re *retry.Error
			if !errors.As(ours, &re) || re.Last != errRateLimited || re.Attempts != 2 {
				t.Errorf("retry: %v; want an *Error with Last and Attempts", ours)
			}
		})
	})
	t.Run("an error not retried comes back in the list", func(t *testing.T) {
		stop := func() error { return avast.Unrecoverable(errBadRequest) }
		err4 := avast.Do(stop)
		var list avast.Error
		if !errors.As(err4, &list) || len(list) != 1 || list[0] != errBadRequest {
			t.Errorf("avast v4: %#v, want an Error list holding the error", err4)
		}
		err4 = avast.Do(func() error { return errBadRequest },
			avast.RetryIf(func(err error) bool { return false }))
		if !errors.As(err4, &list) {
			t.Errorf("avast v4: %#v, want an Error list", err4)
		}
		ours := retry.Do(t.Context(), retry.Constant(time.Second), func(context.Context) error {
			return retry.Permanent(errBadRequest)
		})
		if ours != errBadRequest {
			t.Errorf("retry: %v, want the error as it is", ours)
		}
	})
	t.Run("a context deadline: a wait in vain, then every error and the context's", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
			defer cancel()
			start := time.Now()
			var calls int
			_, err := avast.DoWithData(func() (string, error) { return always(errUnavailable, &calls)(ctx) },
				avast.Context(ctx), avast.Attempts(10), avast.Delay(25*time.Minute), avast.DelayType(avast.FixedDelay))
			if took := time.Since(start); calls != 3 || took != time.Hour {
				t.Errorf("avast v4: %d attempts in %v, want 3 in 1h", calls, took)
			}
			if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, errUnavailable) {
				t.Errorf("avast v4: %v", err)
			}
		})
	})
	t.Run("defaults: 10 attempts, 100ms·2ⁿ plus up to 100ms", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			var at []time.Duration
			op := attemptTimes(start, errUnavailable, &at)
			avast.DoWithData(func() (string, error) { return op(t.Context()) })
			if len(at) != 10 {
				t.Fatalf("avast v4: %d attempts, want 10", len(at))
			}
			for i := 1; i < len(at); i++ {
				base := 100 * time.Millisecond << (i - 1)
				if d := at[i] - at[i-1]; d < base || d >= base+100*time.Millisecond {
					t.Errorf("avast v4: wait %d is %v, want [%v, %v)", i, d, base, base+100*time.Millisecond)
				}
			}
		})
	})
	t.Run("FullJitterBackoffDelay draws the first wait below 2·Delay", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var firsts []time.Duration
			for range 200 {
				start := time.Now()
				var at []time.Duration
				op := attemptTimes(start, errUnavailable, &at)
				avast.DoWithData(func() (string, error) { return op(t.Context()) },
					avast.Attempts(2), avast.Delay(time.Second), avast.DelayType(avast.FullJitterBackoffDelay))
				firsts = append(firsts, at[1])
			}
			longest := time.Duration(0)
			for _, d := range firsts {
				longest = max(longest, d)
			}
			if longest <= time.Second || longest >= 2*time.Second {
				t.Errorf("avast v4: longest of 200 first waits %v, want in (1s, 2s)", longest)
			}
		})
	})
	t.Run("AttemptsForError counts attempts that fail with the error", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var calls int
			avast.DoWithData(func() (string, error) { return always(errRateLimited, &calls)(t.Context()) },
				avast.Attempts(10), avast.Delay(time.Second), avast.AttemptsForError(3, errRateLimited))
			if calls != 3 {
				t.Errorf("avast v4: %d attempts, want 3", calls)
			}
			calls = 0
			avast5.NewWithData[string](avast5.Attempts(10), avast5.Delay(time.Second),
				avast5.AttemptsForError(3, errRateLimited),
			).Do(func() (string, error) { return always(errRateLimited, &calls)(t.Context()) })
			if calls != 3 {
				t.Errorf("avast v5: %d attempts, want 3", calls)
			}
			calls = 0
			_, err := retry.Retry(t.Context(), retry.Constant(time.Second).Take(9), always(errRateLimited, &calls),
				retry.MaxRetriesIf(2, func(err error) bool { return errors.Is(err, errRateLimited) }))
			if calls != 3 || !errors.Is(err, retry.ErrExhausted) {
				t.Errorf("retry: %d attempts, %v; want 3 and ErrExhausted", calls, err)
			}
		})
	})
}
