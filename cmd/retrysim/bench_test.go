package main

import (
	"testing"
	"time"
)

// BenchmarkHerdDefault is the default herd run: cmd/retrysim/README.md promises
// it in about a second on two cores.
func BenchmarkHerdDefault(b *testing.B) {
	cfg := herdConfig{
		clients: 10000, outage: 2 * time.Second, slice: 10 * time.Millisecond, capacity: 100,
		base: 100 * time.Millisecond, limit: 10 * time.Second, every: time.Second, attempts: 10,
		budgetRatio: 0.1, budgetReserve: 10, seed: 1, strategies: herdStrategies,
	}
	b.ReportAllocs()
	for b.Loop() {
		runHerd(cfg, func() {})
	}
}

// BenchmarkOccClients100 is one trial of occ with 100 clients and full jitter.
func BenchmarkOccClients100(b *testing.B) {
	cfg := occConfig{base: 5 * time.Millisecond, limit: 2 * time.Second,
		netMean: 10 * time.Millisecond, netStdDev: 2 * time.Millisecond, seed: 1}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		occOne(&cfg, 100, full, uint64(i))
	}
}

// BenchmarkOverloadDefault is the default overload run, every strategy: the
// README promises it in under five seconds on two cores.
func BenchmarkOverloadDefault(b *testing.B) {
	cfg := overloadConfig{
		clients: 10, rate: 500, capacity: 1000, outageFactor: 0.1,
		warmup: 2 * time.Minute, outage: 30 * time.Second, after: time.Minute,
		latency: 20 * time.Millisecond, burst: 100 * time.Millisecond,
		attempts: 3, base: 100 * time.Millisecond, limit: time.Second,
		budgetRatio: 0.1, budgetReserve: 10, throttleK: 2, throttleWin: 2 * time.Minute,
		breakerOpen: 5 * time.Second, breakerWin: time.Minute, seed: 1, strategies: overloadStrategies,
	}
	b.ReportAllocs()
	for b.Loop() {
		runOverload(cfg, func() {})
	}
}
