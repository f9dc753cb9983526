package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
)

// TestLatencyAllocations checks that recording a latency and reading the
// estimate a Quantile schedule draws from allocate nothing, nor a Retry
// that records its attempts.
func TestLatencyAllocations(t *testing.T) {
	skipRace(t)
	l := retry.NewLatency()
	e := retry.NewEstimate(l, 0.95)
	var i int
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		i++
		l.Record(time.Duration(i) * time.Microsecond)
		e.Get()
	}))
	opts := []retry.Option{retry.WithLatency(l)}
	ok := func(context.Context) (int, error) { return 1, nil }
	s := retry.Constant(0) // built once, as building a Schedule allocates
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		_, _ = retry.Retry(context.Background(), s, ok, opts...)
	}))
}
