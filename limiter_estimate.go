package retry

import (
	"math"
	"time"
)

// The Limiter's algorithm: a Vegas-style queue estimate (the latency of a
// window of samples against a no-load baseline) with AIMD's reaction to
// failures, and a baseline measured as Envoy's adaptive concurrency filter
// measures its minRTT: now and then, at a concurrency too low for a queue.
// docs/LIMITER.md explains it with figures; the rules are:
//
//   - Samples are gathered in windows of at least limitWindowSamples
//     outcomes and two baselines of time (or a second, once a few are in).
//     A window's latency is the mean of its successes' latencies.
//   - Failures: a window with a share f of failures cuts the limit by f/2
//     (at most by half), whatever the latency says, so a dependency that
//     fails fast is not flooded (the limit of a Go port never fell on
//     errors, and it stuck at 100 % failures).
//   - Latency: with r the window's latency over the baseline, r above
//     limitCutRatio cuts the limit towards limitTargetRatio in proportion
//     (by at least 10 % and at most 30 % a window; r is averaged with the
//     previous window's, as one window's mean is noisy); r below limitGrowRatio raises it by
//     an eighth (at least a half), but only if the window used at least half of
//     the limit: a limit nobody reaches does not grow, and a latency between
//     the two ratios holds it (Netflix's Gradient2 limit "gradually increases
//     indefinitely" at a gradient near 0.8, its queue allowance outgrowing
//     the gradient's cut).
//   - Baseline: the first window sets it roughly, and a probe follows at
//     once. Then every limitProbeEvery, and (at most once a second) when
//     the baseline looks stale (the limit at its floor, limitStaleCuts
//     latency cuts in a row, or a latency under limitStaleRatio of the
//     baseline), a probe holds the limit at a quarter of itself (at most
//     limitProbeConcurrency, at least the floor) until the permits of
//     before have come back, and takes the mean of the next
//     limitProbeSamples latencies (or of those of a second, if 16 or more)
//     as the baseline; the limit then returns to
//     where it was (a probe that finds the baseline within a quarter of the
//     last one averages the two). A baseline that moved by more than a quarter is probed
//     again after the next window: the limit of the first probe may have
//     been above the dependency's capacity. No other latency ever moves the baseline, so a long
//     incident's inflated latency never becomes it (failsafe-go's #127: a
//     baseline averaged over recent latency catches up with it, and the
//     limit stops falling), while a dependency that became slower for good
//     is learned at the next probe.
const (
	limitWindowSamples    = 40
	limitCutRatio         = 1.7
	limitTargetRatio      = 1.45
	limitGrowRatio        = 1.3
	limitProbeEvery       = 30 * time.Second
	limitProbeConcurrency = 8
	limitProbeSamples     = 128
	limitStaleCuts        = 3
	limitStaleRatio       = 0.7
)

// limitEstimate is a Limiter's learning state, guarded by its mu.
type limitEstimate struct {
	limit   float64       // the limit, before rounding down; during a probe, the limit to return to
	base    float64       // the no-load latency, in ns; 0 until the first window
	ratio   float64       // the windows' latency over base, smoothed; 0 until the first window
	cuts    int           // windows in a row that cut the limit for latency
	atFloor bool          // the limit is at its floor
	based   time.Duration // when base was last measured

	// The current window.
	start time.Duration // on the Limiter's clock
	n     int           // outcomes
	fails int           // failures among them
	sum   float64       // of the successes' latencies, in ns
	peak  int           // the most permits out that a sample saw

	// The probe, if one is on.
	probing bool
	drained time.Duration // when the permits of before had come back; -1 until then
}

// add adds one outcome (a latency rtt, or a failure) of a permit released
// at now with inflight permits out, and updates the limit when the window
// (or the probe) is complete; it returns the limit to apply, or -1.
func (e *limitEstimate) add(now, rtt time.Duration, inflight int, failed bool, l *Limiter) int64 {
	if e.probing {
		return e.probe(now, rtt, inflight, failed, l)
	}
	e.n++
	if failed {
		e.fails++
	} else {
		e.sum += float64(max(rtt, 0))
	}
	e.peak = max(e.peak, inflight)
	span := now - e.start
	// Three round trips at least: the first completions of a window are
	// the fast ones, and a shorter window's mean would be biased low.
	rtt3 := 3 * max(e.base, e.sum/float64(max(e.n-e.fails, 1)))
	if !(e.n >= limitWindowSamples && span >= time.Duration(rtt3) || e.n >= 8 && span >= time.Second || span >= 10*time.Second) {
		return -1
	}
	if ok := e.n - e.fails; ok > 0 {
		l.hint.Store(int64(e.sum / float64(ok)))
	}
	e.update(now, l.minL, l.maxL)
	e.n, e.fails, e.sum, e.peak, e.start = 0, 0, 0, 0, now
	if e.base > 0 && (e.based < 0 || now-e.based >= limitProbeEvery || e.stale() && now-e.based >= time.Second) {
		e.probing, e.drained = true, -1
		return int64(e.probeLimit(l.minL))
	}
	return int64(e.limit)
}

// stale reports whether the latency suggests that the baseline no longer
// holds: the limit fell to its floor, or was cut limitStaleCuts windows in
// a row (a dependency that became slower, whose latency cutting the limit
// does not bring down), or the latency is well below the baseline (one
// that became faster).
func (e *limitEstimate) stale() bool {
	return e.cuts >= limitStaleCuts || e.ratio > 0 && e.ratio < limitStaleRatio || e.atFloor
}

// probeLimit is the limit during a probe: a quarter of the limit, at most
// limitProbeConcurrency, at least the floor.
func (e *limitEstimate) probeLimit(floor int) int {
	return max(min(int(e.limit)/4, limitProbeConcurrency), floor)
}

// probe adds one outcome during a probe.
func (e *limitEstimate) probe(now, rtt time.Duration, inflight int, failed bool, l *Limiter) int64 {
	at := e.probeLimit(l.minL)
	if e.drained < 0 {
		if inflight <= at {
			e.drained = now
		}
		return -1
	}
	if now-rtt < e.drained {
		return -1 // taken while the permits of before were out
	}
	e.n++
	if failed {
		e.fails++
	} else {
		e.sum += float64(max(rtt, 0))
	}
	ok := e.n - e.fails
	if ok < limitProbeSamples && !(ok >= 16 && now-e.drained >= time.Second || ok > 0 && now-e.drained >= 10*time.Second) {
		return -1
	}
	base, based := e.sum/float64(ok), now
	if math.Abs(base-e.base) > e.base/4 {
		based = -1 // a large change: probe again after the next window, at the limit then
	} else {
		base = (base + e.base) / 2 // a small one: noise, or a slow trend
	}
	e.base, e.based, e.ratio, e.cuts = base, based, 0, 0
	e.probing = false
	e.n, e.fails, e.sum, e.peak, e.start = 0, 0, 0, 0, now
	return int64(e.limit)
}

// update applies the rules above to the complete window, ended at now.
func (e *limitEstimate) update(now time.Duration, floor, ceiling int) {
	lim := e.limit
	used := float64(e.peak) >= lim/2
	ok := e.n - e.fails
	if f := float64(e.fails) / float64(e.n); f > 0 {
		lim *= max(0.5, 1-f/2)
	}
	if ok > 0 {
		mean := e.sum / float64(ok)
		switch {
		case e.base == 0:
			e.base, e.based = mean, -1 // a rough first measure: probe at once
		case e.fails > 0:
			// The failures decided; latency is left for a cleaner window.
		default:
			r := mean / e.base
			if e.ratio > 0 {
				r = (r + e.ratio) / 2
			}
			e.ratio = r
			switch {
			case r > limitCutRatio:
				lim *= min(max(limitTargetRatio/r, 0.7), 0.9)
				e.cuts++
			case r < limitGrowRatio && used:
				lim += max(0.5, lim/8)
				e.cuts = 0
			default:
				e.cuts = 0
			}
		}
	}
	e.limit = math.Min(math.Max(lim, float64(floor)), float64(ceiling))
	e.atFloor = int(e.limit) <= floor
}
