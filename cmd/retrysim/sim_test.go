package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

func TestWakeQueueOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var q wakeQueue
	var want []wake
	for i := range 500 {
		w := wake{at: time.Duration(r.IntN(50)), seq: uint64(i)}
		q.push(w)
		want = append(want, w)
	}
	slices.SortFunc(want, func(a, b wake) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return int(a.seq) - int(b.seq)
	})
	for i, w := range want {
		if got := q.pop(); got.at != w.at || got.seq != w.seq {
			t.Fatalf("pop %d = (%v, %d), want (%v, %d)", i, got.at, got.seq, w.at, w.seq)
		}
	}
	if len(q) != 0 {
		t.Errorf("%d wake-ups left", len(q))
	}
}

// TestClientRunsRealRetry checks that a real retry.Do waits the schedule's
// delays in simulated time, and that clients interleave in time order.
func TestClientRunsRealRetry(t *testing.T) {
	s := &sim{}
	type call struct {
		who string
		at  time.Duration
	}
	var calls []call
	errFail := errors.New("fail")
	start := func(who string, at time.Duration, sched retry.Schedule) {
		s.spawn(at, func(c *client) {
			err := retry.Do(context.Background(), sched, func(context.Context) error {
				calls = append(calls, call{who, c.sim.now})
				if c.Now().Sub(epoch) != c.sim.now {
					t.Errorf("Now() = %v, want epoch + %v", c.Now(), c.sim.now)
				}
				return errFail
			}, retry.WithClock(c))
			if !errors.Is(err, retry.ErrExhausted) || !errors.Is(err, errFail) {
				t.Errorf("%s: Do = %v, want exhausted after errFail", who, err)
			}
		})
	}
	start("a", 0, retry.Delays(time.Second, 2*time.Second, 3*time.Second))
	start("b", 500*time.Millisecond, retry.Constant(time.Second).Take(2))
	end := s.run()

	want := []call{{"a", 0}, {"b", 500 * time.Millisecond}, {"a", time.Second}, {"b", 1500 * time.Millisecond},
		{"b", 2500 * time.Millisecond}, {"a", 3 * time.Second}, {"a", 6 * time.Second}}
	if !slices.Equal(calls, want) {
		t.Errorf("calls = %v\nwant    %v", calls, want)
	}
	if end != 6*time.Second {
		t.Errorf("run ended at %v, want 6s", end)
	}
}

func TestSleepZeroDoesNotYield(t *testing.T) {
	s := &sim{}
	var order []string
	s.spawn(0, func(c *client) {
		order = append(order, "a starts")
		if err := c.Sleep(context.Background(), 0); err != nil {
			t.Errorf("Sleep(0) = %v", err)
		}
		order = append(order, "a after Sleep(0)")
	})
	s.spawn(0, func(c *client) { order = append(order, "b") })
	s.run()
	if want := []string{"a starts", "a after Sleep(0)", "b"}; !slices.Equal(order, want) {
		t.Errorf("order = %q, want %q", order, want)
	}
}

func TestSleepReportsDoneContext(t *testing.T) {
	s := &sim{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.spawn(0, func(c *client) {
		if err := c.Sleep(ctx, time.Second); !errors.Is(err, context.Canceled) {
			t.Errorf("Sleep with a done context = %v, want context.Canceled", err)
		}
	})
	s.run()
}
