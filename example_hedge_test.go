package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

func ExampleHedge() {
	// The first replica hangs; the hedge sent 1 ms later answers.
	var calls atomic.Int32
	lost := make(chan error, 1)
	v, err := retry.Hedge(context.Background(), retry.Constant(time.Millisecond).Take(2), func(ctx context.Context) (string, error) {
		if calls.Add(1) == 1 {
			<-ctx.Done()
			lost <- context.Cause(ctx)
			return "", ctx.Err()
		}
		return "from a hedge", nil
	})
	fmt.Println(v, err)
	fmt.Println("the first attempt:", <-lost)
	// Output:
	// from a hedge <nil>
	// the first attempt: retry: hedge lost
}

func ExampleHedge_failures() {
	// Every attempt fails: a failure starts the next attempt at once, so
	// three attempts are made without waiting the delays.
	_, err := retry.Hedge(context.Background(), retry.Constant(time.Hour).Take(2), func(context.Context) (int, error) {
		return 0, errUnavailable
	})
	fmt.Println(err)
	fmt.Println(errors.Is(err, retry.ErrExhausted), errors.Is(err, errUnavailable))
	// Output:
	// retry: gave up after 3 attempts: schedule exhausted: last error: service unavailable
	// true true
}

func ExampleHedge_adaptive() {
	// Hedge at the observed 95th percentile, between 1 ms and 1 s, once.
	lat := retry.NewLatency()
	hedgeAfter := lat.Quantile(0.95).AtLeast(time.Millisecond).Cap(time.Second).Take(1)
	for range 100 {
		lat.Record(2 * time.Millisecond) // what earlier calls took
	}
	var calls atomic.Int32
	v, err := retry.Hedge(context.Background(), hedgeAfter, func(ctx context.Context) (int, error) {
		if n := calls.Add(1); n == 1 {
			<-ctx.Done() // a straggler: the hedge starts after about 2 ms
			return 0, ctx.Err()
		}
		return 42, nil
	}, retry.WithLatency(lat))
	fmt.Println(v, err, calls.Load())
	// Output: 42 <nil> 2
}

func ExampleHedge_fakeClock() {
	// Under a FakeClock attempts take no time, so each one answers before
	// any delay elapses: Hedge makes them one at a time and never sleeps.
	clock := retry.NewFakeClock(epoch)
	v, err := retry.Hedge(context.Background(), retry.Constant(time.Second).Take(3), flaky(2), retry.WithClock(clock))
	fmt.Println(v, err, clock.Sleeps())
	// Output: 42 <nil> []
}

func ExampleOnDiscard() {
	// Values that hold resources: close the body of every response that
	// lost the race.
	type response struct{ body io.ReadCloser }
	closed := make(chan string, 2)
	var calls atomic.Int32
	r, err := retry.Hedge(context.Background(), retry.Constant(0).Take(1), func(ctx context.Context) (*response, error) {
		n := calls.Add(1)
		if n == 1 {
			<-ctx.Done() // this one loses, yet answers anyway
		}
		return &response{body: closer{fmt.Sprint("body ", n), closed}}, nil
	}, retry.OnDiscard(func(r *response) { r.body.Close() }))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("closed:", <-closed)
	r.body.Close()
	fmt.Println("closed:", <-closed)
	// Output:
	// closed: body 1
	// closed: body 2
}

// closer reports its name on closed when it is closed.
type closer struct {
	name   string
	closed chan<- string
}

func (c closer) Read([]byte) (int, error) { return 0, io.EOF }
func (c closer) Close() error             { c.closed <- c.name; return nil }
