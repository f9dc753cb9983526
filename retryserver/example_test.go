package retryserver_test

import (
	"context"
	"errors"
	"fmt"

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
