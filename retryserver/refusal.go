package retryserver

import (
	"errors"
	"strconv"
	"time"
)

// ErrOverloaded matches (errors.Is) every *Refusal.
var ErrOverloaded = errors.New("retryserver: overloaded")

// maxPushback bounds the pushback a Shedder sends: the client's own default
// bound (retry.MaxPushback), beyond which a longer wait would be cut anyway.
const maxPushback = time.Minute

// A Refusal is the error of a request that a Shedder refused: send the
// client its Pushback (retryhttp and retrygrpc do).
type Refusal struct {
	// Pushback is the wait after which the client should try again: the
	// queue's drain time, jittered, at least 1 ms and at most a minute. A
	// negative Pushback asks the client not to retry (gRFC A6): the Shedder
	// is shedding hard.
	Pushback time.Duration
}

func (r *Refusal) Error() string {
	if r.Pushback < 0 {
		return "retryserver: overloaded; do not retry"
	}
	return "retryserver: overloaded; retry after " + strconv.FormatInt(r.Pushback.Milliseconds(), 10) + "ms"
}

// Is reports whether target is ErrOverloaded.
func (r *Refusal) Is(target error) bool { return target == ErrOverloaded }

// refusal counts a refusal and returns it, with its pushback. s.mu is held.
func (s *Shedder) refusal(now time.Time) *Refusal {
	s.tick(now)
	s.shed++
	s.stats.Refused++
	if s.hard {
		return &Refusal{Pushback: -1}
	}
	return &Refusal{Pushback: s.pushback()}
}

// pushback returns the time the queue needs to drain, plus one request (the
// refused one, when it comes back), at the rate the Shedder serves, drawn
// uniformly between that and twice that. Before the first service time is
// known, it counts Target per request. s.mu is held.
func (s *Shedder) pushback() time.Duration {
	per := s.service
	if per <= 0 {
		per = s.target
	}
	n := s.firsts.len() + s.retries.len() + 1
	d := maxPushback
	if per < maxPushback/time.Duration(n) { // per·n cannot overflow
		d = min(per*time.Duration(n)/time.Duration(s.slots()), maxPushback)
	}
	d += time.Duration(float64(d) * s.jitter())
	return min(max(d, time.Millisecond), maxPushback)
}

// tick starts a new window when the current one is an Interval old, judging
// from the one that ends whether the Shedder is shedding hard. A window with
// no arrival (or a gap of more than one) clears it. s.mu is held.
func (s *Shedder) tick(now time.Time) {
	el := now.Sub(s.winStart)
	if el < s.interval {
		return
	}
	s.hard = el < 2*s.interval && s.arrivals > 0 && 2*s.shed >= s.arrivals
	s.winStart, s.arrivals, s.shed = now, 0, 0
}
