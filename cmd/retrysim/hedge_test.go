package main

import (
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// scenario is a hedge simulation without random arrivals: the test sends
// the copies itself, on servers it chooses, and every service takes exactly
// -service (sigma 0).
func scenario(requests, servers int) *hedgeSim {
	cfg := &hedgeConfig{
		requests: requests, fanout: 1, servers: servers, loads: []float64{0.1},
		service: time.Millisecond, net: 100 * time.Microsecond, seed: 1,
	}
	h := newHedgeSim(cfg, 0.1, nil, nil, nil)
	h.arrived = requests // no random arrivals
	return h
}

// request starts a request of one leaf whose first copy goes to server srv
// and takes service, and, if hedgeAt >= 0, whose hedge timer fires then.
func (h *hedgeSim) request(srv int32, service, hedgeAt time.Duration) int32 {
	r := h.newRequest()
	h.send(r, 0, 0, srv, service)
	h.events.push(laneNet, h.now+h.cfg.net, evReachFirst, r, 0)
	if hedgeAt >= 0 {
		h.reqs[r].timer = true
		h.events.push(laneTimer, hedgeAt, evHedge, r, 0)
	}
	return r
}

// allReleased reports whether every copy has been recycled.
func (h *hedgeSim) allReleased() bool {
	return len(h.freeCopies) == len(h.copies)
}

func TestHedgeBeatsPausedServer(t *testing.T) {
	h := scenario(1, 2)
	h.events.push(heapRare, 0, evPauseStart, 0, 0) // server 0 is paused for 50ms
	h.cfg.pause = 50 * time.Millisecond
	h.request(0, time.Millisecond, 2*time.Millisecond)
	h.run()
	// The hedge leaves at 2ms for server 1 (the only other one), arrives at
	// 2.1ms, is served until 3.1ms, and its answer arrives at 3.2ms.
	if len(h.latency) != 1 || h.latency[0] != 3.2 || h.hedgesSent != 1 {
		t.Fatalf("latency %v ms, %d hedges; want 3.2ms, 1 hedge", h.latency, h.hedgesSent)
	}
	// The cancel reaches server 0 at 3.3ms, while the first copy is still
	// queued: it is removed, and when the pause ends it costs nothing.
	h.runUntil(time.Second)
	if h.useful != time.Millisecond || h.wasted != 0 || !h.allReleased() {
		t.Errorf("useful %v, wasted %v, all released %v; want 1ms, 0, true", h.useful, h.wasted, h.allReleased())
	}
}

func TestHedgeCancelRemovesQueuedLoser(t *testing.T) {
	h := scenario(2, 2)
	h.request(1, 10*time.Millisecond, -1) // keeps server 1 busy until 10.1ms
	r := h.request(0, time.Millisecond, -1)
	h.send(r, 0, 1, 1, time.Millisecond) // a hedge sent at once, queued on server 1
	h.events.push(laneNet, h.cfg.net, evReachHedges, r, 0)
	h.run()
	h.runUntil(time.Second)
	// The first copy answers at 1.2ms; the cancel reaches server 1 at 1.3ms
	// and removes the hedge from the queue.
	if h.latency[0] != 1.2 || h.latency[1] != 10.2 {
		t.Errorf("latencies %v ms, want 1.2 and 10.2", h.latency)
	}
	if h.useful != 11*time.Millisecond || h.wasted != 0 || !h.allReleased() {
		t.Errorf("useful %v, wasted %v, all released %v; want 11ms, 0, true", h.useful, h.wasted, h.allReleased())
	}
}

func TestHedgeLoserInServiceRunsToTheEnd(t *testing.T) {
	h := scenario(1, 2)
	h.request(0, time.Millisecond, 500*time.Microsecond)
	h.run()
	h.runUntil(time.Second)
	// The hedge reaches server 1 at 0.6ms and is in service when the first
	// copy's answer arrives at 1.2ms: the cancel cannot stop it, so its
	// whole service is wasted.
	if h.latency[0] != 1.2 || h.wasted != time.Millisecond || !h.allReleased() {
		t.Errorf("latency %v ms, wasted %v, all released %v; want 1.2ms, 1ms, true", h.latency, h.wasted, h.allReleased())
	}
}

func TestHedgePauseFreezesService(t *testing.T) {
	h := scenario(1, 1)
	h.cfg.pause = 50 * time.Millisecond
	h.request(0, time.Millisecond, -1)
	h.events.push(heapRare, 500*time.Microsecond, evPauseStart, 0, 0)
	h.run()
	// In service from 0.1ms, paused at 0.5ms for 50ms: done at 51.1ms,
	// answered at 51.2ms.
	if h.latency[0] != 51.2 {
		t.Errorf("latency %v ms, want 51.2", h.latency)
	}
}

// TestHedgeSettle checks that each leaf's call against the Budget deposits
// its ratio and that a hedge withdraws one token, as retry.Hedge does.
func TestHedgeSettle(t *testing.T) {
	h := &hedgeSim{budget: retry.NewBudget(0.25, 1)} // starts with 1 token
	for i, c := range []struct{ hedge, want bool }{
		{true, true},   // 1 → 0
		{true, false},  // 0.25: refused
		{false, false}, // 0.5
		{false, false}, // 0.75
		{true, true},   // 1 → 0
	} {
		if got := h.settle(c.hedge); got != c.want {
			t.Errorf("call %d: settle(%v) = %v, want %v", i+1, c.hedge, got, c.want)
		}
	}
}

// smallHedge is a quick configuration for the model tests: 20 leaves over
// 20 servers, pauses every 2s.
func smallHedge() hedgeConfig {
	return hedgeConfig{
		requests: 2000, fanout: 20, servers: 20, loads: []float64{0.3},
		service: time.Millisecond, sigma: 0.5, pause: 50 * time.Millisecond, pauseEvery: 2 * time.Second,
		net: 100 * time.Microsecond, delay: 5 * time.Millisecond, quantile: 0.95,
		budgetRatio: 0.05, budgetReserve: 20, seed: 1, strategies: hedgeStrategies,
	}
}

// TestHedgeShape checks the model's main facts on a small run: without
// hedging the pauses make the tail; every hedging strategy cuts it; the
// extra load is what each strategy's rule says; and the Budget bounds the
// hedges whatever the latencies.
func TestHedgeShape(t *testing.T) {
	cfg := smallHedge()
	by := map[string]hedgeResult{}
	for _, r := range runHedge(cfg, noop) {
		by[r.Strategy] = r
	}
	none := by["none"]
	if none.P99 < 40 || none.ExtraLoad != 0 || none.WastedWork != 0 || none.Delay != nil {
		t.Errorf("none: %+v; want a p99 near the 50ms pause and nothing extra", none)
	}
	for _, st := range []string{"fixed", "adaptive", "duplicate"} {
		if r := by[st]; r.P99 > none.P99/2 || r.P50 > none.P50 {
			t.Errorf("%s: p50 %v, p99 %v; want both below none's (%v, %v), the p99 by half",
				st, r.P50, r.P99, none.P50, none.P99)
		}
	}
	if r := by["adaptive"]; r.ExtraLoad < 3 || r.ExtraLoad > 12 || *r.Delay < 1 || *r.Delay > 10 {
		t.Errorf("adaptive: %v%% extra, delay p50 %vms; want about 5%% at a few ms", r.ExtraLoad, *r.Delay)
	}
	if r := by["duplicate"]; r.ExtraLoad != 100 || *r.Delay != 0 || r.WastedWork <= 0 {
		t.Errorf("duplicate: %+v; want 100%% extra at delay 0, some work wasted", r)
	}
	// A Budget allows ratio·leaves + reserve hedges at most.
	r := by["adaptive+budget"]
	leaves := float64(cfg.requests * cfg.fanout)
	if sent := r.ExtraLoad / 100 * leaves; sent > cfg.budgetRatio*leaves+float64(cfg.budgetReserve) || r.Refused == 0 {
		t.Errorf("adaptive+budget sent %v hedges, refused %v%%; want at most %v, some refused",
			sent, r.Refused, cfg.budgetRatio*leaves+float64(cfg.budgetReserve))
	}
}

// TestHedgeEmptyBudget checks that a Budget without tokens sends no hedge.
func TestHedgeEmptyBudget(t *testing.T) {
	cfg := smallHedge()
	cfg.requests = 300
	r := simulateHedge(&cfg, 0.3, retry.Constant(time.Millisecond).Take(1), retry.NewBudget(0, 0), nil)
	if r.ExtraLoad != 0 || r.Refused == 0 {
		t.Errorf("extra %v%%, refused %v%%; want none sent, some refused", r.ExtraLoad, r.Refused)
	}
}

// TestHedgeSameRequestsForAll checks that the strategies see the same
// requests: with a hedge delay no leaf ever reaches, fixed is exactly none.
func TestHedgeSameRequestsForAll(t *testing.T) {
	cfg := smallHedge()
	cfg.requests, cfg.delay = 500, time.Hour
	none, fixed := hedgeOne(&cfg, 0.3, hedgeNone), hedgeOne(&cfg, 0.3, hedgeFixed)
	fixed.Strategy, fixed.Delay = "none", nil
	if none != fixed {
		t.Errorf("none %+v\nfixed %+v", none, fixed)
	}
}
