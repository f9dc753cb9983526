package retryserver

import (
	"errors"
	"strconv"
	"time"
)

// ErrOverloaded matches (errors.Is) every *Refusal.
var ErrOverloaded = errors.New("retryserver: overloaded")

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

// refusal counts a refusal at at and returns it, with its pushback. s.mu
// is held.
func (s *Shedder) refusal(at time.Duration) *Refusal {
	s.stats.Refused++
	return &Refusal{Pushback: s.rules.Refuse(at, s.firsts.len()+s.retries.len(), s.slots(), s.jitter())}
}
