package retryserver

import (
	"math"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	const ms = time.Millisecond
	r := NewRules(5*ms, 100*ms, 2)
	r.Emptied(0)
	for _, c := range []struct {
		name            string
		now             time.Duration
		queued, retries int
		retry           bool
		want            Verdict
	}{
		{"a first attempt, room", 0, 1, 0, false, VerdictQueue},
		{"a retry, room, not standing", 50 * ms, 1, 0, true, VerdictQueue},
		{"a retry, standing", 100 * ms, 1, 0, true, VerdictRefuse},
		{"a first attempt, standing, room", 100 * ms, 1, 1, false, VerdictQueue},
		{"a first attempt, full of first attempts", 0, 2, 0, false, VerdictRefuse},
		{"a first attempt, full with a retry", 0, 2, 1, false, VerdictEvictRetry},
		{"a retry, full", 0, 2, 1, true, VerdictRefuse},
		{"an empty queue never stands", 200 * ms, 0, 0, true, VerdictQueue},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := r.Decide(c.now, c.queued, c.retries, c.retry); got != c.want {
				t.Errorf("Decide = %d, want %d", got, c.want)
			}
		})
	}
	if w := r.MaxWait(50*ms, 1); w != 100*ms {
		t.Errorf("MaxWait before standing = %v, want Interval", w)
	}
	if w := r.MaxWait(100*ms, 1); w != 5*ms {
		t.Errorf("MaxWait standing = %v, want Target", w)
	}
}

// FuzzRefuse: whatever the service time, queue and slots, the pushback is
// between 1 ms and maxRefusalPushback (or -1), and without jitter it never
// exceeds the drain time it estimates by more than rounding.
func FuzzRefuse(f *testing.F) {
	f.Add(int64(10*time.Millisecond), uint16(3), uint16(2), 0.5)
	f.Add(int64(math.MaxInt64), uint16(1000), uint16(1), 0.999)
	f.Add(int64(0), uint16(0), uint16(0), 0.0)
	f.Add(int64(-5), uint16(7), uint16(100), 0.25)
	f.Fuzz(func(t *testing.T, service int64, queued, slots uint16, jitter float64) {
		if !(jitter >= 0 && jitter < 1) {
			t.Skip()
		}
		r := NewRules(5*time.Millisecond, 100*time.Millisecond, 128)
		r.Served(time.Duration(service))
		d := r.Refuse(0, int(queued), int(slots), jitter)
		if d < time.Millisecond || d > maxRefusalPushback {
			t.Fatalf("pushback %v outside [1ms, %v]", d, maxRefusalPushback)
		}
		d0 := r.Refuse(0, int(queued), int(slots), 0)
		if d0 > d {
			t.Fatalf("pushback without jitter %v above the jittered %v", d0, d)
		}
		if r.service > 0 {
			drain := float64(r.service) * float64(int(queued)+1) / float64(max(int(slots), 1))
			if float64(d0) > max(drain, float64(time.Millisecond))+1 {
				t.Fatalf("pushback without jitter %v above the drain time %v", d0, time.Duration(drain))
			}
		}
	})
}

func TestHard(t *testing.T) {
	const ms = time.Millisecond
	r := NewRules(5*ms, 100*ms, 0)
	r.Arrive(0)
	r.Arrive(0)
	if d := r.Refuse(0, 0, 1, 0); d <= 0 {
		t.Fatalf("first refusal %v, want positive", d)
	}
	r.Arrive(100 * ms) // a new window: the last refused half
	if d := r.Refuse(100*ms, 0, 1, 0); d != -1 {
		t.Errorf("refusal after a window that refused half: %v, want -1", d)
	}
	r.Arrive(300 * ms) // a gap of two windows clears it
	if d := r.Refuse(300*ms, 0, 1, 0); d <= 0 {
		t.Errorf("refusal after a quiet gap: %v, want positive", d)
	}
}
