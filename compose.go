package retry

import (
	"math/rand/v2"
	"strconv"
	"time"
)

// Take returns the first n delays of s: n retries, so at most n+1 attempts.
// If s has fewer than n delays, Take returns all of them. Take(0) is empty and
// never ranges over s. Take does not draw the (n+1)-th delay, so it consumes no
// randomness beyond what it yields.
//
// Take panics if n is negative or s is nil.
func (s Schedule) Take(n int) Schedule {
	mustSchedule("Take", s)
	if n < 0 {
		panic("retry: Take: negative count " + strconv.Itoa(n))
	}
	if f := fused(s, func(p *plan) *plan { return p.withTake(n) }); f != nil {
		return f
	}
	if n == 0 {
		return func(func(time.Duration) bool) {}
	}
	return take(s, n)
}

// Cap returns s with every delay above limit replaced by limit: min(d, limit).
// A jitter combinator placed after Cap draws below the cap; one placed before
// it has its large draws clamped to the cap.
//
// Cap panics if limit is negative or s is nil.
func (s Schedule) Cap(limit time.Duration) Schedule {
	mustSchedule("Cap", s)
	mustNonNegative("Cap", "limit", limit)
	return withOp(s, op{kind: opClamp, hi: limit}, func() Schedule { return clamp(s, 0, limit) })
}

// AtLeast returns s with every delay below floor replaced by floor:
// max(d, floor). Placed after FullJitter it keeps a random draw from being
// uselessly short.
//
// AtLeast panics if floor is negative or s is nil.
func (s Schedule) AtLeast(floor time.Duration) Schedule {
	mustSchedule("AtLeast", s)
	mustNonNegative("AtLeast", "floor", floor)
	return withOp(s, op{kind: opClamp, lo: floor, hi: maxDuration}, func() Schedule { return clamp(s, floor, maxDuration) })
}

// FullJitter returns s with every delay d replaced by a uniformly distributed
// random delay in [0, d]. It spreads clients over the whole interval and is
// the jitter that minimises contention in AWS's measurements; its mean is d/2.
//
// src supplies the randomness; nil means math/rand/v2's goroutine-safe
// generator. Draws from a non-nil src are serialized by a lock of this
// package, so one src may feed several schedules ranged by many goroutines
// at once (as long as nothing else draws from it concurrently), and a seeded
// source gives the same sequence on every run. A *rand.Rand is a valid src.
//
// FullJitter panics if s is nil.
func (s Schedule) FullJitter(src rand.Source) Schedule {
	mustSchedule("FullJitter", s)
	return withOp(s, op{kind: opFull, src: source{src}}, func() Schedule { return full(s, source{src}) })
}

// EqualJitter returns s with every delay d replaced by d/2 plus a uniformly
// distributed random delay in [0, d/2]: it keeps at least half of each delay
// and randomizes the rest. The result lies in [d/2, d]. src is used as in
// FullJitter.
//
// EqualJitter panics if s is nil.
func (s Schedule) EqualJitter(src rand.Source) Schedule {
	mustSchedule("EqualJitter", s)
	return withOp(s, op{kind: opEqual, src: source{src}}, func() Schedule { return jitter(s, 0, source{src}) })
}

// Jitter returns s with every delay d replaced by a uniformly distributed
// random delay in [d·(1−factor), d·(1+factor)], saturating at the largest
// Duration: Jitter(0.2, nil) is the ±20% of gRPC's connection backoff. The
// result can exceed a Cap placed before it by the factor; place Cap after
// Jitter for a hard bound. A factor of 0 returns the delays unchanged. src is
// used as in FullJitter.
//
// Jitter panics if factor is NaN or outside [0, 1], or if s is nil.
func (s Schedule) Jitter(factor float64, src rand.Source) Schedule {
	mustSchedule("Jitter", s)
	if !(factor >= 0 && factor <= 1) {
		panic("retry: Jitter: factor " + strconv.FormatFloat(factor, 'g', -1, 64) + " is outside [0, 1]")
	}
	if factor == 0 {
		if planOf(s) != nil { // never negative: nothing to do
			return s
		}
		return clamp(s, 0, maxDuration)
	}
	return withOp(s, op{kind: opJitter, factor: factor, src: source{src}}, func() Schedule { return jitter(s, factor, source{src}) })
}

// Then returns the delays of s followed by those of next. If s is infinite,
// next is never reached. Then ranges next only once s has ended.
//
// Then panics if s or next is nil.
func (s Schedule) Then(next Schedule) Schedule {
	mustSchedule("Then", s)
	mustSchedule("Then", next)
	if p, q := planOf(s), planOf(next); p != nil && q != nil {
		if r := p.then(q); r != nil {
			return planSchedule(r)
		}
	}
	return then(s, next)
}

// Within returns the delays of s for as long as their running sum stays
// within total, and stops before the first delay that would make it exceed
// total. Within(0) keeps only leading zero delays.
//
// Within bounds the sum of the schedule's own delays, which is what Retry
// waits unless a server pushes back: a RetryAfter or RetryAt longer than the
// schedule's delay lengthens that wait (up to MaxPushback each) without
// counting against total, so Constant(time.Second).Within(3*time.Second)
// with a one-minute pushback on every attempt waits three minutes. Neither
// bounds the time spent in attempts. To bound the whole call, give it a
// context deadline: Retry never starts a wait that would end after it.
//
// Within panics if total is negative or s is nil.
func (s Schedule) Within(total time.Duration) Schedule {
	mustSchedule("Within", s)
	mustNonNegative("Within", "total", total)
	return withOp(s, op{kind: opWithin, hi: total}, func() Schedule { return within(s, total) })
}

// withOp returns s followed by o: fused into s's plan if s is a plan's
// Schedule with room for o, and as relay() builds it otherwise.
func withOp(s Schedule, o op, relay func() Schedule) Schedule {
	if f := fused(s, func(p *plan) *plan { return p.withOp(o) }); f != nil {
		return f
	}
	return relay()
}

// fused returns the Schedule of the plan of s followed by the combinator
// that change makes of a plan, if s is a plan's Schedule and change returns
// a plan; otherwise it returns nil, and the combinator must relay.
func fused(s Schedule, change func(*plan) *plan) Schedule {
	if p := planOf(s); p != nil {
		if q := change(p); q != nil {
			return planSchedule(q)
		}
	}
	return nil
}
