package retryhttp

import (
	"sync"
	"sync/atomic"
)

// PerHostLimit is the number of hosts a PerHost function keeps a value for
// at most.
const PerHostLimit = 1024

// PerHost returns a function for Transport.Throttle, Transport.Breaker or
// Transport.Limiter that returns, for each host, the value newValue(host)
// made the first time that host was asked for: one per host, made when
// first needed, so that newValue can label its logs and metrics with the
// host.
//
//	t.Breaker = retryhttp.PerHost(func(host string) *retry.Breaker { return retry.NewBreaker() })
//
// The function is safe for concurrent use, and makes one value per host
// even when several requests ask for a new host at once: newValue runs
// once for it, under a lock that the others wait on (so newValue must not
// call the function it was given to). Hosts may come from untrusted input,
// so it keeps at most PerHostLimit of them: asked for a new host when full,
// it first drops one not asked for again since it was made or since the
// last time one was dropped, so that a flood of hosts asked for once each
// drops its own hosts, not those in use. A dropped host that is asked for
// again gets a fresh value, whose counts start afresh. A panic in
// newValue propagates to the caller, and the host gets no value.
//
// PerHost panics if newValue is nil.
func PerHost[T any](newValue func(host string) *T) func(host string) *T {
	if newValue == nil {
		panic("retryhttp: PerHost: nil function")
	}
	p := &perHost[T]{newValue: newValue, limit: PerHostLimit}
	return p.get
}

// perHost is a PerHost function's state.
type perHost[T any] struct {
	newValue func(string) *T
	limit    int
	m        sync.Map // host → *hostValue[T]; read without a lock

	mu sync.Mutex // guards adding and dropping hosts, and n
	n  int        // hosts in m
}

// hostValue is a host's value, and whether it was asked for again since it
// was made or since the last sweep for a host to drop.
type hostValue[T any] struct {
	v    *T
	used atomic.Bool
}

func (p *perHost[T]) get(host string) *T {
	if e, ok := p.m.Load(host); ok {
		return p.use(e.(*hostValue[T]))
	}
	return p.add(host)
}

// use marks e as asked for and returns its value. A host already marked
// costs a read: a busy host writes nothing shared.
func (p *perHost[T]) use(e *hostValue[T]) *T {
	if !e.used.Load() {
		e.used.Store(true)
	}
	return e.v
}

// add makes host's value, unless another request did meanwhile.
func (p *perHost[T]) add(host string) *T {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.m.Load(host); ok {
		return p.use(e.(*hostValue[T]))
	}
	if p.n >= p.limit {
		p.drop()
	}
	v := p.newValue(host)
	p.m.Store(host, &hostValue[T]{v: v}) // unmarked: a host asked for once goes first
	p.n++
	return v
}

// drop removes one host not asked for since the last sweep, clearing the
// marks of those that were as it goes (the clock algorithm's second
// chance). Requests that keep marking hosts during the sweep cannot make it
// fail: after two rounds it drops the next host it meets. The caller holds
// p.mu.
func (p *perHost[T]) drop() {
	for round := 0; ; round++ {
		dropped := false
		p.m.Range(func(k, v any) bool {
			if e := v.(*hostValue[T]); round < 2 && e.used.Load() {
				e.used.Store(false)
				return true
			}
			p.m.Delete(k)
			p.n--
			dropped = true
			return false
		})
		if dropped || p.n == 0 {
			return
		}
	}
}
