package retry

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	ms = time.Millisecond
	s1 = time.Second
)

// first collects at most n delays of s.
func first(s Schedule, n int) []time.Duration {
	var out []time.Duration
	if n == 0 {
		return out
	}
	for d := range s {
		out = append(out, d)
		if len(out) == n {
			break
		}
	}
	return out
}

func TestExactValues(t *testing.T) {
	tests := []struct {
		name string
		s    Schedule
		n    int // how many to take from an infinite schedule
		want []time.Duration
	}{
		{"Constant", Constant(250 * ms), 4, []time.Duration{250 * ms, 250 * ms, 250 * ms, 250 * ms}},
		{"Constant zero", Constant(0), 3, []time.Duration{0, 0, 0}},
		{"Linear", Linear(100 * ms), 5, []time.Duration{100 * ms, 200 * ms, 300 * ms, 400 * ms, 500 * ms}},
		{"Exponential", Exponential(100 * ms), 6, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms}},
		{"Exponential zero", Exponential(0), 3, []time.Duration{0, 0, 0}},
		{"ExponentialFactor 1.6", ExponentialFactor(1*s1, 1.6), 5, []time.Duration{1 * s1, 1600 * ms, 2560 * ms, 4096 * ms, 6553600 * time.Microsecond}},
		{"ExponentialFactor 2", ExponentialFactor(100*ms, 2), 4, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms}},
		{"ExponentialFactor 1", ExponentialFactor(7*ms, 1), 3, []time.Duration{7 * ms, 7 * ms, 7 * ms}},
		{"ExponentialFactor +Inf", ExponentialFactor(ms, math.Inf(1)), 3, []time.Duration{ms, maxDuration, maxDuration}},
		{"ExponentialFactor zero base +Inf", ExponentialFactor(0, math.Inf(1)), 3, []time.Duration{0, 0, 0}},
		{"Fibonacci", Fibonacci(10 * ms), 7, []time.Duration{10 * ms, 10 * ms, 20 * ms, 30 * ms, 50 * ms, 80 * ms, 130 * ms}},
		{"Delays", Delays(3*ms, 1*ms, 2*ms), 10, []time.Duration{3 * ms, 1 * ms, 2 * ms}},
		{"Delays empty", Delays(), 10, nil},
		{"Take", Constant(ms).Take(3), 10, []time.Duration{ms, ms, ms}},
		{"Take zero", Constant(ms).Take(0), 10, nil},
		{"Take more than there are", Delays(ms, 2*ms).Take(5), 10, []time.Duration{ms, 2 * ms}},
		{"Cap", Exponential(100 * ms).Cap(2 * s1).Take(6), 10, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 2 * s1}},
		{"Cap zero", Exponential(ms).Cap(0), 3, []time.Duration{0, 0, 0}},
		{"AtLeast", Delays(0, 5*ms, 20*ms).AtLeast(10 * ms), 10, []time.Duration{10 * ms, 10 * ms, 20 * ms}},
		{"Then", Delays(ms, 2*ms).Then(Constant(s1).Take(2)), 10, []time.Duration{ms, 2 * ms, s1, s1}},
		{"Then after empty", Delays().Then(Delays(ms)), 10, []time.Duration{ms}},
		{"Within", Exponential(100 * ms).Within(time.Second), 10, []time.Duration{100 * ms, 200 * ms, 400 * ms}},
		{"Within exact sum", Delays(100*ms, 200*ms, 700*ms, ms).Within(time.Second), 10, []time.Duration{100 * ms, 200 * ms, 700 * ms}},
		{"Within zero", Delays(0, 0, ms, 0).Within(0), 10, []time.Duration{0, 0}},
		{"Jitter factor 0", Exponential(ms).Jitter(0, nil).Take(3), 10, []time.Duration{ms, 2 * ms, 4 * ms}},
		{"FullJitter of zero", Constant(0).FullJitter(nil).Take(2), 10, []time.Duration{0, 0}},
		{"EqualJitter of zero", Constant(0).EqualJitter(nil).Take(1), 10, []time.Duration{0}},
		{"DecorrelatedJitter base=limit", DecorrelatedJitter(5*ms, 5*ms, nil), 3, []time.Duration{5 * ms, 5 * ms, 5 * ms}},
		{"SmoothJitter zero", SmoothJitter(0, nil), 2, []time.Duration{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, first(tt.s, tt.n))
		})
	}
}

func TestSaturation(t *testing.T) {
	tests := []struct {
		name   string
		s      Schedule
		random bool // random schedules reach the top but need not end exactly on it
	}{
		{"Exponential", Exponential(time.Nanosecond), false},
		{"ExponentialFactor", ExponentialFactor(time.Hour, 10), false},
		{"Linear", Linear(maxDuration / 3), false},
		{"Fibonacci", Fibonacci(time.Hour), false},
		{"SmoothJitter", SmoothJitter(time.Hour, rand.NewPCG(1, 2)), false},
		{"Jitter above max", Constant(maxDuration).Jitter(1, rand.NewPCG(1, 2)), true},
		{"DecorrelatedJitter", DecorrelatedJitter(time.Hour, maxDuration, rand.NewPCG(1, 2)), true},
		{"FullJitter of max", Exponential(1).FullJitter(rand.NewPCG(1, 2)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := first(tt.s, 2000)
			require.Len(t, ds, 2000)
			for i, d := range ds {
				require.GreaterOrEqual(t, d, time.Duration(0), "delay %d", i)
			}
			if tt.random {
				assert.Greater(t, slices.Max(ds), maxDuration/2, "reaches the top of the range")
				return
			}
			assert.Equal(t, maxDuration, ds[len(ds)-1], "saturates at the largest Duration")
		})
	}
	t.Run("monotone sources never decrease", func(t *testing.T) {
		for _, s := range []Schedule{Exponential(3), ExponentialFactor(3, 1.7), Linear(maxDuration / 7), Fibonacci(11)} {
			ds := first(s, 500)
			assert.True(t, slices.IsSorted(ds))
		}
	})
}

func TestRangeTwiceIsFresh(t *testing.T) {
	schedules := map[string]Schedule{
		"Exponential.Cap.Take":  Exponential(ms).Cap(10 * ms).Take(8),
		"Fibonacci.Within":      Fibonacci(ms).Within(100 * ms),
		"Delays.Then":           Delays(ms, 2*ms).Then(Linear(ms).Take(3)),
		"Linear.AtLeast.Take":   Linear(ms).AtLeast(3 * ms).Take(5),
		"ExponentialFactor.Cap": ExponentialFactor(ms, 1.5).Cap(20 * ms).Take(10),
	}
	for name, s := range schedules {
		t.Run(name, func(t *testing.T) {
			a, b := slices.Collect(s.Seq()), slices.Collect(s.Seq())
			require.NotEmpty(t, a)
			assert.Equal(t, a, b)
		})
	}
	t.Run("seeded jitter restarts its draws, not its source", func(t *testing.T) {
		// A seeded source is shared state: a second range continues the
		// stream, while the same seed in a new schedule repeats it.
		build := func() Schedule { return Exponential(ms).FullJitter(rand.NewPCG(7, 7)).Take(5) }
		assert.Equal(t, slices.Collect(build().Seq()), slices.Collect(build().Seq()))
	})
}

// TestEarlyBreak checks that every source and combinator stops as soon as
// yield returns false: ranging with an immediate break must not panic (the
// runtime panics if an iterator calls yield again after false), and the
// source underneath must not be asked for more values than were consumed.
func TestEarlyBreak(t *testing.T) {
	counting := func(pulled *int) Schedule {
		return func(yield func(time.Duration) bool) {
			for {
				*pulled++
				if !yield(ms) {
					return
				}
			}
		}
	}
	combinators := map[string]func(Schedule) Schedule{
		"Take":        func(s Schedule) Schedule { return s.Take(10) },
		"Cap":         func(s Schedule) Schedule { return s.Cap(time.Second) },
		"AtLeast":     func(s Schedule) Schedule { return s.AtLeast(time.Second) },
		"FullJitter":  func(s Schedule) Schedule { return s.FullJitter(nil) },
		"EqualJitter": func(s Schedule) Schedule { return s.EqualJitter(nil) },
		"Jitter":      func(s Schedule) Schedule { return s.Jitter(0.5, nil) },
		"Then":        func(s Schedule) Schedule { return s.Then(Constant(ms)) },
		"Then second": func(s Schedule) Schedule { return Delays().Then(s) },
		"Within":      func(s Schedule) Schedule { return s.Within(time.Hour) },
	}
	for name, comb := range combinators {
		t.Run(name, func(t *testing.T) {
			for _, stop := range []int{1, 2, 3} {
				pulled := 0
				got := 0
				for range comb(counting(&pulled)) {
					if got++; got == stop {
						break
					}
				}
				assert.Equal(t, stop, got)
				assert.Equal(t, stop, pulled, "values pulled from the underlying schedule")
			}
		})
	}
	sources := map[string]Schedule{
		"Constant":           Constant(ms),
		"Linear":             Linear(ms),
		"Exponential":        Exponential(ms),
		"ExponentialFactor":  ExponentialFactor(ms, 1.5),
		"ExponentialFactor0": ExponentialFactor(0, 1.5),
		"Fibonacci":          Fibonacci(ms),
		"Delays":             Delays(ms, ms, ms, ms),
		"DecorrelatedJitter": DecorrelatedJitter(ms, s1, nil),
		"SmoothJitter":       SmoothJitter(ms, nil),
		"SmoothJitter0":      SmoothJitter(0, nil),
	}
	for name, s := range sources {
		t.Run(name, func(t *testing.T) {
			for _, stop := range []int{1, 2, 3} {
				got := 0
				for range s {
					if got++; got == stop {
						break
					}
				}
				assert.Equal(t, stop, got)
			}
		})
	}
	t.Run("Take does not pull one past n", func(t *testing.T) {
		pulled := 0
		assert.Len(t, slices.Collect(counting(&pulled).Take(4).Seq()), 4)
		assert.Equal(t, 4, pulled)
	})
	t.Run("Within does not pull past the delay that overflows", func(t *testing.T) {
		pulled := 0
		assert.Len(t, slices.Collect(counting(&pulled).Within(3*ms).Seq()), 3)
		assert.Equal(t, 4, pulled)
	})
}

func TestPanics(t *testing.T) {
	var nilSchedule Schedule
	tests := []struct {
		name string
		fn   func()
		msg  string
	}{
		{"Constant negative", func() { Constant(-1) }, "retry: Constant: negative delay -1ns"},
		{"Linear negative", func() { Linear(-ms) }, "retry: Linear: negative base -1ms"},
		{"Exponential negative", func() { Exponential(-1) }, "retry: Exponential: negative base -1ns"},
		{"ExponentialFactor negative", func() { ExponentialFactor(-1, 2) }, "retry: ExponentialFactor: negative base -1ns"},
		{"ExponentialFactor below 1", func() { ExponentialFactor(ms, 0.5) }, "retry: ExponentialFactor: factor 0.5 is not at least 1"},
		{"ExponentialFactor NaN", func() { ExponentialFactor(ms, math.NaN()) }, "retry: ExponentialFactor: factor NaN is not at least 1"},
		{"Fibonacci negative", func() { Fibonacci(-1) }, "retry: Fibonacci: negative base -1ns"},
		{"Delays negative", func() { Delays(ms, -1) }, "retry: Delays: negative delay -1ns"},
		{"Take negative", func() { Constant(ms).Take(-1) }, "retry: Take: negative count -1"},
		{"Cap negative", func() { Constant(ms).Cap(-1) }, "retry: Cap: negative limit -1ns"},
		{"AtLeast negative", func() { Constant(ms).AtLeast(-1) }, "retry: AtLeast: negative floor -1ns"},
		{"Jitter above 1", func() { Constant(ms).Jitter(1.5, nil) }, "retry: Jitter: factor 1.5 is outside [0, 1]"},
		{"Jitter negative", func() { Constant(ms).Jitter(-0.1, nil) }, "retry: Jitter: factor -0.1 is outside [0, 1]"},
		{"Jitter NaN", func() { Constant(ms).Jitter(math.NaN(), nil) }, "retry: Jitter: factor NaN is outside [0, 1]"},
		{"Within negative", func() { Constant(ms).Within(-1) }, "retry: Within: negative total -1ns"},
		{"DecorrelatedJitter negative", func() { DecorrelatedJitter(-1, s1, nil) }, "retry: DecorrelatedJitter: base -1ns is not positive"},
		{"DecorrelatedJitter zero", func() { DecorrelatedJitter(0, s1, nil) }, "retry: DecorrelatedJitter: base 0s is not positive"},
		{"DecorrelatedJitter limit below base", func() { DecorrelatedJitter(s1, ms, nil) }, "retry: DecorrelatedJitter: limit 1ms is less than base 1s"},
		{"SmoothJitter negative", func() { SmoothJitter(-1, nil) }, "retry: SmoothJitter: negative median -1ns"},
		{"Take of nil", func() { nilSchedule.Take(1) }, "retry: Take of a nil Schedule"},
		{"Cap of nil", func() { nilSchedule.Cap(1) }, "retry: Cap of a nil Schedule"},
		{"AtLeast of nil", func() { nilSchedule.AtLeast(1) }, "retry: AtLeast of a nil Schedule"},
		{"FullJitter of nil", func() { nilSchedule.FullJitter(nil) }, "retry: FullJitter of a nil Schedule"},
		{"EqualJitter of nil", func() { nilSchedule.EqualJitter(nil) }, "retry: EqualJitter of a nil Schedule"},
		{"Jitter of nil", func() { nilSchedule.Jitter(0, nil) }, "retry: Jitter of a nil Schedule"},
		{"Then of nil", func() { nilSchedule.Then(Constant(ms)) }, "retry: Then of a nil Schedule"},
		{"Then nil", func() { Constant(ms).Then(nil) }, "retry: Then of a nil Schedule"},
		{"Within of nil", func() { nilSchedule.Within(1) }, "retry: Within of a nil Schedule"},
		{"NewBudget negative ratio", func() { NewBudget(-0.1, 1) }, "retry: NewBudget: ratio -0.1 is negative or NaN"},
		{"NewBudget NaN ratio", func() { NewBudget(math.NaN(), 1) }, "retry: NewBudget: ratio NaN is negative or NaN"},
		{"NewBudget negative reserve", func() { NewBudget(0.1, -1) }, "retry: NewBudget: negative reserve -1"},
		{"WithBudget nil", func() { WithBudget(nil) }, "retry: WithBudget: nil Budget"},
		{"If nil", func() { If(nil) }, "retry: If: nil function"},
		{"OnRetry nil", func() { OnRetry(nil) }, "retry: OnRetry: nil function"},
		{"MaxPushback negative", func() { MaxPushback(-1) }, "retry: MaxPushback: negative limit -1ns"},
		{"AttemptTimeout zero", func() { AttemptTimeout(0) }, "retry: AttemptTimeout: timeout 0s is not positive"},
		{"AttemptTimeout negative", func() { AttemptTimeout(-s1) }, "retry: AttemptTimeout: timeout -1s is not positive"},
		{"Retry nil schedule", func() { _, _ = Retry(t.Context(), nil, func(context.Context) (int, error) { return 0, nil }) }, "retry: Retry of a nil Schedule"},
		{"Do nil schedule", func() { _ = Do(t.Context(), nil, func(context.Context) error { return nil }) }, "retry: Do of a nil Schedule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tt.msg, tt.fn)
		})
	}
}

func TestDelaysCopiesItsArgument(t *testing.T) {
	ds := []time.Duration{ms, 2 * ms}
	s := Delays(ds...)
	ds[0] = time.Hour
	assert.Equal(t, []time.Duration{ms, 2 * ms}, slices.Collect(s.Seq()))
}

func TestSeqIsTheSameFunction(t *testing.T) {
	s := Linear(ms).Take(3)
	assert.Equal(t, []time.Duration{ms, 2 * ms, 3 * ms}, slices.Collect(s.Seq()))
	var nilSchedule Schedule
	assert.Nil(t, nilSchedule.Seq())
}

// TestConcurrentRanging ranges one schedule built on one seeded source from
// many goroutines at once; under -race this proves that draws are serialized
// and that no combinator keeps state outside its iterator body.
func TestConcurrentRanging(t *testing.T) {
	src := rand.NewPCG(1, 2)
	shared := Exponential(ms).Cap(time.Second).FullJitter(src).Then(DecorrelatedJitter(ms, s1, src).Take(3)).
		Jitter(0.1, src).EqualJitter(src).Take(12)
	sharedSmooth := SmoothJitter(ms, src).Take(12)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for range 50 {
				assert.Len(t, slices.Collect(shared.Seq()), 12)
				assert.Len(t, slices.Collect(sharedSmooth.Seq()), 12)
			}
		})
	}
	wg.Wait()
}
