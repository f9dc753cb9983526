package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

func ExampleParse() {
	s, err := retry.Parse("exponential(100ms).cap(2s).take(6)")
	if err != nil {
		fmt.Println(err)
		return
	}
	for d := range s {
		fmt.Println(d)
	}
	// Output:
	// 100ms
	// 200ms
	// 400ms
	// 800ms
	// 1.6s
	// 2s
}

func ExampleParse_then() {
	// A few quick retries, then a slow steady pace; names ignore case.
	s, err := retry.Parse("Delays(10ms, 50ms).Then(Constant(1s).Take(3))")
	if err != nil {
		fmt.Println(err)
		return
	}
	for d := range s {
		fmt.Println(d)
	}
	// Output:
	// 10ms
	// 50ms
	// 1s
	// 1s
	// 1s
}

func ExampleParse_error() {
	for _, spec := range []string{
		"exponential(100ms).cpa(2s)",
		"constant(1s).jitter(1.5)",
		"decorrelated(1s, 10ms)",
		"constant(1s).take(3",
		"constant(1s).take(+3)",
		// Of a long spec, only the 64 bytes around the column are quoted.
		"delays(" + strings.Repeat("1ms, ", 40) + "1ms,, 2ms).then(" + strings.Repeat("constant(1s).", 20) + "take(3))",
	} {
		_, err := retry.Parse(spec)
		fmt.Println(err)
	}
	// Output:
	// retry: parse "exponential(100ms).cpa(2s)": column 20: unknown combinator "cpa"
	// retry: parse "constant(1s).jitter(1.5)": column 21: factor 1.5 is outside [0, 1]
	// retry: parse "decorrelated(1s, 10ms)": column 18: limit 10ms is less than base 1s
	// retry: parse "constant(1s).take(3": column 18: unclosed "("
	// retry: parse "constant(1s).take(+3)": column 19: invalid count "+3"
	// retry: parse …"s, 1ms, 1ms, 1ms, 1ms, 1ms, 1ms,, 2ms).then(constant(1s).constan"…: column 212: missing argument
}

func ExampleIsTransient() {
	// The call fails twice in ways that heal, then with an error that does
	// not: Retry waits after the first two and stops at the third.
	badRequest := errors.New("400 bad request")
	results := []error{
		fmt.Errorf("read response: %w", os.ErrDeadlineExceeded),
		fmt.Errorf("decode: %w", io.ErrUnexpectedEOF),
		badRequest,
	}
	clock := retry.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	calls := 0
	err := retry.Do(context.Background(), retry.Exponential(100*time.Millisecond).Take(5),
		func(context.Context) error {
			err := results[calls]
			calls++
			return err
		},
		retry.If(retry.IsTransient),
		retry.WithClock(clock),
		retry.OnRetry(func(a retry.Attempt) {
			fmt.Printf("attempt %d: %v; retrying in %v\n", a.Number, a.Err, a.Delay)
		}),
	)
	fmt.Println("stopped after", calls, "attempts:", err)
	fmt.Println("same error:", err == badRequest)
	fmt.Println("waited:", clock.Sleeps())
	// Output:
	// attempt 1: read response: i/o timeout; retrying in 100ms
	// attempt 2: decode: unexpected EOF; retrying in 200ms
	// stopped after 3 attempts: 400 bad request
	// same error: true
	// waited: [100ms 200ms]
}

func ExampleIsTransient_values() {
	for _, err := range []error{
		nil,
		os.ErrDeadlineExceeded,
		context.DeadlineExceeded,
		io.ErrUnexpectedEOF,
		context.Canceled,
		fmt.Errorf("%w, then %w", os.ErrDeadlineExceeded, context.Canceled),
		retry.Permanent(io.ErrUnexpectedEOF),
		errors.New("unknown"),
	} {
		fmt.Printf("%v: %v\n", err, retry.IsTransient(err))
	}
	// Output:
	// <nil>: false
	// i/o timeout: true
	// context deadline exceeded: true
	// unexpected EOF: true
	// context canceled: false
	// i/o timeout, then context canceled: false
	// unexpected EOF: false
	// unknown: false
}

func ExampleParseWithSource() {
	// A seeded source makes a parsed schedule's jitter repeatable.
	s, err := retry.ParseWithSource("exponential(100ms).cap(2s).fulljitter.take(4)", rand.NewPCG(1, 2))
	if err != nil {
		panic(err)
	}
	for d := range s {
		fmt.Println(d.Round(time.Millisecond))
	}
	// Output:
	// 77ms
	// 123ms
	// 314ms
	// 637ms
}
