package main

import (
	"testing"
	"time"
)

// msDefaults is a small configuration of the metastable model for tests
// that drive its parts by hand.
func msDefaults() msConfig {
	return msConfig{
		workers: 10, service: 100 * time.Millisecond, refusalCost: 0.05,
		load: 0.9, clients: 10, warmup: 2 * time.Minute, trigger: 10 * time.Second, after: 2 * time.Minute, factor: 2,
		timeout: 500 * time.Millisecond, attempts: 5, base: 100 * time.Millisecond, limit: 2 * time.Second,
		budgetRatio: 0.1, budgetReserve: 10,
		shedTarget: 5 * time.Millisecond, shedInterval: 100 * time.Millisecond, shedQueueLimit: 128,
		seed: 1,
	}
}

// TestShedPolicy drives the shedding server's policy by hand: a retry that
// finds the queue standing is refused at once with a pushback, a first
// attempt queues, and a request whose client has gone is not started.
func TestShedPolicy(t *testing.T) {
	s := &sim{}
	cfg := msDefaults()
	cfg.workers = 1
	p := msServer.serverPolicy(&cfg).(*shedPolicy)
	q := newQServer(s, qserverConfig{workers: 1, service: time.Second, dist: qConst, src: pcg(1, 1)}, p)
	busy := &qjob{attempt: 1}
	q.submit(busy) // takes the worker for 1s
	first := &qjob{attempt: 1}
	q.submit(first) // queues: the queue is not standing
	if first.answer != qPending {
		t.Fatalf("a first attempt in a young queue: %v, want it queued", first.answer)
	}
	s.at(150*time.Millisecond, func() {
		retry := &qjob{attempt: 2}
		q.submit(retry) // the queue has stood for an Interval: refused at once
		if retry.answer != qRefused || retry.pushback <= 0 {
			t.Errorf("a retry in a standing queue: %v with pushback %v, want refused with a pushback", retry.answer, retry.pushback)
		}
		first.abandoned = true // its client gives up: the policy must not start it
	})
	s.run()
	if first.answer == qServed || q.stats.started != 1 {
		t.Errorf("the abandoned request was started (%d started), want only the first", q.stats.started)
	}
}

// TestServerStrategy checks the targets for the server strategies
// on the default model (seed 1, deterministic), through the command as
// users run it. The figures are those docs/SERVER.md reports, which also
// says which target the default options miss.
func TestServerStrategy(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("minutes of simulated load: too slow under -race or -short")
	}
	run := func(args ...string) []msResult {
		var rows []msResult
		mustJSON(t, &rows, append([]string{"metastable", "-json"}, args...)...)
		return rows
	}
	rows := run("-strategies", "naive,server")
	naive, server := rows[0], rows[1]
	if !naive.Stuck {
		t.Fatalf("naive clients at 90%%: not stuck; the comparison needs the storm")
	}
	if server.Stuck || server.RecoveryS == nil || *server.RecoveryS > 10 {
		t.Errorf("naive clients and the server's half at 90%%: stuck %v, recovered %s s after the trigger, want within 10 s",
			server.Stuck, fmtPtr(server.RecoveryS))
	}

	overload := []string{"-strategies", "server", "-factor", "3.34", "-trigger-for", "60s"}
	if got := run(overload...)[0].TriggerGoodputCapPct; got < 83 {
		t.Errorf("at 3× the capacity, default options: goodput %v%% of the capacity, want at least 83%%", got)
	}
	if got := run(append(overload, "-shed-target", "20ms", "-shed-interval", "500ms")...)[0].TriggerGoodputCapPct; got < 90 {
		t.Errorf("at 3× the capacity, options scaled to the service time: goodput %v%% of the capacity, want at least 90%%", got)
	}

	if r := run("-strategies", "server+recommended", "-load", "0.96")[0]; r.Stuck || r.RecoveryS == nil || *r.RecoveryS > 10 {
		t.Errorf("recommended clients and the server's half at 96%%: stuck %v, recovered %s s after the trigger, want within 10 s",
			r.Stuck, fmtPtr(r.RecoveryS))
	}
}
