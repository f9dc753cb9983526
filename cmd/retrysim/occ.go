package main

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"golang.org/x/exp/stats"
)

// The optimistic-concurrency model of the AWS Architecture Blog post
// "Exponential Backoff And Jitter" (2015): clients all try to update one row
// that has a version number. Each attempt reads the row, then writes it back
// on the condition that the version has not changed; a write that finds a
// newer version fails with a conflict, and the client backs off and tries the
// read-write again until its write succeeds. Every message crosses the
// network in |Normal(10ms, 2ms)|, so an attempt takes four crossings. Each
// client runs one real retry.Do whose attempt function is the read-write,
// with the strategy's infinite schedule: as in the original, nobody gives up.
//
// "calls" counts the conditional writes, as the original does, and "time" is
// when the last client learns that its write succeeded.

// occConfig is the model's parameters.
type occConfig struct {
	clients    []int
	trials     int
	base       time.Duration
	limit      time.Duration
	netMean    time.Duration
	netStdDev  time.Duration
	seed       uint64
	strategies []strategy
}

// occStrategies is the comparison, in the order of the report.
var occStrategies = []strategy{none, exponential, full, equal, decorrelated, smooth}

// occResult is the mean over the trials for one number of clients and one
// strategy; it is one element of the JSON document of `occ -json`.
type occResult struct {
	Clients  int     `json:"clients"`
	Strategy string  `json:"strategy"`
	Calls    float64 `json:"calls"`
	TimeMs   float64 `json:"time_ms"`
}

var errConflict = errors.New("conditional write failed: version changed")

// occTrial is the outcome of one trial.
type occTrial struct {
	writes int
	end    time.Duration
}

// runOcc runs every trial of every combination of clients and strategy on
// GOMAXPROCS workers, and returns the means in the order clients, then
// strategies. Each trial has its own seeded sources, derived from its number
// of clients, strategy and trial number, so the results depend neither on how
// the workers interleave nor on the other numbers and strategies compared.
// done is called once per finished trial.
func runOcc(cfg occConfig, done func()) []occResult {
	type task struct{ ci, si, trial int }
	trials := make([][]occTrial, len(cfg.clients)*len(cfg.strategies))
	for i := range trials {
		trials[i] = make([]occTrial, cfg.trials)
	}
	tasks := make(chan task)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for t := range tasks {
				n, st := cfg.clients[t.ci], cfg.strategies[t.si]
				stream := uint64(n)<<40 | st.id()<<32 | uint64(t.trial)
				trials[t.ci*len(cfg.strategies)+t.si][t.trial] = occOne(&cfg, n, st, stream)
				done()
			}
		})
	}
	for ci := range cfg.clients {
		for si := range cfg.strategies {
			for trial := range cfg.trials {
				tasks <- task{ci, si, trial}
			}
		}
	}
	close(tasks)
	wg.Wait()

	results := make([]occResult, 0, len(trials))
	for ci, n := range cfg.clients {
		for si, st := range cfg.strategies {
			ts := trials[ci*len(cfg.strategies)+si]
			calls := make([]float64, len(ts))
			times := make([]float64, len(ts))
			for i, t := range ts {
				calls[i], times[i] = float64(t.writes), ms(t.end)
			}
			results = append(results, occResult{
				Clients: n, Strategy: string(st),
				Calls: round(stats.Mean(calls), 1), TimeMs: round(stats.Mean(times), 1),
			})
		}
	}
	return results
}

// occOne runs one trial with n clients. The network and the schedules draw
// from two separate seeded streams, stream<<1 and stream<<1|1; stream must
// be below 2⁶³.
func occOne(cfg *occConfig, n int, st strategy, stream uint64) occTrial {
	net := rand.New(pcg(cfg.seed, stream<<1))
	sched := st.schedule(cfg.base, cfg.limit, pcg(cfg.seed, stream<<1|1))
	delay := func() time.Duration {
		return time.Duration(math.Abs(float64(cfg.netMean) + float64(cfg.netStdDev)*net.NormFloat64()))
	}

	version, writes := 0, 0
	s := &sim{}
	ctx := context.Background()
	for range n {
		s.spawn(0, func(c *client) {
			readWrite := func(context.Context) error {
				c.wait(delay()) // the read travels to the row
				seen := version
				c.wait(delay()) // the version travels back
				c.wait(delay()) // the conditional write travels to the row
				writes++
				ok := seen == version
				if ok {
					version++
				}
				c.wait(delay()) // the outcome travels back
				if !ok {
					return errConflict
				}
				return nil
			}
			_ = retry.Do(ctx, sched, readWrite, retry.WithClock(c))
		})
	}
	end := s.run()
	return occTrial{writes: writes, end: end}
}
