package retry

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxRelErr is the documented accuracy of a Latency: a bucket's
// representative is within 1/128 of every duration in the bucket.
const maxRelErr = 1.0 / 128

// relErr is |got − want| / want.
func relErr(got, want time.Duration) float64 {
	return math.Abs(float64(got)-float64(want)) / float64(want)
}

// nearestRank is the exact reference: the sample of rank ⌈q·n⌉.
func nearestRank(sorted []time.Duration, q float64) time.Duration {
	return sorted[int(math.Ceil(q*float64(len(sorted))))-1]
}

// first returns the first delay of s, failing the test if there is none.
func firstDelay(t testing.TB, s Schedule) time.Duration {
	t.Helper()
	for d := range s {
		return d
	}
	t.Fatal("empty schedule")
	return 0
}

// A distribution draws latencies from r.
type distribution struct {
	name string
	draw func(r *rand.Rand) time.Duration
	p95  time.Duration // the exact 95th percentile
}

func lognormal(median time.Duration, sigma float64) distribution {
	return distribution{
		name: "lognormal(" + median.String() + ", σ=" + ftoa(sigma) + ")",
		draw: func(r *rand.Rand) time.Duration {
			return time.Duration(float64(median) * math.Exp(sigma*r.NormFloat64()))
		},
		p95: time.Duration(float64(median) * math.Exp(sigma*1.6448536269514722)),
	}
}

func pareto(scale time.Duration, alpha float64) distribution {
	return distribution{
		name: "pareto(" + scale.String() + ", α=" + ftoa(alpha) + ")",
		draw: func(r *rand.Rand) time.Duration {
			return time.Duration(float64(scale) / math.Pow(1-r.Float64(), 1/alpha))
		},
		p95: time.Duration(float64(scale) / math.Pow(0.05, 1/alpha)),
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func TestLatencyBuckets(t *testing.T) {
	t.Run("contiguous, and the representative is within 1/128", func(t *testing.T) {
		lo0, _ := latBounds(0)
		assert.Equal(t, latMin, lo0)
		for i := range latBuckets {
			lo, hi := latBounds(i)
			require.Less(t, lo, hi)
			if i+1 < latBuckets {
				next, _ := latBounds(i + 1)
				require.Equal(t, hi, next, "bucket %d", i)
			} else {
				require.Equal(t, latMax+1, hi)
			}
			require.Equal(t, i, latBucket(lo))
			require.Equal(t, i, latBucket(hi-1))
			v := latValue(i)
			require.True(t, lo <= v && v < hi, "bucket %d: %v not in [%v, %v)", i, v, lo, hi)
			require.LessOrEqual(t, relErr(v, lo), maxRelErr)
			require.LessOrEqual(t, relErr(v, hi-1), maxRelErr)
		}
	})
	t.Run("out of range counts as the ends", func(t *testing.T) {
		for _, d := range []time.Duration{math.MinInt64, -time.Second, 0, 1, latMin - 1} {
			assert.Equal(t, 0, latBucket(d), "%v", d)
		}
		for _, d := range []time.Duration{latMax, latMax + 1, time.Hour, maxDuration} {
			assert.Equal(t, latBuckets-1, latBucket(d), "%v", d)
		}
	})
	t.Run("fits in 16 KiB", func(t *testing.T) {
		assert.LessOrEqual(t, unsafe.Sizeof(Latency{}), uintptr(16<<10))
		assert.Equal(t, uintptr(64), unsafe.Offsetof(Latency{}.counts), "n has a cache line of its own")
	})
}

func TestLatencyAccuracy(t *testing.T) {
	dists := []distribution{
		lognormal(10*time.Millisecond, 0.5),
		lognormal(2*time.Millisecond, 1.5),
		pareto(time.Millisecond, 1.5),
		pareto(50*time.Microsecond, 3),
	}
	for _, dist := range dists {
		for _, n := range []int{1000, latRetained, 100_000} {
			t.Run(dist.name+"/"+strconv.Itoa(n), func(t *testing.T) {
				r := rand.New(rand.NewPCG(1, uint64(n)))
				l := NewLatency()
				all := make([]time.Duration, n)
				for i := range all {
					all[i] = dist.draw(r)
					l.Record(all[i])
				}
				// The observations held: those of the last two full
				// windows and of the current one.
				held := all[max(0, (n-1)/latWindow-(latWindows-1))*latWindow:]
				held = slices.Sorted(slices.Values(held))
				for _, q := range []float64{0.5, 0.95, 0.99} {
					want := nearestRank(held, q)
					got := firstDelay(t, l.Quantile(q))
					e := relErr(got, want)
					t.Logf("p%v: got %v, exact %v, error %.3f%%", q*100, got, want, 100*e)
					assert.LessOrEqual(t, e, maxRelErr, "p%v", q*100)
				}
			})
		}
	}
}

func TestLatencyWarmup(t *testing.T) {
	l := NewLatency()
	s := l.Quantile(0.5)
	for i := range latWarmup - 1 {
		l.Record(time.Millisecond)
		require.Equal(t, maxDuration, firstDelay(t, s), "after %d observations", i+1)
	}
	l.Record(time.Millisecond)
	assert.Equal(t, latValue(latBucket(time.Millisecond)), firstDelay(t, s))

	t.Run("never 0", func(t *testing.T) {
		l := NewLatency()
		for range latWarmup {
			l.Record(0)
		}
		d := firstDelay(t, l.Quantile(0.01))
		assert.Equal(t, latValue(0), d)
		assert.Greater(t, d, latMin-1)
	})
	t.Run("at most about 18 minutes", func(t *testing.T) {
		l := NewLatency()
		for range latWarmup {
			l.Record(maxDuration)
		}
		assert.Equal(t, latValue(latBuckets-1), firstDelay(t, l.Quantile(0.99)))
	})
}

// TestLatencyRefresh checks that a Quantile's estimate is recomputed only
// every latRefresh observations, and is shared by its runs.
func TestLatencyRefresh(t *testing.T) {
	l := NewLatency()
	for range latWarmup {
		l.Record(time.Millisecond)
	}
	s := l.Quantile(0.999)
	ms, sec := latValue(latBucket(time.Millisecond)), latValue(latBucket(time.Second))
	require.Equal(t, ms, firstDelay(t, s))
	for range latRefresh - 1 {
		l.Record(time.Second) // the data's 99.9th percentile is now 1 s
		require.Equal(t, ms, firstDelay(t, s))
		require.Equal(t, sec, firstDelay(t, l.Quantile(0.999)), "a new Quantile starts fresh")
	}
	l.Record(time.Second)
	assert.Equal(t, sec, firstDelay(t, s), "computed again after 64 observations")

	t.Run("every delay is the current estimate", func(t *testing.T) {
		l := NewLatency()
		var got []time.Duration
		for d := range l.Quantile(0.99) {
			got = append(got, d)
			for range 2 * latWarmup {
				l.Record(time.Duration(len(got)) * time.Millisecond)
			}
			if len(got) == 3 {
				break
			}
		}
		ms := func(n int) time.Duration { return latValue(latBucket(time.Duration(n) * time.Millisecond)) }
		assert.Equal(t, []time.Duration{maxDuration, ms(1), ms(2)}, got)
	})
}

// TestLatencyShift checks the documented bound: once latWindows·latWindow
// + latRefresh observations have been made after a change, a
// Quantile's estimate is made from new observations only, so it is within
// 5% of the new distribution's 95th percentile.
func TestLatencyShift(t *testing.T) {
	const bound = latWindows*latWindow + latRefresh
	assert.Equal(t, 6208, bound, "the number in Latency's doc")
	shifts := []struct{ before, after distribution }{
		{lognormal(10*time.Millisecond, 0.5), lognormal(40*time.Millisecond, 0.5)},
		{lognormal(40*time.Millisecond, 0.5), lognormal(10*time.Millisecond, 0.5)},
		{lognormal(5*time.Millisecond, 1), lognormal(5*time.Millisecond, 0.25)},
		{pareto(time.Millisecond, 2), pareto(3*time.Millisecond, 3)},
	}
	for i, sh := range shifts {
		t.Run(sh.before.name+" to "+sh.after.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, uint64(i)))
			l := NewLatency()
			s := l.Quantile(0.95)
			// Start the change anywhere in a window.
			for range 20_000 + r.IntN(latWindow) {
				l.Record(sh.before.draw(r))
				firstDelay(t, s)
			}
			settled := 0 // observations after which the estimate stayed within 5%
			for k := 1; k <= 3*bound; k++ {
				l.Record(sh.after.draw(r))
				e := relErr(firstDelay(t, s), sh.after.p95)
				if k >= bound {
					require.LessOrEqual(t, e, 0.05, "%d observations after the change", k)
				}
				if e > 0.05 {
					settled = k
				}
			}
			t.Logf("within 5%% of the new p95 (%v) from %d observations on", sh.after.p95, settled+1)
		})
	}
}

func TestLatencyConcurrent(t *testing.T) {
	const goroutines, each = 8, 10_000
	l := NewLatency()
	s := l.Quantile(0.9)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				l.Record(time.Duration(g+1) * time.Millisecond)
				if i%100 == 0 {
					d := firstDelay(t, s)
					assert.True(t, d == maxDuration || d >= time.Millisecond*99/100 && d <= 8*time.Millisecond*101/100, "%v", d)
				}
			}
		})
	}
	wg.Wait()
	var c [latBuckets]uint16
	n := goroutines * each
	held := uint64(n - ((n-1)/latWindow-(latWindows-1))*latWindow)
	// A recorder delayed by a whole window drops its observation.
	assert.InDelta(t, held, l.snapshot(&c), goroutines)
	assert.Equal(t, uint64(n), l.n.Load())
}

func TestLatencyPanics(t *testing.T) {
	l := NewLatency()
	for _, q := range []float64{0, 1, -0.5, 1.5, math.NaN(), math.Inf(1)} {
		assert.PanicsWithValue(t, "retry: Quantile: q "+ftoa(q)+" is not in (0, 1)", func() { l.Quantile(q) })
	}
	assert.PanicsWithValue(t, "retry: Quantile of a nil Latency", func() { (*Latency)(nil).Quantile(0.5) })
	assert.PanicsWithValue(t, "retry: WithLatency: nil Latency", func() { WithLatency(nil) })
}

// TestObserveRetry checks what Retry and Do record: every attempt that
// returned before the caller's context ended, on the call's clock.
func TestObserveRetry(t *testing.T) {
	held := func(l *Latency) uint64 {
		var c [latBuckets]uint16
		return l.snapshot(&c)
	}
	t.Run("every attempt, successes and failures", func(t *testing.T) {
		l := NewLatency()
		calls := 0
		_, err := Retry(t.Context(), Constant(0).Take(5), script(&calls, errBoom, errBoom), WithLatency(l), WithClock(&countingClock{}))
		require.NoError(t, err)
		assert.Equal(t, uint64(3), held(l))
		require.NoError(t, Do(t.Context(), Constant(0), func(context.Context) error { return nil }, WithLatency(l)))
		assert.Equal(t, uint64(4), held(l))
	})
	t.Run("on the call's clock", func(t *testing.T) {
		l := NewLatency()
		clock := NewFakeClock(epoch)
		for range latWarmup {
			require.NoError(t, Do(t.Context(), Constant(0), func(ctx context.Context) error {
				return clock.Sleep(ctx, 30*time.Millisecond)
			}, WithLatency(l), WithClock(clock)))
		}
		assert.Equal(t, latValue(latBucket(30*time.Millisecond)), firstDelay(t, l.Quantile(0.5)))
	})
	t.Run("not an attempt cut short by the caller", func(t *testing.T) {
		l := NewLatency()
		ctx, cancel := context.WithCancel(t.Context())
		err := Do(ctx, Constant(0), func(context.Context) error { cancel(); return errBoom }, WithLatency(l))
		assert.ErrorIs(t, err, context.Canceled)
		assert.Zero(t, held(l))
	})
	t.Run("an attempt cut short by its own timeout", func(t *testing.T) {
		l := NewLatency()
		calls := 0
		err := Do(t.Context(), Constant(0).Take(1), func(ctx context.Context) error {
			calls++
			if calls == 1 {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}, WithLatency(l), AttemptTimeout(time.Millisecond))
		require.NoError(t, err)
		assert.Equal(t, uint64(2), held(l))
	})
}

func FuzzLatencyBucket(f *testing.F) {
	for _, d := range []int64{math.MinInt64, -1, 0, 1, int64(latMin) - 1, int64(latMin), 1500, int64(time.Millisecond), int64(latMax), int64(latMax) + 1, math.MaxInt64} {
		f.Add(d, d+1)
	}
	f.Fuzz(func(t *testing.T, a, b int64) {
		if a > b {
			a, b = b, a
		}
		i, j := latBucket(time.Duration(a)), latBucket(time.Duration(b))
		if i < 0 || j >= latBuckets || i > j {
			t.Fatalf("buckets %d of %d and %d of %d: not monotone in [0, %d)", i, a, j, b, latBuckets)
		}
		d := min(max(time.Duration(a), latMin), latMax)
		lo, hi := latBounds(i)
		if d < lo || d >= hi {
			t.Fatalf("%v (as %v) is in bucket %d, [%v, %v)", time.Duration(a), d, i, lo, hi)
		}
		if e := relErr(latValue(i), d); e > maxRelErr {
			t.Fatalf("%v stands for %v: error %g", latValue(i), d, e)
		}
	})
}

// TestLatencyUnderHedging models what not recording the losers of hedged
// calls (as WithLatency did before it recorded them) does to the estimate that
// sets the hedge delay, in a simulation of sequential calls with one hedge
// at the estimated p95: the slowest first attempts are the ones cancelled,
// so the estimate settles below the true p95 and more calls hedge.
// Recording each loser's running time as a lower bound, as WithLatency now
// does, is shown for comparison (TestHedgeRateAtQuantile checks it on real
// Hedge calls).
func TestLatencyUnderHedging(t *testing.T) {
	draw := func(r *rand.Rand) time.Duration {
		d := lognormal(10*time.Millisecond, 0.5).draw(r)
		if r.Float64() < 0.02 {
			d *= 10 // stragglers
		}
		return d
	}
	r := rand.New(rand.NewPCG(1, 2))
	sample := make([]time.Duration, 200_000)
	for i := range sample {
		sample[i] = draw(r)
	}
	slices.Sort(sample)
	p95 := nearestRank(sample, 0.95)
	for _, losers := range []bool{false, true} {
		l := NewLatency()
		s := l.Quantile(0.95).AtLeast(time.Millisecond).Cap(time.Second)
		const calls = 100_000
		hedged := 0
		var est time.Duration
		for range calls {
			est = firstDelay(t, s)
			first := draw(r)
			if first <= est {
				l.Record(first)
				continue
			}
			hedged++
			second := draw(r)
			if first < est+second {
				l.Record(first)
				if losers {
					l.Record(first - est) // the hedge, cancelled after running that long
				}
			} else {
				l.Record(second)
				if losers {
					l.Record(est + second) // the first attempt, cancelled
				}
			}
		}
		share := float64(hedged) / calls
		t.Logf("losers recorded: %v: estimate %v against a true p95 of %v, %.1f%% of calls hedged", losers, est, p95, 100*share)
		if losers {
			assert.InDelta(t, 1, float64(est)/float64(p95), 0.05)
			assert.InDelta(t, 0.05, share, 0.005)
		} else {
			assert.Less(t, est, p95*9/10, "the bias docs/TAIL.md describes")
			assert.Greater(t, share, 0.07)
		}
	}
}

// TestLatencyRetag checks that every word is retagged at least once every
// latWindows·latWords windows, even the words of buckets that nothing hits,
// so that no tag is ever old enough (2²¹ windows) to be ambiguous. Only the
// first observation of each window retags, so the test makes just those.
func TestLatencyRetag(t *testing.T) {
	const windows = latWindows*latWords + 10
	l := NewLatency()
	for w := range uint64(windows) {
		l.n.Store(w * latWindow)
		l.Record(time.Millisecond)
	}
	for slot := range l.counts {
		for j := range l.counts[slot] {
			tag := l.counts[slot][j].Load() >> latTagShift
			require.GreaterOrEqual(t, tag, uint64(windows-latWindows*latWords), "slot %d, word %d", slot, j)
		}
	}
}

// TestLatencyIdleWord checks that a word left alone for half the tag space
// (2²¹ windows, some 4·10⁹ observations: a day at 50 000 a second) is
// started afresh by the next observation, not taken for a newer window's,
// which dropped every observation in its buckets for as long again.
func TestLatencyIdleWord(t *testing.T) {
	l := NewLatency()
	for range latWarmup {
		l.Record(100 * time.Millisecond)
	}
	// The words of the 100 ms buckets keep their tag while 2²¹+30 windows
	// of observations go elsewhere.
	l.n.Store((1<<21 + 30) * latWindow)
	for range latWarmup {
		l.Record(100 * time.Millisecond)
	}
	var c [latBuckets]uint16
	assert.Equal(t, uint64(latWarmup), l.snapshot(&c))
	assert.Equal(t, latValue(latBucket(100*time.Millisecond)), firstDelay(t, l.Quantile(0.5)))
}

// TestLatencyStaleReader checks that a Quantile reader whose count of
// observations is older than the last estimate's uses that estimate rather
// than compute another and move the time of the last estimate back.
func TestLatencyStaleReader(t *testing.T) {
	l := NewLatency()
	for range latWarmup {
		l.Record(time.Millisecond)
	}
	e := &estimate{l: l, q: 0.5}
	want := e.get()
	// Another reader loaded n+10 and recomputed after this one loaded n.
	e.at.Store(l.n.Load() + 11)
	e.d.Store(int64(time.Second))
	assert.Equal(t, time.Second, e.get())
	assert.Equal(t, l.n.Load()+11, e.at.Load())
	assert.Equal(t, latValue(latBucket(time.Millisecond)), want)
}

// TestLatencyConcurrentRotation records durations across the whole range
// and beyond (0, negative, 1 ns, the largest) from several goroutines while
// others read, through dozens of windows: under -race, every read is
// within bounds and never 0, and the total held never exceeds the
// retained observations plus the current window.
func TestLatencyConcurrentRotation(t *testing.T) {
	const recorders, each = 4, 20_000
	l := NewLatency()
	s := l.Quantile(0.5)
	lo, hi := latValue(0), latValue(latBuckets-1)
	durations := []time.Duration{math.MinInt64, -1, 0, 1, time.Microsecond, time.Millisecond, time.Second, time.Hour, math.MaxInt64}
	var wg sync.WaitGroup
	var stop atomic.Bool
	for g := range recorders {
		wg.Go(func() {
			for i := range each {
				l.Record(durations[(g+i)%len(durations)])
			}
		})
	}
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			var c [latBuckets]uint16
			for !stop.Load() {
				d := firstDelay(t, s)
				if d != maxDuration && (d < lo || d > hi) {
					t.Errorf("estimate %v out of [%v, %v]", d, lo, hi)
					return
				}
				if total := l.snapshot(&c); total > latRetained+latWindow {
					t.Errorf("%d observations held", total)
					return
				}
				clear(c[:])
			}
		})
	}
	wg.Wait()
	stop.Store(true)
	readers.Wait()
	assert.Equal(t, uint64(recorders*each), l.n.Load())
	d := firstDelay(t, l.Quantile(0.5))
	assert.True(t, d >= lo && d <= hi, "%v", d)
}

// TestQuantileFused checks that Quantile is a plan's source: combinators on
// it fuse, and give the delays the same chain built with relays gives,
// before and after the warm-up and as the estimate moves.
func TestQuantileFused(t *testing.T) {
	if fusion {
		assert.NotNil(t, planOf(NewLatency().Quantile(0.5).AtLeast(ms).Cap(s1).Take(3)))
	}
	l := NewLatency()
	q := l.Quantile(0.9)
	chain := func(s Schedule) Schedule { return s.AtLeast(2*ms).Cap(40*ms).Jitter(0.1, rand.NewPCG(1, 2)).Take(5) }
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 4 {
		fused := slices.Collect(chain(q).Seq())
		relayed := slices.Collect(chain(opaque(q)).Seq())
		require.Len(t, fused, 5, "round %d", round)
		assert.Equal(t, relayed, fused, "round %d", round)
		for range 300 {
			l.Record(lognormal(time.Duration(round+1)*10*ms, 0.5).draw(r))
		}
	}
}

// TestHedgeRateAtQuantile checks that hedging after the p95 that WithLatency
// tracks sends a hedge on 5% of calls, as the quantile promises: real Hedge
// calls, one after another under testing/synctest, each with one hedge at
// lat.Quantile(0.95), whose attempts take latencies drawn from a seeded
// lognormal or Pareto distribution and return early when cancelled. Before
// WithLatency recorded the losers, the estimate settled below the true p95 and
// 6.1% (lognormal) and 11.1% (Pareto) of calls hedged.
//
// The rate is counted after the tracker has filled its three windows with
// hedged calls, over enough calls that its standard error, about 0.15
// points, leaves the ±1 point well apart from both rules.
func TestHedgeRateAtQuantile(t *testing.T) {
	const (
		warm  = latWindows * latWindow // calls before counting: the tracker holds only hedged calls' observations
		calls = 20_000
	)
	for _, dist := range []distribution{lognormal(10*time.Millisecond, 0.5), pareto(5*time.Millisecond, 1.5)} {
		t.Run(dist.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := rand.New(rand.NewPCG(1, 2))
				lat := NewLatency()
				s := lat.Quantile(0.95).Cap(time.Hour).Take(1)
				hedged := 0
				for i := range warm + calls {
					// Both latencies are drawn before the call, so that the
					// draws do not depend on which attempts run.
					lats := [2]time.Duration{dist.draw(r), dist.draw(r)}
					var started atomic.Int32
					fn := func(ctx context.Context) (int, error) {
						k := started.Add(1) - 1 // the attempts start at different instants
						timer := time.NewTimer(lats[k])
						defer timer.Stop()
						select {
						case <-timer.C:
							return int(k), nil
						case <-ctx.Done():
							return 0, ctx.Err()
						}
					}
					if _, err := Hedge(t.Context(), s, fn, WithLatency(lat)); err != nil {
						t.Fatal(err)
					}
					synctest.Wait() // the loser has returned, and been recorded
					if i >= warm && started.Load() > 1 {
						hedged++
					}
				}
				rate := 100 * float64(hedged) / calls
				t.Logf("%.2f%% of calls hedged at the tracked p95 (%v; true %v)", rate, firstDelay(t, s), dist.p95)
				assert.InDelta(t, 5, rate, 1, "hedge rate, in %%")
			})
		})
	}
}
