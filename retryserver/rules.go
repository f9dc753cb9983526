package retryserver

import "time"

// maxRefusalPushback bounds every pushback: the client's own default bound
// (retry.MaxPushback's default), beyond which a client would give up
// (retry.ErrPushbackTooLong) rather than wait.
const maxRefusalPushback = time.Minute

// Rules is the state of a Shedder's rules for one queue, with no clock and
// no goroutine: when the queue stands, how long a request may wait in it,
// which request is refused, and the pushback of a refusal. A Shedder
// applies them on the real clock; retrysim's server strategies apply them on
// simulated time, so that the simulator judges the very rules the
// middleware runs. Another admission layer (a framework this package does
// not wrap) may apply them too. Times are durations since an origin of the
// caller's choosing. A Rules is not safe for concurrent use: the Shedder
// holds its lock around every call. The zero Rules is not usable: make one
// with NewRules.
type Rules struct {
	target, interval time.Duration
	queueLimit       int

	lastEmpty time.Duration // when the queue was last empty
	service   time.Duration // moving average of the service time; 0 before the first sample
	winStart  time.Duration // start of the current window of an Interval
	arrivals  int           // requests that asked for admission in the window
	shed      int           // refusals in the window
	hard      bool          // the last full window refused at least half its arrivals
}

// NewRules returns the Rules of a queue that holds at most queueLimit requests,
// with CoDel's target and interval, starting at time 0.
func NewRules(target, interval time.Duration, queueLimit int) Rules {
	return Rules{target: target, interval: interval, queueLimit: queueLimit}
}

// Target returns the target delay.
func (r *Rules) Target() time.Duration { return r.target }

// Arrive counts a request asking for admission at now.
func (r *Rules) Arrive(now time.Duration) {
	r.tick(now)
	r.arrivals++
}

// Emptied records that the queue is empty at now: call it whenever the
// queue becomes empty, and when a request joins an empty queue.
func (r *Rules) Emptied(now time.Duration) { r.lastEmpty = now }

// Standing reports whether a queue of queued requests has stayed non-empty
// for at least an Interval: the mark of overload, which makes the queue
// serve newest first and wait Target at most.
func (r *Rules) Standing(now time.Duration, queued int) bool {
	return queued > 0 && now-r.lastEmpty >= r.interval
}

// A Verdict is what happens to a request that finds no free slot.
type Verdict uint8

// The verdicts Decide returns.
const (
	VerdictQueue      Verdict = iota // it waits in the queue
	VerdictRefuse                    // it is refused at once
	VerdictEvictRetry                // it waits, and the oldest queued retry is refused to make room
)

// Decide returns the verdict for a request that finds no free slot at now,
// with queued requests waiting, retries of them retries; retry says that
// the request is one. Retries shed first: a retry is refused at once while
// the queue stands, and in a full queue a first attempt takes the place of
// the oldest retry.
func (r *Rules) Decide(now time.Duration, queued, retries int, retry bool) Verdict {
	switch {
	case retry && r.Standing(now, queued):
		return VerdictRefuse
	case queued < r.queueLimit:
		return VerdictQueue
	case retry || retries == 0:
		return VerdictRefuse
	}
	return VerdictEvictRetry
}

// MaxWait returns how long a request that joins a queue of queued
// requests at now may wait: Interval, or Target if the queue stands.
func (r *Rules) MaxWait(now time.Duration, queued int) time.Duration {
	if r.Standing(now, queued) {
		return r.target
	}
	return r.interval
}

// Served records a request's service time, for the drain time.
func (r *Rules) Served(d time.Duration) {
	d = max(d, 0)
	if r.service == 0 {
		r.service = d
		return
	}
	r.service += (d - r.service) / 8 // an exponential moving average, weight 1/8
}

// Refuse counts a refusal at now and returns its pushback: -1 ("do not
// retry") when the last full window refused at least half its arrivals;
// otherwise the time that queued requests plus the refused one take to be
// served slots at a time, at the average service time (Target each before
// the first sample), stretched by 1+jitter (jitter in [0, 1)), at least
// 1 ms and at most maxRefusalPushback.
func (r *Rules) Refuse(now time.Duration, queued, slots int, jitter float64) time.Duration {
	r.tick(now)
	r.shed++
	if r.hard {
		return -1
	}
	per := r.service
	if per <= 0 {
		per = r.target
	}
	n := time.Duration(queued + 1)
	d := maxRefusalPushback
	if per < maxRefusalPushback/n { // per·n cannot overflow
		d = min(per*n/time.Duration(max(slots, 1)), maxRefusalPushback)
	}
	d += time.Duration(float64(d) * jitter)
	return min(max(d, time.Millisecond), maxRefusalPushback)
}

// tick starts a new window when the current one is an Interval old,
// judging from the one that ends whether the queue is shedding hard. A gap
// of more than one window clears it.
func (r *Rules) tick(now time.Duration) {
	el := now - r.winStart
	if el < r.interval {
		return
	}
	r.hard = el < 2*r.interval && r.arrivals > 0 && 2*r.shed >= r.arrivals
	r.winStart, r.arrivals, r.shed = now, 0, 0
}
