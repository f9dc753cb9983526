package retry

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ErrLimited is the reason of an *Error returned because a Limiter had no
// permit for an attempt within its wait: errors.Is(err, ErrLimited) reports
// it. The reason carries, as a RetryAfter pushback, about one round trip of
// the dependency, the time a permit takes to come free, so that an outer
// Retry around the call does not come back at once.
var ErrLimited = errors.New("retry: concurrency limit reached")

// A Limiter bounds how many attempts to one dependency are in flight at
// once, and finds that bound, its limit, from the latency and the failures
// of the attempts it lets through: the concurrency at which the dependency
// is fully used without a queue building up in front of it (its capacity
// times its no-load latency, by Little's law). Share one Limiter among all
// the calls to one dependency, with WithLimiter, or take permits directly
// with Acquire and TryAcquire.
//
// The limit rises while the latency stays close to the no-load latency and
// the limit is in use, falls in proportion when queueing inflates the
// latency, and falls on failures (errors and timeouts, see
// Permit.Failure); it stays between LimiterMin and LimiterMax. How it is
// computed, and the guards against drift, are in docs/LIMITER.md.
//
// A Limiter reads the time from its clock (see LimiterClock). It is safe
// for concurrent use; taking and releasing a permit allocates nothing.
type Limiter struct {
	minL, maxL int
	maxWait    time.Duration
	clock      Clock     // nil: the real clock
	origin     time.Time // of the readings on clock

	limit    atomic.Int64 // the permits that may be out at once
	inflight atomic.Int64 // permits out, including those granted to waiters
	waiting  atomic.Int64 // goroutines in Acquire that may be queued
	hint     atomic.Int64 // ErrLimited's pushback, in ns: the latest round trip

	mu    sync.Mutex     // guards queue and est
	queue []*limitWaiter // Acquire calls waiting, oldest first
	est   limitEstimate
}

// A LimiterOption configures a Limiter (see NewLimiter). LimiterOptions are
// made only by this package; the zero LimiterOption does nothing.
type LimiterOption struct {
	kind  uint8
	n     int
	d     time.Duration
	clock Clock
}

const (
	limiterMin = iota + 1
	limiterMax
	limiterInitial
	limiterMaxWait
	limiterClock
)

// LimiterMin returns a LimiterOption that sets the floor of the limit
// (default 1): however the dependency behaves, n attempts may be in flight.
//
// LimiterMin panics if n is less than 1.
func LimiterMin(n int) LimiterOption {
	mustCount("LimiterMin", n)
	return LimiterOption{kind: limiterMin, n: n}
}

// LimiterMax returns a LimiterOption that sets the ceiling of the limit
// (default 1000).
//
// LimiterMax panics if n is less than 1.
func LimiterMax(n int) LimiterOption {
	mustCount("LimiterMax", n)
	return LimiterOption{kind: limiterMax, n: n}
}

// LimiterInitial returns a LimiterOption that sets the limit the Limiter
// starts from (default 20, or the floor or ceiling if that is outside
// them). Start low: the limit grows quickly while the latency allows, but a
// limit started above the dependency's capacity learns an inflated no-load
// latency when the dependency is overloaded from the first call.
//
// LimiterInitial panics if n is less than 1.
func LimiterInitial(n int) LimiterOption {
	mustCount("LimiterInitial", n)
	return LimiterOption{kind: limiterInitial, n: n}
}

// mustCount panics with a retry: message, naming fn, when the count n is
// less than 1: the check of LimiterMin, LimiterMax, LimiterInitial,
// BreakerMinCalls and BreakerProbes.
func mustCount(fn string, n int) {
	if n < 1 {
		panic("retry: " + fn + ": count " + strconv.Itoa(n) + " is less than 1")
	}
}

// LimiterMaxWait returns a LimiterOption that sets how long Acquire waits
// for a permit when all are out, before it gives up with ErrLimited
// (default 0: it gives up at once). Waiters are served in order of arrival.
//
// LimiterMaxWait panics if d is negative.
func LimiterMaxWait(d time.Duration) LimiterOption {
	if d < 0 {
		panic("retry: LimiterMaxWait: wait " + d.String() + " is negative")
	}
	return LimiterOption{kind: limiterMaxWait, d: d}
}

// LimiterClock returns a LimiterOption that makes the Limiter read the time
// from c, for the latency of its permits, its update windows and its
// waits; nil means the real clock, which is also the default. Use the same
// FakeClock as the calls' WithClock in tests.
func LimiterClock(c Clock) LimiterOption {
	return LimiterOption{kind: limiterClock, clock: c}
}

// NewLimiter returns a Limiter with a floor of 1, a ceiling of 1000, an
// initial limit of 20, no wait, on the real clock, changed by opts.
//
// NewLimiter panics if LimiterMin is above LimiterMax.
func NewLimiter(opts ...LimiterOption) *Limiter {
	l := &Limiter{minL: 1, maxL: 1000}
	initial := 20
	for _, o := range opts {
		switch o.kind {
		case limiterMin:
			l.minL = o.n
		case limiterMax:
			l.maxL = o.n
		case limiterInitial:
			initial = o.n
		case limiterMaxWait:
			l.maxWait = o.d
		case limiterClock:
			l.clock = o.clock
		}
	}
	if l.minL > l.maxL {
		panic("retry: NewLimiter: LimiterMin " + strconv.Itoa(l.minL) + " is above LimiterMax " + strconv.Itoa(l.maxL))
	}
	initial = min(max(initial, l.minL), l.maxL)
	l.origin = origin(l.clock)
	l.limit.Store(int64(initial))
	l.est.limit = float64(initial)
	l.est.start = l.now(nil)
	return l
}

// WithLimiter returns an Option that makes every attempt of the call hold
// a permit of l while it is in flight (see Limiter). Retry and Do take a
// permit for each attempt, waiting at most l's LimiterMaxWait; an attempt
// that gets none is not made, and the call ends at once with an *Error
// that matches ErrLimited. Hedge takes one for its first attempt in the
// same way; a hedge that finds no permit free is not sent (the call goes
// on with the attempts in flight), and a retry with no attempt in flight
// waits as Retry's do. An attempt's permit is released as a success when
// the dependency answered, a failure when it failed with an error the call
// would retry, and with no sample when the caller's context ended it. A
// later WithLimiter replaces an earlier one.
//
// WithLimiter panics if l is nil.
func WithLimiter(l *Limiter) Option {
	if l == nil {
		panic("retry: WithLimiter: nil Limiter")
	}
	return Option{kind: limiterOption, ref: l}
}

// Limit returns l's limit now: how many permits may be out at once.
func (l *Limiter) Limit() int { return int(l.limit.Load()) }

// InFlight returns how many of l's permits are out now.
func (l *Limiter) InFlight() int { return int(l.inflight.Load()) }

// A Permit is the right to have one attempt in flight, from Acquire or
// TryAcquire. Release it exactly once, with the method that says how the
// attempt ended: the Limiter learns from it. A Permit is a small value;
// copies are the same permit. The zero Permit's methods do nothing.
type Permit struct {
	l     *Limiter
	start time.Duration // on l's clock, since l.origin
}

// Success releases p, counting the time since it was taken as a sample of
// the dependency's latency: the dependency answered, even with an error
// that is not about its load (a 404, a permanent error).
func (p Permit) Success() { p.release(sampleOK) }

// Failure releases p as an overload signal: the attempt failed with an
// error or a timeout that a loaded dependency gives (a 503, a reset, a
// deadline of its own). The limit falls with the share of failures.
func (p Permit) Failure() { p.release(sampleFailed) }

// Drop releases p without a sample: the attempt says nothing about the
// dependency, typically because the caller's context ended it.
func (p Permit) Drop() { p.release(sampleNone) }

// TryAcquire returns a permit if one is free, without waiting.
func (l *Limiter) TryAcquire() (Permit, bool) { return l.tryAcquire(nil) }

// tryAcquire is TryAcquire, reading the real clock through rd (see
// reading).
func (l *Limiter) tryAcquire(rd *reading) (Permit, bool) {
	if l.take() {
		return Permit{l: l, start: l.now(rd)}, true
	}
	return Permit{}, false
}

// Acquire returns a permit, waiting for one to come free for at most l's
// LimiterMaxWait, on l's clock. If none does, it returns an error that
// matches ErrLimited and carries a RetryAfter pushback (see ErrLimited); if
// ctx ends first, or has ended, it returns context.Cause(ctx). A wait
// allocates; a permit free at once does not.
func (l *Limiter) Acquire(ctx context.Context) (Permit, error) { return l.acquire(ctx, nil) }

// acquire is Acquire, reading the real clock through rd (see reading) for
// a permit free at once.
func (l *Limiter) acquire(ctx context.Context, rd *reading) (Permit, error) {
	if ctx.Err() != nil {
		return Permit{}, context.Cause(ctx)
	}
	if p, ok := l.tryAcquire(rd); ok {
		return p, nil
	}
	if l.maxWait <= 0 {
		return Permit{}, l.refusal()
	}
	return l.await(ctx)
}

// take takes a permit if one is free.
func (l *Limiter) take() bool {
	for {
		n := l.inflight.Load()
		if n >= l.limit.Load() {
			return false
		}
		if l.inflight.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// now returns the time on l's clock since l.origin: on the real clock,
// rd's reading if it has one (see reading; the Limiter is the last to read
// it, so it does not fill it).
func (l *Limiter) now(rd *reading) time.Duration {
	switch {
	case l.clock != nil:
		return l.clock.Now().Sub(l.origin)
	case rd != nil && rd.ok:
		return rd.d
	}
	return time.Since(monoBase)
}

// refusal is the error of an attempt that got no permit.
//
//go:noinline
func (l *Limiter) refusal() error {
	return &pushbackError{err: ErrLimited, delay: time.Duration(l.hint.Load())}
}

// sampleKind is how an attempt that held a permit ended.
type sampleKind uint8

const (
	sampleNone sampleKind = iota
	sampleOK
	sampleFailed
)

// release records p's sample of kind k, then frees p's permit.
func (p Permit) release(k sampleKind) {
	l := p.l
	if l == nil {
		return
	}
	if k != sampleNone {
		now := l.now(nil)
		inflight := int(l.inflight.Load())
		l.mu.Lock()
		next := l.est.add(now, now-p.start, inflight, k == sampleFailed, l)
		l.mu.Unlock()
		if next >= 0 && next > l.limit.Swap(next) && l.waiting.Load() > 0 {
			l.grant()
		}
	}
	l.free()
}

// free gives a permit back: to the oldest waiter if any, else to the pool.
// The order (give back, then look for waiters) pairs with await's (count
// itself waiting, then try to take): either the waiter's take sees the
// freed permit, or free sees the waiter.
func (l *Limiter) free() {
	if l.inflight.Add(-1) < 0 {
		panic("retry: Permit released more than once")
	}
	if l.waiting.Load() > 0 {
		l.grant()
	}
}

// limitWaiter is one Acquire waiting for a permit; granted and ch are
// guarded by l.mu (ch is closed on grant).
type limitWaiter struct {
	ch      chan struct{}
	granted bool
}

// grant hands free permits to waiters, oldest first.
func (l *Limiter) grant() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.queue) > 0 && l.take() {
		w := l.queue[0]
		l.queue[0] = nil
		l.queue = l.queue[1:]
		w.granted = true
		l.waiting.Add(-1)
		close(w.ch)
	}
}

// await is Acquire's wait for a permit.
func (l *Limiter) await(ctx context.Context) (Permit, error) {
	w := &limitWaiter{ch: make(chan struct{})}
	l.mu.Lock()
	l.waiting.Add(1)
	if l.take() {
		l.waiting.Add(-1)
		l.mu.Unlock()
		return Permit{l: l, start: l.now(nil)}, nil
	}
	l.queue = append(l.queue, w)
	l.mu.Unlock()

	// The wait's end: a timer on the real clock, or a goroutine sleeping
	// on l's clock (which has only Sleep to wait with).
	var timer <-chan time.Time
	var slept <-chan struct{}
	if l.clock == nil {
		t := time.NewTimer(l.maxWait)
		defer t.Stop()
		timer = t.C
	} else {
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		c := make(chan struct{})
		go func() {
			if l.clock.Sleep(sctx, l.maxWait) == nil {
				close(c)
			}
		}()
		slept = c
	}
	var err error
	select {
	case <-w.ch:
		return Permit{l: l, start: l.now(nil)}, nil
	case <-timer:
		err = l.refusal()
	case <-slept:
		err = l.refusal()
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	l.mu.Lock()
	if w.granted {
		// Granted as the wait ended: a permit now out, given back unused.
		l.mu.Unlock()
		l.free()
		return Permit{}, err
	}
	for i, q := range l.queue {
		if q == w {
			l.queue = append(l.queue[:i], l.queue[i+1:]...)
			break
		}
	}
	l.waiting.Add(-1)
	l.mu.Unlock()
	return Permit{}, err
}
