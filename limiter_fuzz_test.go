package retry_test

import (
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// FuzzLimiter drives a Limiter with arbitrary outcomes and latencies
// (including zero, huge and backward-running clocks): the limit always
// stays between its floor and its ceiling, and every permit comes back.
func FuzzLimiter(f *testing.F) {
	f.Add(uint8(1), uint16(100), []byte{0, 1, 2, 3, 200, 255, 7, 9})
	f.Add(uint8(5), uint16(5), []byte{255, 255, 255, 0, 0, 0})
	f.Fuzz(func(t *testing.T, floor uint8, ceiling uint16, steps []byte) {
		lo, hi := int(floor)%50+1, int(ceiling)%2000+1
		if lo > hi {
			lo, hi = hi, lo
		}
		clock := &retry.FakeClock{}
		l := retry.NewLimiter(retry.LimiterMin(lo), retry.LimiterMax(hi), retry.LimiterClock(clock))
		var held []retry.Permit
		for i, b := range steps {
			switch b % 4 {
			case 0: // take as many as allowed, up to a few
				for range int(b>>2)%8 + 1 {
					if p, ok := l.TryAcquire(); ok {
						held = append(held, p)
					}
				}
			case 1, 2, 3:
				if len(held) == 0 {
					continue
				}
				// Time passes: from nothing to hours, sometimes backwards.
				d := time.Duration(b) * time.Duration(1+i%7) * time.Millisecond
				if b > 250 {
					d = time.Duration(b) * time.Hour
				}
				if b == 13 {
					d = -time.Second
				}
				clock.Advance(d)
				p := held[0]
				held = held[1:]
				switch b % 4 {
				case 1:
					p.Success()
				case 2:
					p.Failure()
				default:
					p.Drop()
				}
			}
			if n := l.Limit(); n < lo || n > hi {
				t.Fatalf("limit %d outside [%d, %d]", n, lo, hi)
			}
		}
		for _, p := range held {
			p.Success()
		}
		if n := l.InFlight(); n != 0 {
			t.Fatalf("%d permits still out", n)
		}
	})
}
