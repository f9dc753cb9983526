package retryserver

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// A Shedder admits requests to a server: at most as many at once as its
// adaptive retry.Limiter allows (or a fixed Concurrency), the others queued
// briefly or refused, retries first (see the package documentation for the
// rules). Make one with New per resource that
// saturates (usually one per server process) and share it among the
// handlers and interceptors that use that resource.
//
// A Shedder is safe for concurrent use by multiple goroutines.
type Shedder struct {
	lim    *retry.Limiter // nil: the fixed limit
	limit  int            // the fixed limit, without lim
	jitter func() float64 // rand.Float64, in [0, 1); tests may replace it
	origin time.Time      // of the times given to rules: since reads the monotonic clock alone

	mu       sync.Mutex
	rules    Rules // CoDel, retries first, the pushback: the rules that the simulator runs too
	inFlight int   // admitted and not yet released (lim counts them too, with its permits)
	firsts   queue // first attempts waiting
	retries  queue // retries waiting
	stats    Stats
}

// Stats counts what a Shedder has done since New; Shedder.Stats reports it.
type Stats struct {
	InFlight int    // requests admitted and not yet released
	Queued   int    // requests waiting in the queue
	Admitted uint64 // requests admitted, at once or from the queue
	Refused  uint64 // requests refused with a *Refusal
	Gone     uint64 // requests not started because their context had ended (before or while queued; also counted in Admitted if it ended as a slot came)
}

// New returns a Shedder configured by opts (see WithLimiter, Concurrency,
// Target, Interval and QueueLimit for the defaults). Without WithLimiter or
// Concurrency, the Shedder has a retry.Limiter of its own, made by
// retry.NewLimiter() with its defaults.
//
// New panics if Target is longer than Interval.
func New(opts ...Option) *Shedder {
	s := &Shedder{jitter: rand.Float64}
	target, interval, queueLimit := DefaultTarget, DefaultInterval, DefaultQueueLimit
	for _, o := range opts {
		switch o.kind {
		case concurrencyOption:
			s.lim, s.limit = nil, o.n
		case limiterOption:
			s.lim, s.limit = o.lim, 0
		case targetOption:
			target = o.d
		case intervalOption:
			interval = o.d
		case queueLimitOption:
			queueLimit = o.n
		}
	}
	if s.lim == nil && s.limit == 0 {
		s.lim = retry.NewLimiter()
	}
	if target > interval {
		panic("retryserver: New: Target " + target.String() + " is longer than Interval " + interval.String())
	}
	s.rules = NewRules(target, interval, queueLimit)
	s.origin = time.Now()
	return s
}

// A Ticket is a request's admission: the holder may serve the request, and
// must then release the Ticket exactly once, with Success, Failure or Drop,
// which frees its slot for the next request. A Ticket is a small value; the
// zero Ticket, returned with every error, releases nothing.
type Ticket struct {
	s     *Shedder
	start time.Duration // since the Shedder's origin
	p     retry.Permit  // the Limiter's, if the Shedder has one
}

// Success releases t after the request was served, whatever its answer;
// its service time counts in the Shedder's estimate of its drain time.
func (t Ticket) Success() {
	t.p.Success()
	t.release(true)
}

// Failure releases t after the request failed in a way that says the
// server is overloaded or broken (a panic, a timeout); like Success, its
// service time counts.
func (t Ticket) Failure() {
	t.p.Failure()
	t.release(true)
}

// Drop releases t without a sample: the request's caller went away, so its
// service time says nothing about the server's.
func (t Ticket) Drop() {
	t.p.Drop()
	t.release(false)
}

func (t Ticket) release(sample bool) {
	s := t.s
	if s == nil {
		return
	}
	at := s.since()
	s.mu.Lock()
	if sample {
		s.rules.Served(at - t.start)
	}
	s.inFlight--
	s.dispatch(at)
	s.mu.Unlock()
}

// Admit decides whether the request whose context is ctx may be served;
// isRetry says that the client sent it as a retry (an attempt after the
// first). It returns at once with a Ticket when a slot is free and nobody
// waits, or an error; otherwise it waits in the queue, at most Interval
// (Target while the queue is standing) and never past ctx's end, for a
// Ticket or a refusal.
//
// The error is a *Refusal, which carries the pushback to send the client,
// or context.Cause(ctx) when ctx ended before the request could start
// (context.DeadlineExceeded when its deadline had passed): the caller is
// gone or has given up, and the request must not be served.
func (s *Shedder) Admit(ctx context.Context, isRetry bool) (Ticket, error) {
	if ctx.Err() != nil {
		return s.gone(ctx)
	}
	deadline, hasDeadline := ctx.Deadline()
	if hasDeadline && time.Until(deadline) <= 0 {
		s.mu.Lock()
		s.stats.Gone++
		s.mu.Unlock()
		return Ticket{}, context.DeadlineExceeded
	}
	at := s.since()
	s.mu.Lock()
	s.rules.Arrive(at)
	queued := s.firsts.len() + s.retries.len()
	if queued == 0 {
		if p, ok := s.take(); ok {
			s.mu.Unlock()
			return Ticket{s: s, start: at, p: p}, nil
		}
	}
	switch s.rules.Decide(at, queued, s.retries.len(), isRetry) {
	case VerdictRefuse:
		r := s.refusal(at)
		s.mu.Unlock()
		return Ticket{}, r
	case VerdictEvictRetry:
		w := s.retries.popOldest()
		w.refusal = s.refusal(at)
		w.ch <- false
		queued--
	}
	wait := s.rules.MaxWait(at, queued)
	if queued == 0 {
		s.rules.Emptied(at)
	}
	w := &waiter{ch: make(chan bool, 1)} // the time.Timer below allocates too: a queued request costs a few
	if isRetry {
		s.retries.push(w)
	} else {
		s.firsts.push(w)
	}
	if hasDeadline {
		wait = min(wait, time.Until(deadline))
	}
	// A Limiter may have raised its limit since the last release, leaving
	// slots free with requests waiting: give them out now.
	s.dispatch(at)
	s.mu.Unlock()

	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case ok := <-w.ch:
		return s.admitted(ctx, w, ok)
	case <-timer.C:
	case <-ctx.Done():
	}
	at = s.since()
	s.mu.Lock()
	if !s.firsts.remove(w) && !s.retries.remove(w) {
		// Dispatched or evicted meanwhile: the answer is in w.ch.
		s.mu.Unlock()
		return s.admitted(ctx, w, <-w.ch)
	}
	if s.firsts.len()+s.retries.len() == 0 {
		s.rules.Emptied(at)
	}
	if ctx.Err() != nil || hasDeadline && time.Until(deadline) <= 0 {
		s.stats.Gone++
		s.mu.Unlock()
		if ctx.Err() == nil {
			return Ticket{}, context.DeadlineExceeded
		}
		return Ticket{}, context.Cause(ctx)
	}
	r := s.refusal(at)
	s.mu.Unlock()
	return Ticket{}, r
}

// admitted returns the outcome of w's wait: ok, a slot that dispatch gave
// it, unless ctx has ended meanwhile; otherwise the refusal set by whoever
// evicted it.
func (s *Shedder) admitted(ctx context.Context, w *waiter, ok bool) (Ticket, error) {
	if !ok {
		return Ticket{}, w.refusal
	}
	t := Ticket{s: s, start: s.since(), p: w.permit}
	if ctx.Err() != nil {
		t.Drop()
		return s.gone(ctx)
	}
	return t, nil
}

// since returns the time since s's origin, from the monotonic clock alone,
// which is cheaper to read than the wall clock.
func (s *Shedder) since() time.Duration { return time.Since(s.origin) }

func (s *Shedder) gone(ctx context.Context) (Ticket, error) {
	s.mu.Lock()
	s.stats.Gone++
	s.mu.Unlock()
	return Ticket{}, context.Cause(ctx)
}

// Stats returns the Shedder's counters at this instant.
func (s *Shedder) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.InFlight, st.Queued = s.inFlight, s.firsts.len()+s.retries.len()
	return st
}

// dispatch gives free slots to waiting requests: first attempts before
// retries, oldest first, or newest first while the queue is standing.
// s.mu is held.
func (s *Shedder) dispatch(at time.Duration) {
	for queued := s.firsts.len() + s.retries.len(); queued > 0; queued-- {
		p, ok := s.take()
		if !ok {
			return
		}
		q := &s.firsts
		if q.len() == 0 {
			q = &s.retries
		}
		var w *waiter
		if s.rules.Standing(at, queued) {
			w = q.popNewest()
		} else {
			w = q.popOldest()
		}
		w.permit = p
		w.ch <- true
		if queued == 1 {
			s.rules.Emptied(at)
		}
	}
}

// take takes a slot, if one is free: a permit of the Limiter, or one of
// the fixed Concurrency. s.mu is held.
func (s *Shedder) take() (retry.Permit, bool) {
	var p retry.Permit
	if s.lim != nil {
		var ok bool
		if p, ok = s.lim.TryAcquire(); !ok {
			return p, false
		}
	} else if s.inFlight >= s.limit {
		return p, false
	}
	s.inFlight++
	s.stats.Admitted++
	return p, true
}

// slots returns the number of requests served at once now: the Limiter's
// limit, or the fixed Concurrency. s.mu is held.
func (s *Shedder) slots() int {
	if s.lim != nil {
		return max(s.lim.Limit(), 1)
	}
	return s.limit
}
