package retry_test

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
)

// TestRangedAMillionTimes: ranging a schedule over and over, or taking a
// million delays from one run, holds no memory (measured from outside the
// package, where users range schedules): the heap after a million
// runs (a hundred thousand under the race detector) is where it was after a
// thousand, and a run of a million delays allocates what a run of ten does.
func TestRangedAMillionTimes(t *testing.T) {
	if testing.Short() {
		t.Skip("a million runs")
	}
	s := retry.Exponential(time.Millisecond).Cap(time.Second).Jitter(0.2, rand.NewPCG(1, 2)).AtLeast(time.Microsecond).Within(time.Hour).Take(5)
	runs := func(n int) {
		for range n {
			for d := range s {
				if d < 0 || d > 1200*time.Millisecond {
					t.Fatalf("delay %v", d)
				}
			}
		}
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	n := 1_000_000
	if retry.RaceEnabled {
		n = 100_000 // the race detector makes each run 10 times slower
	}
	runs(1000)
	before := heap()
	runs(n)
	after := heap()
	assert.Less(t, int64(after)-int64(before), int64(64<<10), "heap grew from %d to %d bytes", before, after)

	if retry.RaceEnabled {
		return
	}
	long := retry.Exponential(time.Millisecond).Cap(time.Second).FullJitter(rand.NewPCG(3, 4)).Within(math.MaxInt64)
	count := func(n int) func() {
		return func() {
			i := 0
			for range long {
				if i++; i == n {
					break
				}
			}
		}
	}
	assert.Equal(t, testing.AllocsPerRun(5, count(10)), testing.AllocsPerRun(5, count(1_000_000)))
}
