package retry

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// FuzzRetryWaitsTheSchedule: whatever the chain of sources and combinators
// (FuzzSchedule's builder, hand-written schedules with negative delays
// included), Retry waits exactly the delays a range over the same chain
// yields, a negative one as 0, and makes one attempt more than it waits;
// and so does the same chain built on opaque sources, which the combinators
// relay instead of fusing into a plan. Neither the retry loop's own way of
// drawing delays nor fusion may differ from the iterators.
func FuzzRetryWaitsTheSchedule(f *testing.F) {
	f.Add([]byte{2, 1, 0, 2, 1, 0, 100, 1, 3, 3, 0, 6}, uint8(10))
	f.Add([]byte{6, 3, 0, 5, 3, 1, 0, 3, 2, 3, 6, 3, 0, 90}, uint8(30))
	f.Add([]byte{7, 4, 0, 20, 4, 5, 255, 1, 4, 0, 3, 0, 64}, uint8(5))
	f.Add([]byte{3, 1, 9, 255, 6, 2, 3, 0, 4, 5, 128, 2, 3, 7, 0, 3, 1, 0, 10}, uint8(40))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0xf8, 4, 0, 3, 1, 2, 5, 3, 9, 3, 4, 2, 3, 5, 0, 3, 4, 6, 4, 0, 9}, uint8(9))
	f.Add([]byte("00000000\xff200101%"), uint8(3))
	f.Add([]byte{5, 5, 3, 0, 9, 3, 0, 7, 3, 0, 5, 0, 2, 2, 3, 4, 0, 8}, uint8(200))
	f.Fuzz(func(t *testing.T, data []byte, failures uint8) {
		build := func(wrap func(Schedule) Schedule) Schedule {
			r := &bytesReader{data: slices.Clone(data)}
			seed := r.uint64()
			s, _ := buildChain(r, rand.NewPCG(seed, seed^0x9e3779b97f4a7c15), wrap)
			return s
		}
		n := int(failures)
		var want []time.Duration
		for d := range build(same) {
			if len(want) == n {
				break
			}
			want = append(want, max(d, 0))
		}
		for name, wrap := range map[string]func(Schedule) Schedule{"fused": same, "opaque": opaque} {
			clock := NewFakeClock(epoch)
			calls := 0
			err := Do(context.Background(), build(wrap), func(context.Context) error {
				if calls++; calls > n {
					return nil
				}
				return errBoom
			}, WithClock(clock))
			got := clock.Sleeps()
			if !slices.Equal(got, want) {
				t.Fatalf("%s: Retry waited %v; a range yields %v", name, got, want)
			}
			if calls != len(got)+1 {
				t.Fatalf("%s: %d attempts for %d waits", name, calls, len(got))
			}
			if (err == nil) != (len(want) == n) {
				t.Fatalf("%s: error %v after %d waits of at most %d", name, err, len(got), n)
			}
		}
	})
}
