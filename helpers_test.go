// Helpers shared by the tests of several files of package retry.

package retry

import (
	"math"
	"time"
)

// combinators are every combinator, each applied with arguments that leave
// the delays of the tests below unchanged or bounded.
var combinators = map[string]func(Schedule) Schedule{
	"Take":        func(s Schedule) Schedule { return s.Take(100) },
	"Cap":         func(s Schedule) Schedule { return s.Cap(s1) },
	"AtLeast":     func(s Schedule) Schedule { return s.AtLeast(0) },
	"FullJitter":  func(s Schedule) Schedule { return s.FullJitter(nil) },
	"EqualJitter": func(s Schedule) Schedule { return s.EqualJitter(nil) },
	"Jitter":      func(s Schedule) Schedule { return s.Jitter(0.5, nil) },
	"Within":      func(s Schedule) Schedule { return s.Within(time.Hour) },
	"Then":        func(s Schedule) Schedule { return s.Then(Delays()) },
	"Then second": func(s Schedule) Schedule { return Delays().Then(s) },
}

// ignoring is a Schedule that ignores false: it calls yield with d up to n
// times whatever yield returns, counting the calls in *made.
func ignoring(d time.Duration, n int, made *int) Schedule {
	return func(yield func(time.Duration) bool) {
		for range n {
			*made++
			yield(d)
		}
	}
}

// minDuration is the most negative Duration.
const minDuration = time.Duration(math.MinInt64)

// fusion reports whether chains of built-in schedules are fused into plans
// (off in the purego build).
var fusion = planOf(Constant(0)) != nil

// opaque returns s behind a Schedule of its own, as a hand-written Schedule
// would be: the combinators applied to it relay, and Retry and Do take the
// general path.
func opaque(s Schedule) Schedule {
	return func(yield func(time.Duration) bool) { s(yield) }
}
