package retry

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestPanickingSourceReleasesLock draws from a rand.Source that panics, as a
// nil *rand.PCG does, and recovers the panic as net/http does for a handler:
// the package's lock on sources must be free again, so every other seeded
// schedule in the process keeps working. It is not parallel, so that nothing
// else can hold the lock while it looks. TryLock tells a leaked lock apart
// without waiting for it, and the test then releases the leaked lock itself
// (a sync.Mutex belongs to no goroutine), so that neither it nor the tests
// after it hang.
func TestPanickingSourceReleasesLock(t *testing.T) {
	tests := []struct {
		name  string
		sched Schedule
	}{
		{"FullJitter", Constant(time.Second).FullJitter((*rand.PCG)(nil))},
		{"EqualJitter", Constant(time.Second).EqualJitter((*rand.PCG)(nil))},
		{"Jitter", Constant(time.Second).Jitter(0.5, (*rand.PCG)(nil))},
		{"DecorrelatedJitter", DecorrelatedJitter(time.Millisecond, time.Second, (*rand.PCG)(nil))},
		{"SmoothJitter", SmoothJitter(time.Second, (*rand.PCG)(nil))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Panics(t, func() {
				for range tt.sched {
					break
				}
			})
			if !sourceMu.TryLock() {
				t.Error("a panic in a rand.Source left the lock held")
			}
			sourceMu.Unlock()
			seeded := Constant(time.Second).FullJitter(rand.NewPCG(1, 2)).Take(3)
			assert.Len(t, first(seeded, 10), 3, "a seeded jitter works after the panic")
		})
	}
}

// TestSeededAcrossRuns: a seeded source repeats its delays when it is made
// anew (each program run, each test), while two ranges over one schedule
// continue the source's sequence, so they differ: a source holds state even
// though the schedule does not. A nil source differs from run to run.
func TestSeededAcrossRuns(t *testing.T) {
	build := func(src rand.Source) Schedule {
		return Exponential(time.Millisecond).Cap(time.Second).FullJitter(src).Take(8)
	}
	a := first(build(rand.NewPCG(1, 2)), 8)
	assert.Equal(t, a, first(build(rand.NewPCG(1, 2)), 8), "a new source with the same seed")
	s := build(rand.NewPCG(1, 2))
	assert.Equal(t, a, first(s, 8))
	assert.NotEqual(t, a, first(s, 8), "the second range continues the source")
	// These values are fixed by math/rand/v2's PCG, which never changes.
	want := make([]string, len(a))
	for i, d := range a {
		want[i] = strconv.FormatInt(int64(d), 10)
	}
	assert.Equal(t, "769374 1232873 3137712 6372773 3748420 1318568 31994352 57521136", strings.Join(want, " "))
	nilA, nilB := first(build(nil), 8), first(build(nil), 8)
	assert.NotEqual(t, nilA, nilB, "the runtime's generator")
}
