package retry

import (
	"math/rand/v2"
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
