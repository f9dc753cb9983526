package retryserver

import (
	"math"
	"testing"
	"time"
)

// FuzzPushback: whatever the service time, queue and concurrency, the
// pushback is between 1 ms and a minute, and without jitter it never
// exceeds the drain time it estimates by more than rounding.
func FuzzPushback(f *testing.F) {
	f.Add(int64(10*time.Millisecond), uint16(3), uint16(2), 0.5)
	f.Add(int64(math.MaxInt64), uint16(1000), uint16(1), 0.999)
	f.Add(int64(0), uint16(0), uint16(1), 0.0)
	f.Add(int64(-5), uint16(7), uint16(100), 0.25)
	f.Fuzz(func(t *testing.T, service int64, queued, limit uint16, jitter float64) {
		if !(jitter >= 0 && jitter < 1) {
			t.Skip()
		}
		s := New(Concurrency(max(int(limit), 1)))
		s.service = time.Duration(service)
		s.firsts.w = make([]*waiter, queued)
		s.jitter = func() float64 { return jitter }
		d := s.pushback()
		if d < time.Millisecond || d > maxPushback {
			t.Fatalf("pushback %v outside [1ms, 1m]", d)
		}
		s.jitter = func() float64 { return 0 }
		d0 := s.pushback()
		if d0 > d {
			t.Fatalf("pushback without jitter %v above the jittered %v", d0, d)
		}
		if s.service > 0 && float64(d0) > max(float64(s.service)*float64(int(queued)+1)/float64(s.limit), float64(time.Millisecond))+1 {
			t.Fatalf("pushback without jitter %v above the drain time", d0)
		}
	})
}
