package bench

import (
	"context"
	"math/rand/v2"
	"time"
)

// loopDo is the floor every library is measured against: the retry loop a
// careful engineer writes by hand for p, with no library at all. It checks
// ctx before each attempt, draws full jitter below the capped exponential
// delay, and reuses one time.Timer for every wait of the call.
func loopDo(ctx context.Context, p policy, fn func(context.Context) error) error {
	var t *time.Timer
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			stopTimer(t)
			return context.Cause(ctx)
		}
		err := fn(ctx)
		if err == nil || i == attempts-1 {
			stopTimer(t)
			return err
		}
		d := loopDelay(p, i)
		if t == nil {
			t = time.NewTimer(d)
		} else {
			t.Reset(d)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		}
	}
}

// loopDelay is the loop's delay primitive: the wait before retry i (from 0),
// a uniform draw in [0, min(base·2ⁱ, limit)], raised to p.floor. i is less
// than attempts, so the shift cannot overflow for any policy here.
func loopDelay(p policy, i int) time.Duration {
	d := min(p.base<<i, p.limit)
	return max(time.Duration(rand.Int64N(int64(d)+1)), p.floor)
}

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}
