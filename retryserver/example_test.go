package retryserver_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seed-b8c8f69d/retry/retryserver"
)

// A server of one request at a time, with no queue: while a request holds
// the slot, the next is refused with a pushback, the time the server needs
// to drain; once the slot is released, requests are served again.
func ExampleShedder_Admit() {
	s := retryserver.New(retryserver.Concurrency(1), retryserver.QueueLimit(0))
	ctx := context.Background()

	first, err := s.Admit(ctx, false)
	fmt.Println("first:", err)

	_, err = s.Admit(ctx, false)
	var rf *retryserver.Refusal
	if errors.As(err, &rf) {
		fmt.Println("second refused:", errors.Is(err, retryserver.ErrOverloaded), "come back after a pushback > 0:", rf.Pushback > 0)
	}

	first.Success() // served: its slot is free again
	third, err := s.Admit(ctx, true)
	fmt.Println("third (a retry):", err)
	third.Success()
	fmt.Printf("%+v\n", s.Stats())
	// Output:
	// first: <nil>
	// second refused: true come back after a pushback > 0: true
	// third (a retry): <nil>
	// {InFlight:0 Queued:0 Admitted:2 Refused:1 Gone:0}
}

// The rules alone, on times of one's own (a simulator's, another
// framework's queue): a queue of at most two requests, CoDel's 5 ms target
// over a 100 ms interval. A retry meets a queue that has stood for a whole
// interval and is refused at once; a first attempt still waits, and in a
// full queue takes the place of a queued retry.
func ExampleRules() {
	const ms = time.Millisecond
	r := retryserver.NewRules(5*ms, 100*ms, 2)
	r.Emptied(0) // the queue was empty at time 0, and has held requests since
	r.Served(10 * ms)
	fmt.Println("retry at 50 ms:", r.Decide(50*ms, 1, 0, true) == retryserver.VerdictQueue)
	fmt.Println("retry at 100 ms:", r.Decide(100*ms, 1, 0, true) == retryserver.VerdictRefuse)
	fmt.Println("first attempt, full queue:", r.Decide(100*ms, 2, 1, false) == retryserver.VerdictEvictRetry)
	fmt.Println("pushback:", r.Refuse(100*ms, 2, 1, 0))
	// Output:
	// retry at 50 ms: true
	// retry at 100 ms: true
	// first attempt, full queue: true
	// pushback: 30ms
}
