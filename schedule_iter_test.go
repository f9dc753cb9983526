package retry

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The iterator contract: a yield function is valid for one run, and never
// after it returned false. These tests break the contract on purpose.

// leaky is a Schedule that keeps the yield function it is given in *kept and
// yields nothing.
func leaky(kept *func(time.Duration) bool) Schedule {
	return func(yield func(time.Duration) bool) { *kept = yield }
}

// stashing is a Schedule that keeps yield in *kept and yields 0 once.
func stashing(kept *func(time.Duration) bool) Schedule {
	return func(yield func(time.Duration) bool) {
		*kept = yield
		yield(0)
	}
}

// panicValue returns what f panics with, or nil.
func panicValue(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// TestStaleYield: a yield function kept by a schedule after its run ended
// panics when called, whichever call now runs, and has no effect on that
// call.
func TestStaleYield(t *testing.T) {
	type stale struct {
		name string
		wrap func(Schedule) Schedule // applied to the leaky schedule and to B's
	}
	cases := []stale{{"Retry's yield", func(s Schedule) Schedule { return s }}}
	for name, comb := range combinators {
		cases = append(cases, stale{name, comb})
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			var kept func(time.Duration) bool
			calls := 0
			errA := Do(ctx, tt.wrap(leaky(&kept)), func(context.Context) error { calls++; return errBoom })
			assert.ErrorIs(t, errA, ErrExhausted)
			require.NotNil(t, kept)

			// Call B runs while A's kept yield is called, from B's second
			// attempt, made from inside B's schedule (on the same
			// goroutine, whatever A left behind could now serve B), and
			// from another goroutine.
			clock := NewFakeClock(epoch)
			callsB, stalePanics := 0, []any{}
			errB := Do(ctx, tt.wrap(Delays(100*ms)), func(context.Context) error {
				callsB++
				if callsB == 2 {
					stalePanics = append(stalePanics, panicValue(func() { kept(0) }))
					var wg sync.WaitGroup
					wg.Go(func() { stalePanics = append(stalePanics, panicValue(func() { kept(0) })) })
					wg.Wait()
				}
				return errBoom
			}, WithClock(clock))
			assert.Equal(t, []any{panicAfterEnd, panicAfterEnd}, stalePanics)
			assert.ErrorIs(t, errB, ErrExhausted)
			assert.Equal(t, 2, callsB, "B's attempts: the stale yield reached none")
			assert.Equal(t, 1, calls, "A's attempts: the stale yield made none")
		})
	}
	t.Run("from another goroutine while B waits", func(t *testing.T) {
		// The reproduction: B waits on the real clock while another
		// goroutine calls A's kept yield. Under -race nothing may race.
		var kept func(time.Duration) bool
		_ = Do(context.Background(), leaky(&kept).Cap(s1), func(context.Context) error { return errBoom })
		got := make(chan any, 1)
		callsB := 0
		errB := Do(context.Background(), Delays(10*ms).Cap(s1), func(context.Context) error {
			if callsB++; callsB == 2 {
				go func() { got <- panicValue(func() { kept(0) }) }()
				assert.Equal(t, panicAfterEnd, <-got)
			}
			return errBoom
		})
		assert.ErrorIs(t, errB, ErrExhausted)
		assert.Equal(t, 2, callsB)
	})
	t.Run("a range over a combinator", func(t *testing.T) {
		for name, comb := range combinators {
			var kept func(time.Duration) bool
			for range comb(stashing(&kept)) {
			}
			assert.Equal(t, panicAfterEnd, panicValue(func() { kept(0) }), name)
		}
	})
}

// TestIgnoredFalse: the second call of a yield function after it returned
// false panics, whether the false came from the consumer or from a
// combinator's own limit.
func TestIgnoredFalse(t *testing.T) {
	const n = 1000
	t.Run("Retry's yield", func(t *testing.T) {
		made, calls := 0, 0
		v := panicValue(func() {
			_, _ = Retry(t.Context(), ignoring(0, n, &made), script(&calls, errBoom))
		})
		assert.Equal(t, panicAfterFalse, v)
		assert.Equal(t, 2, made, "one call that returned false (success), then the panic")
		assert.Equal(t, 2, calls)
	})
	for name, comb := range combinators {
		t.Run(name+", false from a range loop's break", func(t *testing.T) {
			made := 0
			v := panicValue(func() {
				for range comb(ignoring(ms, n, &made)) {
					break
				}
			})
			assert.Equal(t, panicAfterFalse, v)
			assert.Equal(t, 2, made)
		})
		t.Run(name+", false from Retry", func(t *testing.T) {
			made, calls := 0, 0
			v := panicValue(func() {
				_, _ = Retry(t.Context(), comb(ignoring(0, n, &made)), script(&calls, errBoom), WithClock(NewFakeClock(epoch)))
			})
			assert.Equal(t, panicAfterFalse, v)
			assert.Equal(t, 2, made)
		})
	}
	limits := map[string]struct {
		s    func(Schedule) Schedule
		made int // calls up to and including the false, plus the one that panics
	}{
		"Take(2)":            {func(s Schedule) Schedule { return s.Take(2) }, 3},
		"Within(2ms)":        {func(s Schedule) Schedule { return s.Within(2 * ms) }, 4},
		"Take(2) then Delay": {func(s Schedule) Schedule { return s.Take(2).Then(Delays(ms)) }, 3},
		"Within before Then": {func(s Schedule) Schedule { return s.Within(ms).Then(Delays(ms)) }, 3},
	}
	for name, tt := range limits {
		t.Run(name+", false from the combinator's limit", func(t *testing.T) {
			made := 0
			v := panicValue(func() {
				for range tt.s(ignoring(ms, n, &made)) {
				}
			})
			assert.Equal(t, panicAfterFalse, v)
			assert.Equal(t, tt.made, made)
		})
	}
}

// TestNegativeDelays: every combinator, and Retry, treats a negative delay
// from a hand-written schedule as 0.
func TestNegativeDelays(t *testing.T) {
	negative := Schedule(func(yield func(time.Duration) bool) {
		for _, d := range []time.Duration{-5 * s1, ms, minDuration, 2 * ms} {
			if !yield(d) {
				return
			}
		}
	})
	tests := map[string]struct {
		s    Schedule
		want []time.Duration
	}{
		"Take":        {negative.Take(4), []time.Duration{0, ms, 0, 2 * ms}},
		"Cap":         {negative.Cap(s1), []time.Duration{0, ms, 0, 2 * ms}},
		"AtLeast":     {negative.AtLeast(0), []time.Duration{0, ms, 0, 2 * ms}},
		"Jitter(0)":   {negative.Jitter(0, nil), []time.Duration{0, ms, 0, 2 * ms}},
		"Then":        {negative.Then(Delays()), []time.Duration{0, ms, 0, 2 * ms}},
		"Then second": {Delays().Then(negative), []time.Duration{0, ms, 0, 2 * ms}},
		// A negative delay must not widen Within's total either: counted as
		// 0, it leaves room for 3 ms, not 5 s and more.
		"Within":          {negative.Within(3 * ms), []time.Duration{0, ms, 0, 2 * ms}},
		"Within, tighter": {negative.Within(2 * ms), []time.Duration{0, ms, 0}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tt.want, slices.Collect(tt.s.Seq()))
		})
	}
	jitters := map[string]Schedule{
		"FullJitter":  negative.FullJitter(rand.NewPCG(1, 2)),
		"EqualJitter": negative.EqualJitter(rand.NewPCG(1, 2)),
		"Jitter":      negative.Jitter(0.5, rand.NewPCG(1, 2)),
	}
	for name, s := range jitters {
		t.Run(name, func(t *testing.T) {
			got := slices.Collect(s.Seq())
			require.Len(t, got, 4)
			assert.Equal(t, time.Duration(0), got[0], "jitter of -5s")
			assert.Equal(t, time.Duration(0), got[2], "jitter of the most negative Duration")
			assert.True(t, got[1] >= 0 && got[1] <= 2*ms && got[3] >= 0 && got[3] <= 3*ms, "%v", got)
		})
	}
	t.Run("Retry", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		var delays []time.Duration
		calls := 0
		_, err := Retry(t.Context(), negative, script(&calls, repeat(errBoom, 10)...), WithClock(clock),
			OnRetry(func(a Attempt) { delays = append(delays, a.Delay) }))
		assert.ErrorIs(t, err, ErrExhausted)
		want := []time.Duration{0, ms, 0, 2 * ms}
		assert.Equal(t, want, clock.Sleeps())
		assert.Equal(t, want, delays)
		assert.Equal(t, epoch.Add(3*ms), clock.Now())
	})
}
