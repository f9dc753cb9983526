package retry

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/exp/stats"
)

// samples ranges s n times and returns the delays of each run.
func samples(s Schedule, n int) [][]time.Duration {
	out := make([][]time.Duration, n)
	for i := range out {
		out[i] = slices.Collect(s.Seq())
	}
	return out
}

func floats(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d)
	}
	return out
}

// column returns the i-th delay of every run.
func column(runs [][]time.Duration, i int) []time.Duration {
	out := make([]time.Duration, len(runs))
	for j, r := range runs {
		out[j] = r[i]
	}
	return out
}

func TestJitterBounds(t *testing.T) {
	base := Exponential(ms).Cap(time.Second).Take(15)
	bases := slices.Collect(base.Seq())
	tests := []struct {
		name   string
		s      Schedule
		lo, hi func(d time.Duration) time.Duration
	}{
		{"FullJitter", base.FullJitter(rand.NewPCG(1, 1)),
			func(time.Duration) time.Duration { return 0 },
			func(d time.Duration) time.Duration { return d }},
		{"EqualJitter", base.EqualJitter(rand.NewPCG(1, 2)),
			func(d time.Duration) time.Duration { return d / 2 },
			func(d time.Duration) time.Duration { return d }},
		{"Jitter 0.2", base.Jitter(0.2, rand.NewPCG(1, 3)),
			func(d time.Duration) time.Duration { return d - d/5 },
			func(d time.Duration) time.Duration { return d + d/5 }},
		{"Jitter 1", base.Jitter(1, rand.NewPCG(1, 4)),
			func(time.Duration) time.Duration { return 0 },
			func(d time.Duration) time.Duration { return 2 * d }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, run := range samples(tt.s, 2000) {
				require.Len(t, run, len(bases))
				for i, d := range run {
					if lo, hi := tt.lo(bases[i]), tt.hi(bases[i]); d < lo || d > hi {
						t.Fatalf("delay %d is %v, outside [%v, %v]", i, d, lo, hi)
					}
				}
			}
		})
	}
}

func TestJitterDistribution(t *testing.T) {
	const n = 20000
	const limit = 2 * time.Second
	tests := []struct {
		name string
		s    Schedule
		mean time.Duration
	}{
		// Past the 5th retry, Exponential(100ms) is at the cap, so full jitter
		// averages cap/2.
		{"FullJitter at the cap averages cap/2", Exponential(100 * ms).Cap(limit).FullJitter(rand.NewPCG(2, 1)).Take(10), limit / 2},
		{"EqualJitter at the cap averages 3/4 of it", Exponential(100 * ms).Cap(limit).EqualJitter(rand.NewPCG(2, 2)).Take(10), limit * 3 / 4},
		{"Jitter is centred on the delay", Exponential(100*ms).Cap(limit).Jitter(0.5, rand.NewPCG(2, 3)).Take(10), limit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			last := floats(column(samples(tt.s, n), 9))
			mean, sd := stats.MeanAndStdDev(last)
			// Five standard errors: a wrong formula misses by far more.
			assert.InDelta(t, float64(tt.mean), mean, 5*sd/math.Sqrt(n))
		})
	}

	t.Run("FullJitter is uniform over the whole interval", func(t *testing.T) {
		// Ten equal buckets over [0, 9ns]: each value equally likely.
		counts := make([]int, 10)
		for _, run := range samples(Constant(9).FullJitter(rand.NewPCG(3, 3)).Take(1000), 100) {
			for _, d := range run {
				counts[d]++
			}
		}
		chi := 0.0
		for _, c := range counts {
			chi += math.Pow(float64(c)-10000, 2) / 10000
		}
		assert.Less(t, chi, 27.88, "chi-square with 9 degrees of freedom at p = 0.001; counts %v", counts)
	})
}

func TestJitterOrder(t *testing.T) {
	const limit = time.Second
	const n = 4000
	atCap := func(s Schedule) (over, at int) {
		for _, run := range samples(s, n) {
			d := run[len(run)-1]
			if d > limit {
				over++
			}
			if d == limit {
				at++
			}
		}
		return over, at
	}
	t.Run("Cap then FullJitter stays below the cap without piling up", func(t *testing.T) {
		over, at := atCap(Exponential(100 * ms).Cap(limit).FullJitter(rand.NewPCG(4, 1)).Take(8))
		assert.Zero(t, over)
		assert.Less(t, at, 3)
	})
	t.Run("Jitter then Cap piles up at the cap", func(t *testing.T) {
		over, at := atCap(Exponential(100*ms).Jitter(0.5, rand.NewPCG(4, 2)).Cap(limit).Take(8))
		assert.Zero(t, over)
		assert.Greater(t, at, n*9/10, "almost every late delay is clamped to exactly the cap")
	})
	t.Run("Cap then Jitter exceeds the cap by up to the factor", func(t *testing.T) {
		over, _ := atCap(Exponential(100*ms).Cap(limit).Jitter(0.5, rand.NewPCG(4, 3)).Take(8))
		assert.Greater(t, over, n/3)
	})
}

func TestSeededJitterRepeats(t *testing.T) {
	build := map[string]func(src rand.Source) Schedule{
		"FullJitter":         func(src rand.Source) Schedule { return Exponential(ms).FullJitter(src) },
		"EqualJitter":        func(src rand.Source) Schedule { return Exponential(ms).EqualJitter(src) },
		"Jitter":             func(src rand.Source) Schedule { return Exponential(ms).Jitter(0.3, src) },
		"DecorrelatedJitter": func(src rand.Source) Schedule { return DecorrelatedJitter(ms, time.Hour, src) },
		"SmoothJitter":       func(src rand.Source) Schedule { return SmoothJitter(ms, src) },
	}
	for name, b := range build {
		t.Run(name, func(t *testing.T) {
			a := first(b(rand.NewPCG(9, 9)), 30)
			assert.Equal(t, a, first(b(rand.NewPCG(9, 9)), 30), "same seed, same sequence")
			assert.NotEqual(t, a, first(b(rand.NewPCG(9, 10)), 30), "another seed, another sequence")
			assert.Equal(t, a, first(b(rand.New(rand.NewPCG(9, 9))), 30), "a *rand.Rand is a source too")
		})
	}
}

func TestDecorrelatedJitter(t *testing.T) {
	const base, limit = 10 * ms, time.Second
	runs := samples(DecorrelatedJitter(base, limit, rand.NewPCG(5, 5)).Take(20), 2000)
	reachedLimit := 0
	for _, run := range runs {
		prev := base
		for i, d := range run {
			if hi := min(limit, 3*prev); d < base || d > hi {
				t.Fatalf("delay %d is %v, outside [%v, %v]", i, d, base, hi)
			}
			prev = d
		}
		if run[len(run)-1] == limit {
			reachedLimit++
		}
	}
	// The first delay is uniform in [base, 3·base], so its mean is 2·base.
	mean, sd := stats.MeanAndStdDev(floats(column(runs, 0)))
	assert.InDelta(t, float64(2*base), mean, 5*sd/math.Sqrt(2000))
	assert.Greater(t, reachedLimit, 0)
}

// TestSmoothJitter checks the properties that Polly documents for its
// "decorrelated jitter V2".
func TestSmoothJitter(t *testing.T) {
	const median = 100 * ms
	const n = 20000
	const k = 8
	runs := samples(SmoothJitter(median, rand.NewPCG(6, 6)).Take(k), n)
	for i := range k {
		sums := make([]float64, n)
		for j, run := range runs {
			var sum time.Duration
			for _, d := range run[:i+1] {
				sum += d
			}
			sums[j] = float64(sum)
		}
		t.Run(fmt.Sprintf("cumulative wait before retry %d", i+1), func(t *testing.T) {
			target := float64(median) * math.Exp2(float64(i))
			// Retry 0 is 0.9·median in Polly's design; later ones are within a
			// few percent of median·2ᵏ.
			tol := 0.05
			if i == 0 {
				tol = 0.15
			}
			assert.InEpsilon(t, target, stats.Median(sums), tol, "median of the wait before retry %d", i+1)
			assert.Less(t, slices.Max(sums), 0.72*float64(median)*math.Exp2(float64(i+1)),
				"the first %d delays sum below 0.72·median·2^%d", i+1, i+1)
		})
	}
	t.Run("every delay is positive", func(t *testing.T) {
		for _, run := range runs {
			for i, d := range run {
				if d <= 0 {
					t.Fatalf("delay %d is %v", i, d)
				}
			}
		}
	})
	t.Run("no value piles up", func(t *testing.T) {
		// Unlike a capped schedule, no single delay value repeats across runs.
		seen := map[time.Duration]int{}
		for _, run := range runs {
			seen[run[k-1]]++
		}
		for d, c := range seen {
			require.Less(t, c, 3, "delay %v repeated", d)
		}
	})
}

func TestUpToEdges(t *testing.T) {
	r := source{rand.NewPCG(1, 1)}
	assert.Equal(t, uint64(0), r.upTo(0))
	for range 1000 {
		assert.LessOrEqual(t, r.upTo(math.MaxInt64), uint64(math.MaxInt64))
		assert.LessOrEqual(t, r.upTo(1), uint64(1))
	}
	f := r.float64()
	assert.True(t, f >= 0 && f < 1)
}

// TestDecorrelatedJitterGrowth pins the growth DecorrelatedJitter's doc
// states, which once said it grew about as fast as Exponential with a
// factor of 2: the mean of each delay is 1.5 times the one before plus
// base/2, and the median of the 16th delay is a twentieth of its mean.
func TestDecorrelatedJitterGrowth(t *testing.T) {
	const (
		runs = 20_000
		n    = 16
		base = time.Millisecond
	)
	sums := make([]float64, n)
	var last []time.Duration
	s := DecorrelatedJitter(base, maxDuration, rand.NewPCG(1, 2)).Take(n)
	for range runs {
		ds := first(s, n)
		for i, d := range ds {
			sums[i] += float64(d)
		}
		last = append(last, ds[n-1])
	}
	mean := 2 * float64(base) // of uniform[base, 3·base]
	for i := range n {
		got := sums[i] / runs
		assert.InEpsilon(t, mean, got, 0.05, "mean of delay %d", i)
		mean = 1.5*mean + float64(base)/2
	}
	assert.InEpsilon(t, 1.4*float64(time.Second), sums[n-1]/runs, 0.05)
	slices.Sort(last)
	median := last[runs/2]
	assert.InEpsilon(t, float64(68*time.Millisecond), float64(median), 0.05)
}
