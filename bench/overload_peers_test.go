package bench_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/seed-b8c8f69d/retry"
	"github.com/sony/gobreaker/v2"
)

// The snippets of docs/OVERLOAD_PEERS.md: a peer's circuit breaker inside a
// retry.Retry call, with the breaker's rejection made terminal, so that no
// retry is spent on an open breaker. TestOverloadPeersGuide checks that the
// page shows exactly these bodies; the tests below check what it says.

// Example_gobreakerTerminal is the page's sony/gobreaker v2 snippet.
func Example_gobreakerTerminal() {
	ctx := context.Background()
	api := flakyAPI(errUnavailable, errUnavailable, errUnavailable) // fails 3 times, then "hello"

	cb := gobreaker.NewCircuitBreaker[string](gobreaker.Settings{
		Name:        "api",
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 2 },
		// A call its caller gave up on says nothing about the dependency.
		IsExcluded: func(err error) bool { return errors.Is(err, context.Canceled) },
	})
	calls := 0
	s, err := retry.Retry(ctx, retry.Exponential(time.Millisecond).Take(5),
		func(ctx context.Context) (string, error) {
			return cb.Execute(func() (string, error) { calls++; return api(ctx) })
		},
		retry.If(func(err error) bool {
			return !errors.Is(err, gobreaker.ErrOpenState) && !errors.Is(err, gobreaker.ErrTooManyRequests)
		}),
	)
	fmt.Printf("%q after %d calls: %v\n", s, calls, err)
	// Output:
	// "" after 2 calls: circuit breaker is open
}

// Example_failsafeBreakerTerminal is the page's failsafe-go snippet.
func Example_failsafeBreakerTerminal() {
	ctx := context.Background()
	api := flakyAPI(errUnavailable, errUnavailable, errUnavailable) // fails 3 times, then "hello"

	cb := circuitbreaker.NewBuilder[string]().
		WithFailureThreshold(2).
		WithDelay(time.Minute).
		Build()
	calls := 0
	s, err := retry.Retry(ctx, retry.Exponential(time.Millisecond).Take(5),
		func(ctx context.Context) (string, error) {
			s, err := failsafe.With(cb).WithContext(ctx).Get(func() (string, error) { calls++; return api(ctx) })
			if errors.Is(err, circuitbreaker.ErrOpen) {
				return s, retry.Permanent(err)
			}
			return s, err
		},
	)
	fmt.Printf("%q after %d calls: %v\n", s, calls, err)
	// Output:
	// "" after 2 calls: circuit breaker open
}

// TestOverloadPeersGuide checks docs/OVERLOAD_PEERS.md's snippets against
// the examples above, as TestMigrationGuide does for the migration guide.
func TestOverloadPeersGuide(t *testing.T) {
	checkGuide(t, "../docs/OVERLOAD_PEERS.md", []string{"overload_peers_test.go"})
}

// breakerOpen is the page's classification of gobreaker's rejections.
func breakerOpen(err error) bool {
	return errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests)
}

// TestPeerBreakerOpenIsTerminal checks what the page says: with the
// rejection made terminal, Retry returns at the first attempt that meets the
// open breaker, without waiting; without it, Retry spends its whole schedule
// waiting on a breaker that refuses every attempt. The dependency always
// fails, the schedule is Exponential(1s).Take(6) (waits 1s, 2s, 4s, 8s, 16s,
// 32s) and each breaker opens after 3 failures for a minute. In synctest
// bubbles, so the times are exact.
func TestPeerBreakerOpenIsTerminal(t *testing.T) {
	policy := retry.Exponential(time.Second).Take(6)

	// gobreaker: attempts 1-3 fail at 0s, 1s and 3s and trip the breaker;
	// attempt 4, at 7s, meets it open.
	gobreakerCall := func(terminal bool) (calls, attempts int, elapsed time.Duration, err error) {
		cb := gobreaker.NewCircuitBreaker[string](gobreaker.Settings{
			ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 3 },
			Timeout:     time.Minute,
		})
		fn := always(errUnavailable, &calls)
		var opts []retry.Option
		if terminal {
			opts = append(opts, retry.If(func(err error) bool { return !breakerOpen(err) }))
		}
		start := time.Now()
		_, err = retry.Retry(context.Background(), policy, func(ctx context.Context) (string, error) {
			attempts++
			return cb.Execute(func() (string, error) { return fn(ctx) })
		}, opts...)
		return calls, attempts, time.Since(start), err
	}
	t.Run("gobreaker with If", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			calls, attempts, elapsed, err := gobreakerCall(true)
			if calls != 3 || attempts != 4 || elapsed != 7*time.Second || err != gobreaker.ErrOpenState {
				t.Errorf("%d calls, %d attempts, %v, err %v; want 3, 4, 7s, ErrOpenState itself", calls, attempts, elapsed, err)
			}
		})
	})
	t.Run("gobreaker without If", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// Attempts 4-7 (7s, 15s, 31s, 63s) meet the breaker open:
			// gobreaker half-opens only after its timeout, strictly, and
			// attempt 7 comes exactly 60s after it opened.
			calls, attempts, elapsed, err := gobreakerCall(false)
			if calls != 3 || attempts != 7 || elapsed != 63*time.Second || !errors.Is(err, retry.ErrExhausted) || !errors.Is(err, gobreaker.ErrOpenState) {
				t.Errorf("%d calls, %d attempts, %v, err %v; want 3, 7, 63s, exhausted on ErrOpenState", calls, attempts, elapsed, err)
			}
		})
	})

	// failsafe-go, with the rejection made Permanent inside fn.
	failsafeCall := func(terminal bool) (calls, attempts int, elapsed time.Duration, err error) {
		cb := circuitbreaker.NewBuilder[string]().WithFailureThreshold(3).WithDelay(time.Minute).Build()
		fn := always(errUnavailable, &calls)
		start := time.Now()
		_, err = retry.Retry(context.Background(), policy, func(ctx context.Context) (string, error) {
			attempts++
			s, err := failsafe.With(cb).WithContext(ctx).Get(func() (string, error) { return fn(ctx) })
			if terminal && errors.Is(err, circuitbreaker.ErrOpen) {
				return s, retry.Permanent(err)
			}
			return s, err
		})
		return calls, attempts, time.Since(start), err
	}
	t.Run("failsafe-go with Permanent", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			calls, attempts, elapsed, err := failsafeCall(true)
			if calls != 3 || attempts != 4 || elapsed != 7*time.Second || err != circuitbreaker.ErrOpen {
				t.Errorf("%d calls, %d attempts, %v, err %v; want 3, 4, 7s, ErrOpen itself", calls, attempts, elapsed, err)
			}
		})
	})
	t.Run("failsafe-go without Permanent", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// Attempts 4-6 (7s, 15s, 31s) meet the breaker open; attempt
			// 7, at 63s, is its half-open probe (failsafe-go half-opens
			// when its delay has passed, inclusive), which fails.
			calls, attempts, elapsed, err := failsafeCall(false)
			if calls != 4 || attempts != 7 || elapsed != 63*time.Second || !errors.Is(err, retry.ErrExhausted) || !errors.Is(err, errUnavailable) {
				t.Errorf("%d calls, %d attempts, %v, err %v; want 4, 7, 63s, exhausted on the probe's 503", calls, attempts, elapsed, err)
			}
		})
	})
}

// TestGobreakerHalfOpenIsTerminal checks the other rejection: while the
// half-open breaker's one probe is in flight, a second call meets
// ErrTooManyRequests, which the page's If ends at once, without a wait.
func TestGobreakerHalfOpenIsTerminal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cb := gobreaker.NewCircuitBreaker[string](gobreaker.Settings{
			ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 1 },
			Timeout:     time.Minute,
		})
		cb.Execute(func() (string, error) { return "", errUnavailable }) // trips it
		// gobreaker half-opens once its timeout has strictly passed.
		time.Sleep(time.Minute + time.Nanosecond)
		if cb.State() != gobreaker.StateHalfOpen {
			t.Fatalf("state %v after the timeout, want half-open", cb.State())
		}
		release := make(chan struct{})
		probeDone := make(chan struct{})
		go func() {
			defer close(probeDone)
			cb.Execute(func() (string, error) { <-release; return "hello", nil })
		}()
		synctest.Wait() // the probe holds the only half-open slot

		attempts := 0
		start := time.Now()
		_, err := retry.Retry(context.Background(), retry.Constant(time.Second).Take(5), func(ctx context.Context) (string, error) {
			attempts++
			return cb.Execute(func() (string, error) { return "hello", nil })
		}, retry.If(func(err error) bool { return !breakerOpen(err) }))
		if attempts != 1 || time.Since(start) != 0 || err != gobreaker.ErrTooManyRequests {
			t.Errorf("%d attempts in %v, err %v; want 1 at once, ErrTooManyRequests", attempts, time.Since(start), err)
		}
		close(release)
		<-probeDone
		if cb.State() != gobreaker.StateClosed {
			t.Errorf("state %v after the probe succeeded, want closed", cb.State())
		}
	})
}

// TestGobreakerCancelledCalls checks the page's IsExcluded setting: a burst
// of calls whose callers gave up (context.Canceled) trips a gobreaker that
// counts them as failures, the default, and leaves one that excludes them
// closed.
func TestGobreakerCancelledCalls(t *testing.T) {
	for _, exclude := range []bool{false, true} {
		t.Run(fmt.Sprintf("IsExcluded %v", exclude), func(t *testing.T) {
			st := gobreaker.Settings{ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 5 }}
			if exclude {
				st.IsExcluded = func(err error) bool { return errors.Is(err, context.Canceled) }
			}
			cb := gobreaker.NewCircuitBreaker[string](st)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			for range 10 {
				_, err := retry.Retry(ctx, retry.Constant(0).Take(3), func(ctx context.Context) (string, error) {
					return cb.Execute(func() (string, error) { return "", ctx.Err() })
				})
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("err %v, want context.Canceled", err)
				}
			}
			// Retry never calls fn with a done context, so the calls above
			// never reached the breaker; these reach it, as calls cancelled
			// while in flight do.
			if n := cb.Counts().Requests; n != 0 {
				t.Fatalf("%d requests reached the breaker with a done context, want 0", n)
			}
			for range 10 {
				cb.Execute(func() (string, error) { return "", context.Canceled })
			}
			want := gobreaker.StateOpen
			if exclude {
				want = gobreaker.StateClosed
			}
			if cb.State() != want {
				t.Errorf("state %v after 10 cancelled calls, want %v", cb.State(), want)
			}
		})
	}
}
