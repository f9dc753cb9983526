package main

import (
	"context"
	"iter"
	"time"
)

// The discrete-event engine shared by herd, occ, overload and metastable:
// simulated time, a queue of wake-ups and plain events (at, event), and
// clients that each run real retry.Retry or retry.Do calls.
//
// Every client is a coroutine (iter.Pull) whose body calls the retry library
// with the client itself as its retry.Clock. When Retry sleeps, or the
// attempt function waits for the network, the client yields the duration to
// the event loop, which parks it in the queue and resumes it when simulated
// time reaches its wake-up. Exactly one client runs at a time and the queue
// breaks ties by insertion order, so a run is deterministic; nothing sleeps
// on the wall clock.

// epoch is the wall-clock time that simulated time 0 stands for.
var epoch = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// sim is one discrete-event simulation. It is not safe for concurrent use:
// separate simulations may run on separate goroutines.
type sim struct {
	now   time.Duration // since epoch
	queue wakeQueue
	seq   uint64 // insertion counter, to break ties in the queue
	// pace, if set, is called with each event's time before run handles
	// it: a test running the sim in a testing/synctest bubble sleeps there,
	// so that code reading time.Now reads the simulation's time.
	pace func(at time.Duration)
}

// client is one simulated caller. It implements retry.Clock on its
// simulation's time.
type client struct {
	sim   *sim
	yield func(time.Duration) bool // the coroutine's; set when it starts
	next  func() (time.Duration, bool)
}

// spawn schedules a client that starts running body at simulated time at.
// body runs on the client's coroutine and may block only through the
// client's wait and Sleep. Every client runs to the end of its body: run
// never stops one early, so the coroutine's yield never reports false.
func (s *sim) spawn(at time.Duration, body func(c *client)) {
	c := &client{sim: s}
	c.next, _ = iter.Pull(func(yield func(time.Duration) bool) {
		c.yield = yield
		body(c)
	})
	s.push(at, c)
}

// run resumes the clients in order of their wake-ups, and calls the
// functions scheduled with at, until none is left, and returns the
// simulated time of the last event.
func (s *sim) run() time.Duration {
	for len(s.queue) > 0 {
		w := s.queue.pop()
		if s.pace != nil {
			s.pace(w.at)
		}
		s.now = w.at
		if w.c == nil {
			w.ev.fire()
			continue
		}
		if d, ok := w.c.next(); ok && d != parked {
			s.push(addSat(s.now, d), w.c)
		}
	}
	return s.now
}

func (s *sim) push(at time.Duration, c *client) {
	s.seq++
	s.queue.push(wake{at: at, seq: s.seq, c: c})
}

// at schedules fn to be called by run at simulated time t (now if t is in
// the past), in order with the clients' wake-ups: an event that is not a
// client, such as a server finishing a request. fn runs on run's goroutine,
// outside every client, so it must not wait; it may resume parked clients
// and schedule more events.
func (s *sim) at(t time.Duration, fn func()) {
	s.event(t, funcEvent(fn))
}

// event is at for an event that is a value already: a pointer that
// implements event is stored as it is, where a closure would be allocated.
func (s *sim) event(t time.Duration, ev event) {
	s.seq++
	s.queue.push(wake{at: max(t, s.now), seq: s.seq, ev: ev})
}

// An event is something that happens at a time of the simulation, other
// than a client waking up.
type event interface{ fire() }

type funcEvent func()

func (f funcEvent) fire() { f() }

// parked is what a parked client yields: run does not requeue it.
const parked = time.Duration(-1 << 63)

// park suspends the client until resume puts it back in the queue; it must
// be called from the client's body. A client parked when run returns stays
// suspended, and its goroutine with it, until resumed: whoever parks
// clients resumes each one at the end, for its body to return.
func (c *client) park() {
	c.yield(parked)
}

// resume queues the parked client c to run at the current simulated time.
func (s *sim) resume(c *client) {
	s.push(s.now, c)
}

// wait suspends the client for d of simulated time. It must be called from the
// client's body.
func (c *client) wait(d time.Duration) {
	c.yield(max(d, 0))
}

// Now returns the simulated time, as retry.Clock requires.
func (c *client) Now() time.Time { return epoch.Add(c.sim.now) }

// Sleep parks the client for d of simulated time, as retry.Clock requires.
// A d of zero or less returns at once without yielding.
func (c *client) Sleep(ctx context.Context, d time.Duration) error {
	if d > 0 {
		c.wait(d)
	}
	return ctx.Err()
}

// addSat returns a+b for non-negative a and b, saturating at the largest
// Duration, so that a huge delay parks a client forever rather than in the
// past.
func addSat(a, b time.Duration) time.Duration {
	if a > time.Duration(1<<63-1)-b {
		return time.Duration(1<<63 - 1)
	}
	return a + b
}

// wake is one entry of the queue: client c resumes at at, or, if c is nil,
// ev fires then.
type wake struct {
	at  time.Duration
	seq uint64
	c   *client
	ev  event
}

// wakeQueue is a binary min-heap of wake-ups ordered by time, then by
// insertion. It is written out rather than built on container/heap, whose
// interface would box every entry.
type wakeQueue []wake

func (q wakeQueue) less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}

func (q *wakeQueue) push(w wake) {
	*q = append(*q, w)
	h := *q
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (q *wakeQueue) pop() wake {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = wake{}
	h = h[:last]
	for i := 0; ; {
		l, r, small := 2*i+1, 2*i+2, i
		if l < len(h) && h.less(l, small) {
			small = l
		}
		if r < len(h) && h.less(r, small) {
			small = r
		}
		if small == i {
			break
		}
		h[i], h[small] = h[small], h[i]
		i = small
	}
	*q = h
	return top
}
