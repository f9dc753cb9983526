package retrygrpc

import "sync"

// perTarget keeps the value that newValue returned for each target, made the
// first time the target is asked for. One is made by each Throttle, Breaker
// or Limiter Option and shared by every interceptor built from it, so that
// one Option means one value per target. It is safe for
// concurrent use.
type perTarget[T any] struct {
	newValue func(target string) *T

	mu sync.Mutex // serialises newValue, so that it runs once per target
	m  sync.Map   // target → *T, possibly nil
}

// get returns target's value, calling newValue on the target's first call.
func (p *perTarget[T]) get(target string) *T {
	if v, ok := p.m.Load(target); ok {
		return v.(*T)
	}
	p.mu.Lock()
	defer p.mu.Unlock() // deferred: newValue may panic
	if v, ok := p.m.Load(target); ok {
		return v.(*T)
	}
	v := p.newValue(target)
	p.m.Store(target, v)
	return v
}
