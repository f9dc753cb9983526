package retry

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

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
