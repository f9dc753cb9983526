package retry_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// The examples wait on a FakeClock, so they run in no time and print the
// waits they would have made.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var errUnavailable = errors.New("service unavailable")

// policy is the usual choice: exponential backoff from 100 ms, capped at 2 s,
// full jitter below the cap, and at most 5 retries. One value serves every
// call in a program.
var policy = retry.Exponential(100 * time.Millisecond).Cap(2 * time.Second).FullJitter(nil).Take(5)

// flaky fails n times, then returns 42.
func flaky(n int) func(context.Context) (int, error) {
	calls := 0
	return func(context.Context) (int, error) {
		if calls++; calls <= n {
			return 0, errUnavailable
		}
		return 42, nil
	}
}

func printDelays(s retry.Schedule) {
	fmt.Println(slices.Collect(s.Seq()))
}

func ExampleRetry() {
	clock := retry.NewFakeClock(epoch)
	v, err := retry.Retry(context.Background(), policy, flaky(2), retry.WithClock(clock))
	fmt.Println(v, err, len(clock.Sleeps()))
	// Output: 42 <nil> 2
}

func ExampleRetry_givingUp() {
	clock := retry.NewFakeClock(epoch)
	_, err := retry.Retry(context.Background(), retry.Constant(time.Second).Take(2), flaky(10), retry.WithClock(clock))
	fmt.Println(err)
	fmt.Println(errors.Is(err, retry.ErrExhausted), errors.Is(err, errUnavailable))
	// Output:
	// retry: gave up after 3 attempts: schedule exhausted: last error: service unavailable
	// true true
}

func ExampleDo() {
	clock := retry.NewFakeClock(epoch)
	calls := 0
	err := retry.Do(context.Background(), retry.Exponential(time.Second).Take(3), func(context.Context) error {
		if calls++; calls < 3 {
			return errUnavailable
		}
		return nil
	}, retry.WithClock(clock))
	fmt.Println(err, calls, clock.Sleeps())
	// Output: <nil> 3 [1s 2s]
}

func ExampleConstant() {
	printDelays(retry.Constant(500 * time.Millisecond).Take(3))
	// Output: [500ms 500ms 500ms]
}

func ExampleLinear() {
	printDelays(retry.Linear(time.Second).Take(4))
	// Output: [1s 2s 3s 4s]
}

func ExampleExponential() {
	printDelays(retry.Exponential(100 * time.Millisecond).Take(5))
	// Output: [100ms 200ms 400ms 800ms 1.6s]
}

func ExampleExponentialFactor() {
	// gRPC's connection backoff: base 1 s, factor 1.6, capped at 120 s.
	printDelays(retry.ExponentialFactor(time.Second, 1.6).Cap(120 * time.Second).Take(6))
	// Output: [1s 1.6s 2.56s 4.096s 6.5536s 10.48576s]
}

func ExampleFibonacci() {
	printDelays(retry.Fibonacci(100 * time.Millisecond).Take(6))
	// Output: [100ms 100ms 200ms 300ms 500ms 800ms]
}

func ExampleDelays() {
	printDelays(retry.Delays(time.Second, 5*time.Second, 30*time.Second))
	// Output: [1s 5s 30s]
}

func ExampleSchedule() {
	// Methods apply in the order written.
	printDelays(retry.Exponential(100 * time.Millisecond).Cap(2 * time.Second).Take(7))
	// Output: [100ms 200ms 400ms 800ms 1.6s 2s 2s]
}

func ExampleSchedule_Seq() {
	for i, d := range slices.All(slices.Collect(retry.Linear(time.Second).Take(2).Seq())) {
		fmt.Println(i, d)
	}
	// Output:
	// 0 1s
	// 1 2s
}

func ExampleSchedule_Take() {
	// Take(3) means 3 retries: at most 4 attempts.
	printDelays(retry.Constant(time.Second).Take(3))
	// Output: [1s 1s 1s]
}

func ExampleSchedule_Cap() {
	printDelays(retry.Exponential(time.Second).Cap(5 * time.Second).Take(5))
	// Output: [1s 2s 4s 5s 5s]
}

func ExampleSchedule_AtLeast() {
	printDelays(retry.Delays(0, 10*time.Millisecond, time.Second).AtLeast(50 * time.Millisecond))
	// Output: [50ms 50ms 1s]
}

func ExampleSchedule_FullJitter() {
	// A seeded source makes the draws repeatable; nil uses the runtime's
	// generator.
	s := retry.Exponential(100 * time.Millisecond).Cap(2 * time.Second).FullJitter(rand.NewPCG(1, 2)).Take(6)
	for d := range s {
		fmt.Println(d.Round(time.Millisecond))
	}
	// Output:
	// 77ms
	// 123ms
	// 314ms
	// 637ms
	// 375ms
	// 82ms
}

func ExampleSchedule_EqualJitter() {
	s := retry.Constant(time.Second).EqualJitter(rand.NewPCG(1, 2)).Take(3)
	for d := range s {
		fmt.Println(d.Round(time.Millisecond))
	}
	// Output:
	// 885ms
	// 808ms
	// 892ms
}

func ExampleSchedule_Jitter() {
	// ±20% around each delay.
	s := retry.Constant(time.Second).Jitter(0.2, rand.NewPCG(1, 2)).Take(3)
	for d := range s {
		fmt.Println(d.Round(time.Millisecond))
	}
	// Output:
	// 1.108s
	// 1.047s
	// 1.114s
}

func ExampleSchedule_Then() {
	// Three quick retries, then every 10 s for a minute.
	printDelays(retry.Constant(100 * time.Millisecond).Take(3).Then(retry.Constant(10 * time.Second).Take(6)))
	// Output: [100ms 100ms 100ms 10s 10s 10s 10s 10s 10s]
}

func ExampleSchedule_Within() {
	// Stop before the total wait would pass 5 s.
	printDelays(retry.Exponential(time.Second).Within(5 * time.Second))
	// Output: [1s 2s]
}

func ExampleDecorrelatedJitter() {
	for d := range retry.DecorrelatedJitter(100*time.Millisecond, 2*time.Second, rand.NewPCG(1, 2)).Take(5) {
		fmt.Println(d.Round(time.Millisecond))
	}
	// Output:
	// 254ms
	// 508ms
	// 1.217s
	// 2s
	// 1.482s
}

func ExampleSmoothJitter() {
	var total time.Duration
	for d := range retry.SmoothJitter(100*time.Millisecond, rand.NewPCG(1, 2)).Take(5) {
		total += d
		fmt.Println(d.Round(time.Millisecond), total.Round(time.Millisecond))
	}
	// Output:
	// 115ms 115ms
	// 102ms 216ms
	// 275ms 491ms
	// 501ms 992ms
	// 352ms 1.344s
}

func ExampleNewFakeClock() {
	clock := retry.NewFakeClock(epoch)
	_, _ = retry.Retry(context.Background(), retry.Exponential(time.Minute).Take(3), flaky(10), retry.WithClock(clock))
	fmt.Println(clock.Sleeps(), clock.Now().Sub(epoch))
	clock.Advance(time.Hour)
	fmt.Println(clock.Now().Format(time.TimeOnly))
	// Output:
	// [1m0s 2m0s 4m0s] 7m0s
	// 01:07:00
}

func ExampleWithClock() {
	clock := retry.NewFakeClock(epoch)
	_ = retry.Do(context.Background(), retry.Constant(time.Hour).Take(2), func(context.Context) error {
		fmt.Println("attempt at", clock.Now().Format(time.TimeOnly))
		return errUnavailable
	}, retry.WithClock(clock))
	// Output:
	// attempt at 00:00:00
	// attempt at 01:00:00
	// attempt at 02:00:00
}

func ExampleIf() {
	errNotFound := errors.New("not found")
	calls := 0
	err := retry.Do(context.Background(), policy, func(context.Context) error {
		calls++
		return errNotFound
	}, retry.If(func(err error) bool { return !errors.Is(err, errNotFound) }))
	fmt.Println(err, calls)
	// Output: not found 1
}

func ExampleOnRetry() {
	clock := retry.NewFakeClock(epoch)
	_, _ = retry.Retry(context.Background(), retry.Exponential(time.Second).Take(2), flaky(10),
		retry.WithClock(clock),
		retry.OnRetry(func(a retry.Attempt) {
			fmt.Printf("attempt %d failed (%v) after %v; waiting %v\n", a.Number, a.Err, a.Elapsed, a.Delay)
		}))
	// Output:
	// attempt 1 failed (service unavailable) after 0s; waiting 1s
	// attempt 2 failed (service unavailable) after 1s; waiting 2s
}

// Log every retry with log/slog.
func ExampleOnRetry_slog() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // keep the output stable
			}
			return a
		},
	}))
	logRetry := retry.OnRetry(func(a retry.Attempt) {
		logger.Warn("retrying", "attempt", a.Number, "err", a.Err, "delay", a.Delay)
	})
	clock := retry.NewFakeClock(epoch)
	v, err := retry.Retry(context.Background(), retry.Exponential(100*time.Millisecond).Take(5), flaky(2),
		retry.WithClock(clock), logRetry)
	fmt.Println(v, err)
	// Output:
	// level=WARN msg=retrying attempt=1 err="service unavailable" delay=100ms
	// level=WARN msg=retrying attempt=2 err="service unavailable" delay=200ms
	// 42 <nil>
}

func ExamplePermanent() {
	errBadRequest := errors.New("400 bad request")
	calls := 0
	err := retry.Do(context.Background(), policy, func(context.Context) error {
		calls++
		return retry.Permanent(errBadRequest)
	})
	fmt.Println(err == errBadRequest, calls)
	// Output: true 1
}

func ExampleError() {
	clock := retry.NewFakeClock(epoch)
	_, err := retry.Retry(context.Background(), retry.Constant(time.Second).Take(4), flaky(10), retry.WithClock(clock))
	var re *retry.Error
	if errors.As(err, &re) {
		fmt.Println(re.Attempts, re.Last)
	}
	// Output: 5 service unavailable
}

func ExampleNewBudget() {
	// At most 10% more calls than requests, plus a burst of 10.
	budget := retry.NewBudget(0.1, 10)
	clock := retry.NewFakeClock(epoch)
	calls, refused := 0, 0
	for range 100 { // 100 requests to a dependency that is down
		err := retry.Do(context.Background(), retry.Constant(0).Take(5), func(context.Context) error {
			calls++
			return errUnavailable
		}, retry.WithBudget(budget), retry.WithClock(clock))
		if errors.Is(err, retry.ErrBudgetExhausted) {
			refused++
		}
	}
	fmt.Printf("%d calls for 100 requests; %d requests refused retries\n", calls, refused)
	// Output: 119 calls for 100 requests; 98 requests refused retries
}

func ExampleRetryAfter() {
	clock := retry.NewFakeClock(epoch)
	calls := 0
	err := retry.Do(context.Background(), retry.Constant(time.Second).Take(3), func(context.Context) error {
		if calls++; calls == 1 {
			// The server said "Retry-After: 30".
			return retry.RetryAfter(errUnavailable, 30*time.Second)
		}
		return nil
	}, retry.WithClock(clock))
	fmt.Println(err, clock.Sleeps())
	// Output: <nil> [30s]
}

func ExampleRetryAt() {
	clock := retry.NewFakeClock(epoch)
	calls := 0
	err := retry.Do(context.Background(), retry.Constant(time.Second).Take(3), func(context.Context) error {
		if calls++; calls == 1 {
			// The server said "Retry-After: Thu, 01 Jan 2026 00:00:45 GMT".
			return retry.RetryAt(errUnavailable, epoch.Add(45*time.Second))
		}
		return nil
	}, retry.WithClock(clock))
	fmt.Println(err, clock.Sleeps())
	// Output: <nil> [45s]
}

func ExampleMaxPushback() {
	clock := retry.NewFakeClock(epoch)
	calls := 0
	err := retry.Do(context.Background(), retry.Constant(time.Second).Take(1), func(context.Context) error {
		if calls++; calls == 1 {
			return retry.RetryAfter(errUnavailable, 24*time.Hour) // a hostile server
		}
		return nil
	}, retry.WithClock(clock), retry.MaxPushback(10*time.Second))
	fmt.Println(clock.Sleeps(), calls)
	fmt.Println(errors.Is(err, retry.ErrPushbackTooLong))
	fmt.Println(err)
	// Output:
	// [] 1
	// true
	// retry: gave up after 1 attempt: server asked to wait 24h0m0s, more than MaxPushback (10s): last error: service unavailable
}

func ExampleAttemptTimeout() {
	_ = retry.Do(context.Background(), policy, func(ctx context.Context) error {
		deadline, ok := ctx.Deadline()
		fmt.Println(ok, time.Until(deadline).Round(time.Second))
		return nil
	}, retry.AttemptTimeout(5*time.Second))
	// Output: true 5s
}
