//go:build !race

package retryconnect_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestAllocations bounds what the interceptor and Hedge add to a call that
// succeeds at once, in memory. The race detector changes allocation
// counts, hence the build tag.
func TestAllocations(t *testing.T) {
	vs := variants(memory{echoHandler()}, "http://in.memory")
	allocs := make(map[string]float64)
	for _, v := range vs {
		allocs[v.name] = testing.AllocsPerRun(200, func() {
			if _, err := v.call(context.Background(), connect.NewRequest(wrapperspb.String("hi"))); err != nil {
				t.Fatal(err)
			}
		})
	}
	// The interceptor: the attempt's closure and what it captures.
	if extra := allocs["retryconnect"] - allocs["bare"]; extra > 3 {
		t.Errorf("the interceptor adds %v allocations to a call, want at most 3", extra)
	}
	// Hedge: retry.Hedge's goroutine and state, the attempt's request and
	// its copy of the headers.
	if extra := allocs["hedge"] - allocs["bare"]; extra > 14 {
		t.Errorf("Hedge adds %v allocations to a call, want at most 14", extra)
	}
	t.Logf("allocations per call: %v", allocs)
}
