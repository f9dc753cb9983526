package main

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// hedgeSim is one simulation of the hedge model: a queue of events in
// simulated time, the servers, and the requests and copies in flight.
//
// Requests live in slots that are recycled once nothing refers to them, so
// memory is bounded by what is in flight; slot r holds the leaves
// leaves[r*fanout:(r+1)*fanout]. Copies are recycled too, and an event that
// refers to a copy or to a server's completion carries a generation number,
// which tells a stale event (for a copy since recycled, or a completion a
// pause pushed back) from a live one.
//
// All the leaves of a request start at the same instant, so their first
// copies reach the servers at the same instant, their hedge timers fire at
// the same instant and their hedges reach the servers at the same instant:
// each of these is one event per request, which handles the leaves in order,
// exactly as a run of per-leaf events with consecutive insertion numbers
// would.
type hedgeSim struct {
	cfg    *hedgeConfig
	now    time.Duration
	events hedgeQueue

	arrivals, hedges, pauses *rand.Rand
	gap                      time.Duration // mean time between requests

	sched   retry.Schedule // the hedge delays; nil: never hedge
	budget  *retry.Budget
	settler settler  // settle's calls against budget
	lat     recorder // told the duration of every copy as WithLatency tells it: see answer; nil: none

	servers    []hedgeServer
	perm       []int32 // the servers, in the order of the last shuffle
	reqs       []hedgeRequest
	leaves     []hedgeLeaf
	copies     []hedgeCopy
	freeReqs   []int32
	freeCopies []int32

	arrived, finished int
	latency           []float64 // of every finished request, in ms

	hedgesSent, refused int
	delays              []float64     // the hedge delay of every request, in ms
	useful, wasted      time.Duration // service time of winners and of losers
}

// recorder is what the simulation needs of a retry.Latency.
type recorder interface{ Record(time.Duration) }

type hedgeServer struct {
	queue   []int32 // copies waiting, from queue[head]
	head    int
	current int32         // the copy in service, or -1
	doneAt  time.Duration // when current will be done
	gen     uint32        // of the pending evDone
	paused  bool
}

type hedgeRequest struct {
	start time.Duration
	left  int32 // leaves without an answer
	live  int32 // copies not yet recycled
	timer bool  // its hedge timer is pending
}

type hedgeLeaf struct {
	copies  [2]int32 // the first copy and the hedge; -1 when not sent
	decided bool     // an answer has won
}

// Copy states, in the order a copy goes through them.
const (
	copySent      uint8 = iota // on its way to its server
	copyQueued                 // in its server's queue
	copyServing                // in service
	copyAnswered               // served; its answer is on its way back
	copyCancelled              // cancelled before service: its server skips it
)

type hedgeCopy struct {
	req     int32
	leaf    int32 // index in leaves
	server  int32
	gen     uint32
	state   uint8
	service time.Duration
	sent    time.Duration
}

// Event kinds.
const (
	evArrival     uint8 = iota // a request arrives
	evReachFirst               // request id's first copies reach their servers
	evReachHedges              // request id's hedges reach their servers
	evDone                     // server id finishes the copy in service
	evAnswer                   // copy id's answer reaches the client
	evHedge                    // request id's hedge delay has passed
	evCancel                   // the cancel of copy id reaches its server
	evPauseStart               // server id pauses
	evPauseEnd                 // server id resumes
)

// run processes events until every request has finished.
func (h *hedgeSim) run() {
	for h.finished < h.cfg.requests {
		h.step()
	}
}

// runUntil processes the events up to time t.
func (h *hedgeSim) runUntil(t time.Duration) {
	for h.events.len() > 0 && h.events.peekAt() <= t {
		h.step()
	}
}

// step processes the next event.
func (h *hedgeSim) step() {
	e := h.events.pop()
	h.now = e.at
	switch e.kind {
	case evArrival:
		h.arrive()
	case evReachFirst, evReachHedges:
		k := int(e.kind - evReachFirst)
		for _, l := range h.leavesOf(e.id) {
			if c := l.copies[k]; c >= 0 && h.copies[c].state == copySent {
				h.reach(c)
			}
		}
	case evDone:
		if h.servers[e.id].gen == e.gen {
			h.done(e.id)
		}
	case evAnswer:
		if h.copies[e.id].gen == e.gen {
			h.answer(e.id)
		}
	case evHedge:
		h.reqs[e.id].timer = false
		h.hedge(e.id)
		h.maybeFree(e.id)
	case evCancel:
		if c := &h.copies[e.id]; c.gen == e.gen && c.state <= copyQueued {
			c.state = copyCancelled
		}
	case evPauseStart:
		h.pauseStart(e.id)
	case evPauseEnd:
		h.pauseEnd(e.id)
	}
}

func (h *hedgeSim) leavesOf(r int32) []hedgeLeaf {
	n := int32(h.cfg.fanout)
	return h.leaves[r*n : (r+1)*n]
}

// arrive starts a request: the first copy of each of its leaves, and its
// hedge timer.
func (h *hedgeSim) arrive() {
	cfg := h.cfg
	if h.arrived++; h.arrived < cfg.requests {
		h.events.push(heapRare, h.now+h.expo(h.arrivals, h.gap), evArrival, 0, 0)
	}
	// The leaves go to distinct servers, each a random one of those left
	// (a partial Fisher-Yates shuffle of perm), as the shards of a fan-out
	// do; past one per server, the next round starts.
	r := h.newRequest()
	for j := range cfg.fanout {
		k := j % cfg.servers
		i := k + h.arrivals.IntN(cfg.servers-k)
		h.perm[k], h.perm[i] = h.perm[i], h.perm[k]
		h.send(r, int32(j), 0, h.perm[k], h.serviceTime(h.arrivals))
	}
	h.events.push(laneNet, h.now+cfg.net, evReachFirst, r, 0)

	// Each leaf's hedge delay is the first delay of a fresh run of the
	// schedule, as in one Hedge call per leaf. The leaves all start now,
	// with no answer recorded in between, so the schedule would yield the
	// same delay to each: it is ranged once for all of them.
	if h.sched == nil {
		return
	}
	for d := range h.sched {
		h.delays = append(h.delays, ms(d))
		h.reqs[r].timer = true
		h.events.push(laneTimer, h.now+d, evHedge, r, 0)
		break
	}
}

// send sends copy k (0: the first, 1: the hedge) of leaf j of request r to
// server srv. The caller pushes the event of its reaching the server.
func (h *hedgeSim) send(r, j int32, k int, srv int32, service time.Duration) {
	c := h.newCopy()
	l := r*int32(h.cfg.fanout) + j
	h.copies[c] = hedgeCopy{req: r, leaf: l, server: srv, gen: h.copies[c].gen, state: copySent, service: service, sent: h.now}
	h.leaves[l].copies[k] = c
	h.reqs[r].live++
}

func (h *hedgeSim) reach(c int32) {
	cp := &h.copies[c]
	cp.state = copyQueued
	s := &h.servers[cp.server]
	s.queue = append(s.queue, c)
	if s.current < 0 && !s.paused {
		h.startNext(cp.server)
	}
}

// startNext takes the next copy from the queue of idle server id, skipping
// the cancelled ones, and serves it.
func (h *hedgeSim) startNext(id int32) {
	s := &h.servers[id]
	for s.head < len(s.queue) {
		c := s.queue[s.head]
		s.head++
		if h.copies[c].state == copyCancelled {
			h.release(c)
			continue
		}
		h.copies[c].state = copyServing
		s.current, s.doneAt = c, h.now+h.copies[c].service
		s.gen++
		h.events.push(heapBusy, s.doneAt, evDone, id, s.gen)
		break
	}
	if s.head == len(s.queue) {
		s.queue, s.head = s.queue[:0], 0
	} else if s.head > 1024 && s.head > len(s.queue)/2 {
		n := copy(s.queue, s.queue[s.head:])
		s.queue, s.head = s.queue[:n], 0
	}
}

func (h *hedgeSim) done(id int32) {
	s := &h.servers[id]
	c := s.current
	s.current = -1
	h.copies[c].state = copyAnswered
	h.events.push(laneNet, h.now+h.cfg.net, evAnswer, c, h.copies[c].gen)
	if !s.paused {
		h.startNext(id)
	}
}

// answer handles copy c's answer: the first of its leaf wins, and the other
// copy, if it is still on its way or on a server, is cancelled.
func (h *hedgeSim) answer(c int32) {
	cp := &h.copies[c]
	l := &h.leaves[cp.leaf]
	if l.decided {
		h.wasted += cp.service
		h.release(c)
		return
	}
	h.useful += cp.service
	l.decided = true
	if h.lat != nil {
		h.lat.Record(h.now - cp.sent)
	}
	r := &h.reqs[cp.req]
	if h.budget != nil && r.timer {
		h.settle(false)
	}
	for _, o := range l.copies {
		if o < 0 || o == c {
			continue
		}
		if h.lat != nil {
			// The loser, cancelled now, as retry.WithLatency records it in
			// Hedge: the time it ran, a lower bound of its latency.
			h.lat.Record(h.now - h.copies[o].sent)
		}
		if h.copies[o].state <= copyServing {
			h.events.push(laneNet, h.now+h.cfg.net, evCancel, o, h.copies[o].gen)
		}
	}
	if r.left--; r.left == 0 {
		h.latency = append(h.latency, ms(h.now-r.start))
		h.finished++
	}
	h.release(c)
}

// hedge sends a second copy of every leaf of request r that has no answer
// yet, to another server than the first copy's, as far as the budget, if
// any, allows.
func (h *hedgeSim) hedge(r int32) {
	sent := false
	for j := range h.leavesOf(r) {
		l := &h.leavesOf(r)[j]
		if l.decided {
			continue
		}
		if h.budget != nil && !h.settle(true) {
			h.refused++
			continue
		}
		h.hedgesSent++
		first := h.copies[l.copies[0]].server
		srv := int32(h.hedges.IntN(h.cfg.servers - 1))
		if srv >= first {
			srv++
		}
		h.send(r, int32(j), 1, srv, h.serviceTime(h.hedges))
		sent = true
	}
	if sent {
		h.events.push(laneNet, h.now+h.cfg.net, evReachHedges, r, 0)
	}
}

// settle makes one leaf's call against the Budget, as retry.Hedge would: the
// call deposits the Budget's ratio, and if hedge is set it asks for a token
// to send a hedge, and reports whether it got one. The call is one retry.Do
// whose first attempt stands for the first copy; when a hedge is due, that
// attempt fails, and Do withdraws a token for its second attempt, which
// stands for the hedge, or refuses it with ErrBudgetExhausted. The deposit
// is thus made when the leaf's fate is known, at the latest the hedge delay
// after the leaf started, rather than when it starts: a shift of a few
// milliseconds in a budget that refills over hundreds of leaves.
func (h *hedgeSim) settle(hedge bool) bool {
	s := &h.settler
	if s.fn == nil {
		s.fn = s.attempt
		s.opts = []retry.Option{retry.WithBudget(h.budget), retry.WithClock(instant{})}
	}
	s.hedge, s.attempts = hedge, 0
	err := retry.Do(context.Background(), settleSchedule, s.fn, s.opts...)
	return hedge && err == nil
}

// settler is the state of settle's calls. It is made once per simulation,
// with the function and options settle gives retry.Do, so that a call
// allocates nothing: there are millions of them, one per leaf.
type settler struct {
	hedge    bool // the call's: a hedge is due
	attempts int  // the call's attempts so far
	fn       func(context.Context) error
	opts     []retry.Option
}

// attempt is a settling call's attempt: the first fails if a hedge is due,
// so that Do withdraws a token for the second, which succeeds.
func (s *settler) attempt(context.Context) error {
	if s.attempts++; s.attempts == 1 && s.hedge {
		return errHedgeDue
	}
	return nil
}

// settleSchedule lets a settling call make one retry, at once.
var settleSchedule = retry.Constant(0).Take(1)

var errHedgeDue = errors.New("the first copy has not answered within the hedge delay")

func (h *hedgeSim) pauseStart(id int32) {
	s := &h.servers[id]
	s.paused = true
	if s.current >= 0 {
		// The copy in service waits the pause out: its completion moves.
		s.gen++
		s.doneAt += h.cfg.pause
		h.events.push(heapBusy, s.doneAt, evDone, id, s.gen)
	}
	h.events.push(heapRare, h.now+h.cfg.pause, evPauseEnd, id, 0)
}

func (h *hedgeSim) pauseEnd(id int32) {
	s := &h.servers[id]
	s.paused = false
	if s.current < 0 {
		h.startNext(id)
	}
	if h.cfg.pauseEvery > 0 {
		h.events.push(heapRare, h.now+h.expo(h.pauses, h.cfg.pauseEvery), evPauseStart, id, 0)
	}
}

// serviceTime draws a lognormal service time from r.
func (h *hedgeSim) serviceTime(r *rand.Rand) time.Duration {
	return time.Duration(float64(h.cfg.service) * math.Exp(h.cfg.sigma*r.NormFloat64()))
}

// expo draws an exponential duration of the given mean from r.
func (h *hedgeSim) expo(r *rand.Rand, mean time.Duration) time.Duration {
	return time.Duration(r.ExpFloat64() * float64(mean))
}

func (h *hedgeSim) newRequest() int32 {
	var r int32
	if n := len(h.freeReqs); n > 0 {
		r, h.freeReqs = h.freeReqs[n-1], h.freeReqs[:n-1]
	} else {
		r = int32(len(h.reqs))
		h.reqs = append(h.reqs, hedgeRequest{})
		h.leaves = append(h.leaves, make([]hedgeLeaf, h.cfg.fanout)...)
	}
	h.reqs[r] = hedgeRequest{start: h.now, left: int32(h.cfg.fanout)}
	for j := range h.leavesOf(r) {
		h.leavesOf(r)[j] = hedgeLeaf{copies: [2]int32{-1, -1}}
	}
	return r
}

// maybeFree recycles request r once nothing refers to it any more.
func (h *hedgeSim) maybeFree(r int32) {
	if q := &h.reqs[r]; q.left == 0 && q.live == 0 && !q.timer {
		h.freeReqs = append(h.freeReqs, r)
	}
}

func (h *hedgeSim) newCopy() int32 {
	var c int32
	if n := len(h.freeCopies); n > 0 {
		c, h.freeCopies = h.freeCopies[n-1], h.freeCopies[:n-1]
	} else {
		c = int32(len(h.copies))
		h.copies = append(h.copies, hedgeCopy{})
	}
	h.copies[c].gen++
	return c
}

// release recycles copy c, which its server skipped or whose answer
// arrived, and its request if that was the last thing referring to it.
func (h *hedgeSim) release(c int32) {
	cp := &h.copies[c]
	cp.gen++
	h.freeCopies = append(h.freeCopies, c)
	h.reqs[cp.req].live--
	h.maybeFree(cp.req)
}
