package retry

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFusion: every source is a plan's Schedule, every combinator applied to
// one returns a plan's Schedule while a planIter has room for it, and
// anything built on a hand-written Schedule relays.
func TestFusion(t *testing.T) {
	if !fusion {
		t.Skip("fusion is off (purego): no Schedule is recognised as a plan")
	}
	base := Exponential(ms)
	fused := map[string]Schedule{
		"Constant":           Constant(ms),
		"Linear":             Linear(ms),
		"Exponential":        base,
		"ExponentialFactor":  ExponentialFactor(ms, 1.6),
		"Fibonacci":          Fibonacci(ms),
		"Delays":             Delays(ms, 2*ms),
		"DecorrelatedJitter": DecorrelatedJitter(ms, s1, nil),
		"SmoothJitter":       SmoothJitter(ms, nil),
		"Take":               base.Take(3),
		"Take(0)":            base.Take(0),
		"Cap":                base.Cap(s1),
		"AtLeast":            base.AtLeast(ms),
		"FullJitter":         base.FullJitter(nil),
		"EqualJitter":        base.EqualJitter(nil),
		"Jitter":             base.Jitter(0.2, nil),
		"Within":             base.Within(s1),
		"two Withins":        base.Within(s1).Cap(s1).Within(s1),
		"Then":               base.Take(2).Then(Constant(s1)),
		"Then, then a Take":  base.Take(2).Then(Constant(s1)).Take(5),
		"Then of Thens":      Delays(ms).Then(Delays(ms).Then(Constant(s1))).Cap(s1).FullJitter(nil).Take(9),
		"the README's":       Exponential(100 * ms).Cap(2 * s1).FullJitter(nil).Take(5),
		"adaptive hedging":   NewLatency().Quantile(0.95).AtLeast(5 * ms).Cap(s1).Take(1),
	}
	for name, s := range fused {
		assert.NotNil(t, planOf(s), name)
	}
	relayed := map[string]Schedule{
		"hand-written":              opaque(base),
		"a combinator on one":       opaque(base).Cap(s1),
		"Then to one":               base.Then(opaque(base)),
		"Then from one":             opaque(base).Then(base),
		"three Withins":             base.Within(s1).Cap(s1).Within(s1).Cap(s1).Within(s1),
		"Then after a shared Take":  Delays(ms).Then(Delays(ms)).Take(1).Then(Delays(ms)),
		"a combinator on the above": Delays(ms).Then(Delays(ms)).Take(1).Then(Delays(ms)).Cap(s1),
	}
	for name, s := range relayed {
		assert.Nil(t, planOf(s), name)
	}
	t.Run("a plan is never changed by a combinator", func(t *testing.T) {
		s := base.Cap(10 * ms)
		before := slices.Collect(s.Take(5).Seq())
		_ = s.AtLeast(5 * ms).Within(s1).Take(2)
		_ = s.Then(Constant(s1))
		assert.Equal(t, before, slices.Collect(s.Take(5).Seq()))
		assert.Equal(t, []time.Duration{ms, 2 * ms, 4 * ms, 8 * ms, 10 * ms}, before)
	})
	t.Run("clamps fold into one", func(t *testing.T) {
		// Cap(5ms) then AtLeast(8ms): every delay is 8ms, as a relay chain
		// gives.
		s := base.Cap(5 * ms).AtLeast(8 * ms)
		p := planOf(s)
		require.NotNil(t, p)
		assert.Len(t, p.head.pipe.ops, 1)
		assert.Equal(t, slices.Collect(opaque(base).Cap(5*ms).AtLeast(8*ms).Take(4).Seq()), slices.Collect(s.Take(4).Seq()))
	})
}

// TestPlanLayoutCheck: the start-up check of plan_unsafe.go passed, and
// planOf recognises neither a closure nor another type's method value, laid
// out just as a plan's, as a plan.
func TestPlanLayoutCheck(t *testing.T) {
	if !fusion {
		t.Skip("fusion is off (purego)")
	}
	assert.NotZero(t, planCode)
	p := planOf(Constant(ms))
	require.NotNil(t, p)
	lookalike := &notAPlan{p}
	assert.Nil(t, planOf(lookalike.iterate))
	assert.Nil(t, planOf(func(yield func(time.Duration) bool) { p.iterate(yield) }))
	assert.Nil(t, planOf(nil))
}

// notAPlan has a method value laid out as a plan's, capturing a *plan.
type notAPlan struct{ p *plan }

func (n *notAPlan) iterate(yield func(time.Duration) bool) { n.p.iterate(yield) }

// FuzzFusion checks that a fused plan and the same chain built with relays
// (its sources hidden behind hand-written Schedules) are indistinguishable:
// the same delays from the same seed, including after an early break, and
// the same Retry: calls, value, waits, OnRetry attempts and error.
func FuzzFusion(f *testing.F) {
	f.Add([]byte{2, 1, 0, 2, 1, 0, 100, 1, 3, 3, 0, 6}, []byte{1, 1, 1})
	f.Add([]byte{5, 5, 3, 0, 9, 3, 0, 7, 3, 0, 5, 0, 2, 2, 3, 4, 0, 8}, []byte{1, 1, 1, 1, 1, 1})
	f.Add([]byte{6, 3, 0, 5, 3, 1, 0, 3, 2, 3, 6, 3, 0, 90}, []byte{1, 7, 1, 1})
	f.Add([]byte{7, 4, 0, 20, 4, 5, 255, 1, 4, 0, 3, 0, 64}, []byte{1, 1, 2})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 9, 2, 200, 6, 7, 4, 1, 6, 2, 7, 5, 5, 3, 6, 9}, []byte{1, 1, 1, 1, 1, 1, 1, 1})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 5, 7, 1, 2, 3, 4, 5, 7, 7, 6, 5, 7, 0, 1, 2, 7, 3, 3}, []byte{3, 1, 200, 1})
	f.Fuzz(func(t *testing.T, data, pattern []byte) {
		seed := (&bytesReader{data: data}).uint64()
		build := func(wrap func(Schedule) Schedule) Schedule {
			r := &bytesReader{data: data}
			r.uint64()
			s, _ := buildChain(r, rand.NewPCG(seed, seed^0x9e3779b97f4a7c15), wrap)
			return s
		}
		const most = 64
		take := func(s Schedule, n int) []time.Duration {
			var got []time.Duration
			for d := range s {
				if got = append(got, d); len(got) == n {
					break
				}
			}
			return got
		}
		fused, general := build(same), build(opaque)
		want := take(general, most)
		require.Equal(t, want, take(fused, most), "delays")
		if n := int(seed%most) + 1; n < len(want) {
			require.Equal(t, take(build(opaque), n), take(build(same), n), "delays up to an early break")
		}

		// Retry on each, on a fake clock, with an attempt function that
		// follows pattern: 0 succeeds, 1 fails, 2 is permanent, 3 and up
		// push back by (b-3) seconds; attempts past the pattern fail.
		type outcome struct {
			calls    int
			value    int
			sleeps   []time.Duration
			attempts []Attempt
			err      error
		}
		retry := func(s Schedule) outcome {
			var o outcome
			clock := NewFakeClock(epoch)
			fn := func(context.Context) (int, error) {
				o.calls++
				if o.calls > len(pattern) {
					return o.calls, errBoom
				}
				switch b := pattern[o.calls-1]; b {
				case 0:
					return o.calls, nil
				case 1:
					return o.calls, errBoom
				case 2:
					return o.calls, Permanent(errBoom)
				default:
					return o.calls, RetryAfter(errBoom, time.Duration(b-3)*time.Second)
				}
			}
			opts := []Option{WithClock(clock), MaxPushback(time.Minute), OnRetry(func(a Attempt) { o.attempts = append(o.attempts, a) })}
			if seed&1 == 0 {
				opts = opts[:1] // without hooks: the fused path's other branch
			}
			o.value, o.err = Retry(context.Background(), s.Take(most), fn, opts...)
			o.sleeps = clock.Sleeps()
			return o
		}
		g, fu := retry(build(opaque)), retry(build(same))
		require.Equal(t, g.calls, fu.calls, "calls")
		require.Equal(t, g.value, fu.value, "value")
		require.Equal(t, g.sleeps, fu.sleeps, "sleeps")
		require.Equal(t, g.attempts, fu.attempts, "OnRetry attempts")
		if g.err == nil || fu.err == nil {
			require.Equal(t, g.err, fu.err)
			return
		}
		require.Equal(t, g.err.Error(), fu.err.Error())
		for _, reason := range []error{ErrExhausted, ErrBudgetExhausted, errBoom} {
			require.Equal(t, errors.Is(g.err, reason), errors.Is(fu.err, reason), "errors.Is %v", reason)
		}
	})
}
