package retryserver

import "github.com/seed-b8c8f69d/retry"

// A waiter is a request waiting in a Shedder's queue. Whoever takes it out
// of the queue (dispatch, an eviction) sends its outcome on ch, once: true
// for a slot, false for a refusal, which is then in refusal. The waiter
// itself may leave the queue (timeout, context), and then nothing is sent.
type waiter struct {
	ch      chan bool    // buffered: the sender never blocks
	refusal *Refusal     // set before false is sent
	permit  retry.Permit // set before true is sent: the Limiter's, if any
}

// A queue holds waiters oldest first. It is short (QueueLimit), so removing
// one from its middle by a linear search is cheap.
type queue struct{ w []*waiter }

func (q *queue) len() int { return len(q.w) }

func (q *queue) push(w *waiter) { q.w = append(q.w, w) }

// popOldest removes and returns the oldest waiter; q is not empty.
func (q *queue) popOldest() *waiter {
	w := q.w[0]
	q.w[0] = nil
	q.w = q.w[1:]
	return w
}

// popNewest removes and returns the newest waiter; q is not empty.
func (q *queue) popNewest() *waiter {
	n := len(q.w) - 1
	w := q.w[n]
	q.w[n] = nil
	q.w = q.w[:n]
	return w
}

// remove removes w and reports whether it was there.
func (q *queue) remove(w *waiter) bool {
	for i, x := range q.w {
		if x == w {
			n := copy(q.w[i:], q.w[i+1:])
			q.w[i+n] = nil
			q.w = q.w[:i+n]
			return true
		}
	}
	return false
}
