package retry_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// A logger whose records carry no time, so that the output is repeatable:
// each retry at Info, the give-up at Warn, with retryotel's attribute names.
func ExampleWithLogger() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{} // drop the time
			}
			return a
		},
	}))
	clock := retry.NewFakeClock(epoch)
	err := retry.Do(context.Background(), retry.Exponential(time.Second).Take(2), func(context.Context) error {
		clock.Advance(100 * time.Millisecond) // each attempt takes 100 ms
		return errors.New("connection refused")
	}, retry.WithLogger(logger), retry.WithClock(clock))
	_ = err
	// Output:
	// level=INFO msg=retry retry.attempt=1 retry.delay=1s error="connection refused"
	// level=INFO msg=retry retry.attempt=2 retry.delay=2s error="connection refused"
	// level=WARN msg="retry gave up" retry.reason=exhausted retry.attempts=3 retry.call.duration=3.3s error="retry: gave up after 3 attempts: schedule exhausted: last error: connection refused"
}

// A Breaker's state changes, logged with the dependency's name.
func ExampleBreakerLogger() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
	clock := retry.NewFakeClock(epoch)
	breaker := retry.NewBreaker(retry.BreakerMinCalls(2), retry.BreakerClock(clock),
		retry.BreakerOpenPeriods(retry.Constant(10*time.Second)), retry.BreakerLogger(logger, "payments"))
	fail := func(context.Context) error { return errors.New("timeout") }
	for range 2 {
		_ = retry.Do(context.Background(), retry.Delays(), fail, retry.WithBreaker(breaker), retry.WithClock(clock))
	}
	clock.Advance(10 * time.Second)
	_ = retry.Do(context.Background(), retry.Delays(), func(context.Context) error { return nil },
		retry.WithBreaker(breaker), retry.WithClock(clock))
	// Output:
	// level=WARN msg="circuit breaker open" retry.dependency=payments retry.breaker.state=open retry.breaker.from=closed
	// level=INFO msg="circuit breaker half-open" retry.dependency=payments retry.breaker.state=half_open retry.breaker.from=open
	// level=INFO msg="circuit breaker closed" retry.dependency=payments retry.breaker.state=closed retry.breaker.from=half_open
}
