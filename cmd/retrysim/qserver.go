package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// The queueing server of the simulations: a queue in front of a number of
// workers, on a sim's clock. metastable runs retry storms against it;
// the limiter (client side) and server-side shedding build on it.
//
// # The model
//
// A request that arrives is first checked against the queue's limit (if
// any) and the policy's admit hook; a request refused there is answered at
// once (a 503) and costs a worker refusalCost × the mean service time, work
// that the workers do before any queued request. An admitted request draws
// its service time (exponential or constant, of the given mean) and joins
// the queue; a free worker takes the oldest queued request (FIFO) or the
// newest (LIFO), as the policy's lifo hook says, and asks the policy's
// serve hook whether to serve it: a request dropped there is answered as
// refused and costs the refusal. Served requests take their service time
// divided by the server's speed at the moment they start (setSpeed models
// a capacity dip). The server does not know that a client has given up: it
// serves a request whose client timed out all the same (wasted work),
// unless a policy sheds it.
//
// # The API, for a simulation that uses it
//
//	q := newQServer(s, qserverConfig{workers: 1, service: 100 * time.Millisecond, src: pcg(seed, stream)}, nil)
//	ans := q.call(c, qrequest{attempt: n, timeout: 500 * time.Millisecond})
//
// call runs in a client's body (see sim.go): it sends one request and parks
// the client until the answer (qServed, qRefused) or the client's timeout
// (qTimeout), whichever comes first, in simulated time. Around it, a
// client runs its real retry.Do: the attempt function calls q.call and
// turns the answer into an error. A client-side limiter sits in front of
// call in that function: take a permit, call, then release it as a success
// (qServed) or a failure (qTimeout, qRefused), or refuse the attempt
// locally without calling. submit sends a request that nobody waits for
// (load generators, the M/M/c tests).
//
// Server-side shedding is a qpolicy (nil means qFIFO or qLIFO by the
// config's lifo): admit refuses at arrival (a queue limit, retries shed
// first: a qjob carries its attempt number and its client's deadline as a
// request would carry them in headers), lifo picks the queue's end for
// each dequeue (adaptive LIFO), serve drops a request a worker is about to
// start (CoDel reads now − j.arrived, its sojourn time). The hooks read the
// server through its accessors (now, queueLen, oldest, newest, idle, cfg)
// and must not change it, except that admit and serve may set j.pushback
// on a request they refuse, for the client to read after call returns
// qRefused (call's caller keeps j: use callJob). j.abandoned tells whether
// the client has given up: a policy that reads it models cancellation
// reaching the server.
//
// stats counts what happened: totals since startStats, and series per
// second (bucket) of simulated time from 0, for charts.
//
// In metastable (metastable.go), a strategy is an msStrategy: what each
// process adds to its retry.Do is its options (a WithLimiter goes there as
// WithBudget does), and what the server does is the qpolicy msRun gives
// newQServer (nil: FIFO or LIFO by -discipline, nothing shed).
//
// A qserver belongs to one sim and, like it, is not safe for concurrent
// use.

// qanswer is what a client learns of one request.
type qanswer uint8

const (
	qPending qanswer = iota // not answered yet
	qServed                 // served: a success
	qRefused                // refused at arrival or dropped from the queue: a fast failure
	qTimeout                // the client gave up waiting (the server may still serve it)
)

func (a qanswer) String() string {
	switch a {
	case qPending:
		return "pending"
	case qServed:
		return "served"
	case qRefused:
		return "refused"
	case qTimeout:
		return "timeout"
	}
	return fmt.Sprintf("qanswer(%d)", uint8(a))
}

// qdist is a service-time distribution.
type qdist uint8

const (
	qExp   qdist = iota // exponential: M/M/c
	qConst              // constant: M/D/c
)

// qserverConfig is the server's parameters. capacity = workers / service.
type qserverConfig struct {
	workers     int           // at least 1
	service     time.Duration // mean service time, positive
	dist        qdist
	lifo        bool        // the discipline of the default policy: newest first
	queueLimit  int         // requests the queue holds at most (not counting those in service); 0: no limit
	refusalCost float64     // a refusal costs a worker this fraction of service, in [0, 1]
	src         rand.Source // of the service times
}

// capacity returns the requests per second the server serves at full
// speed.
func (cfg *qserverConfig) capacity() float64 {
	return float64(cfg.workers) / cfg.service.Seconds()
}

func (cfg *qserverConfig) check() {
	switch {
	case cfg.workers < 1:
		panic(fmt.Sprintf("retrysim: qserver: %d workers", cfg.workers))
	case cfg.service <= 0:
		panic("retrysim: qserver: service time " + cfg.service.String() + " is not positive")
	case cfg.queueLimit < 0:
		panic(fmt.Sprintf("retrysim: qserver: queue limit %d is negative", cfg.queueLimit))
	case !(cfg.refusalCost >= 0 && cfg.refusalCost <= 1):
		panic(fmt.Sprintf("retrysim: qserver: refusal cost %v is outside [0, 1]", cfg.refusalCost))
	case cfg.src == nil:
		panic("retrysim: qserver: nil source")
	}
}

// qrequest is what a client sends with call.
type qrequest struct {
	attempt int           // 1 for a first try, 2 for the first retry, …
	timeout time.Duration // the client waits this long at most; 0 for ever
}

// qjob is one request at the server. Policies read its fields; only the
// server writes them.
type qjob struct {
	arrived   time.Duration // when it reached the server
	started   time.Duration // when a worker took it; -1 before
	ends      time.Duration // when its service ends, once started
	service   time.Duration // the work it needs at full speed, drawn when admitted
	attempt   int           // the client's attempt number (1: first try); 0 if not known
	deadline  time.Duration // when its client gives up; 0 for never
	abandoned bool          // its client gave up waiting: serving it is wasted work
	pushback  time.Duration // set by a policy that refuses or drops j: the wait it asks of the client (Retry-After); 0 for none
	answer    qanswer
	waiter    *client  // the client parked in call, if any
	q         *qserver // the server, once it arrived
}

// qpolicy decides what the server admits, in which order it serves and
// what it drops; see the comment at the top of this file. Embed qFIFO (or
// qLIFO) to override one hook only.
type qpolicy interface {
	admit(q *qserver, j *qjob) bool // at arrival: false refuses j
	lifo(q *qserver) bool           // at each dequeue: take the newest rather than the oldest
	serve(q *qserver, j *qjob) bool // when a worker takes j: false drops it (refused)
}

// qFIFO admits and serves everything, oldest first.
type qFIFO struct{}

func (qFIFO) admit(*qserver, *qjob) bool { return true }
func (qFIFO) lifo(*qserver) bool         { return false }
func (qFIFO) serve(*qserver, *qjob) bool { return true }

// qLIFO admits and serves everything, newest first.
type qLIFO struct{ qFIFO }

func (qLIFO) lifo(*qserver) bool { return true }

// qserver is the server; see the comment at the top of this file.
type qserver struct {
	s      *sim
	cfg    qserverConfig
	policy qpolicy
	rng    *rand.Rand

	queue   qdeque
	idleN   int           // workers free
	chores  int           // refusals whose work no worker has done yet
	serving []*qjob       // requests in service
	speed   float64       // of the workers, 1 at full capacity
	refusal time.Duration // the work of one refusal
	last    time.Duration // when the queue length last changed, for its integral

	stats qstats
}

// qstats counts what the server did. The totals cover the time since
// startStats (0 until called); the series are per bucket of simulated time
// from 0.
type qstats struct {
	from     time.Duration // when the totals started
	arrived  int           // requests that reached the server
	refused  int           // refused at arrival (queue limit or admit)
	dropped  int           // dropped from the queue by serve
	served   int           // served to a client still waiting (or to nobody, for submit)
	wasted   int           // served after the client gave up
	started  int           // requests a worker took
	waitSum  time.Duration // their time in the queue, in all
	queueInt float64       // ∫ queue length dt, in request·seconds
	busy     time.Duration // worker time on requests and refusals
	waste    time.Duration // of which on requests whose client had given up
	refWork  time.Duration // of which on refusals

	// Per bucket from t=0.
	arrivedPer []int
	servedPer  []int     // served to a waiting client
	wastedPer  []int     // served after the client gave up
	refusedPer []int     // refused or dropped
	queuePer   []float64 // ∫ queue length dt over the bucket, in request·seconds: its mean length
}

// newQServer returns a server on s's clock, idle and empty. A nil policy
// is qFIFO, or qLIFO if cfg.lifo. It panics on a bad cfg.
func newQServer(s *sim, cfg qserverConfig, policy qpolicy) *qserver {
	cfg.check()
	if policy == nil {
		policy = qFIFO{}
		if cfg.lifo {
			policy = qLIFO{}
		}
	}
	q := &qserver{
		s: s, cfg: cfg, policy: policy, rng: rand.New(cfg.src),
		idleN: cfg.workers, speed: 1,
		refusal: time.Duration(cfg.refusalCost * float64(cfg.service)),
		last:    s.now,
	}
	q.stats.from = s.now
	return q
}

// Accessors for the policies.

func (q *qserver) now() time.Duration { return q.s.now }
func (q *qserver) queueLen() int      { return q.queue.len() }
func (q *qserver) idle() int          { return q.idleN }

// oldest and newest return the request at either end of the queue, nil if
// it is empty.
func (q *qserver) oldest() *qjob { return q.queue.front() }
func (q *qserver) newest() *qjob { return q.queue.back() }

// call sends one request from client c and parks c until the answer or its
// timeout, whichever comes first; it must be called from c's body. A
// request refused at arrival returns qRefused without waiting.
func (q *qserver) call(c *client, r qrequest) qanswer {
	return q.callJob(c, r).answer
}

// callJob is call, returning the request itself, for the caller to read
// what the server set on it (its pushback, its timings).
func (q *qserver) callJob(c *client, r qrequest) *qjob {
	j := &qjob{attempt: r.attempt, waiter: c, q: q}
	if r.timeout > 0 {
		j.deadline = addSat(q.s.now, r.timeout)
	}
	q.submit(j)
	if j.answer != qPending {
		return j
	}
	if r.timeout > 0 {
		q.s.event(j.deadline, (*qjobTimeout)(j))
	}
	c.park()
	return j
}

// qjobTimeout is the event of a request's client giving up; qjobDone that
// of a worker finishing it; qchoreDone that of a worker finishing a
// refusal. They are the request or the server under another type, so that
// scheduling them allocates nothing.
type (
	qjobTimeout qjob
	qjobDone    qjob
	qchoreDone  qserver
)

func (e *qjobTimeout) fire() {
	j := (*qjob)(e)
	if j.answer == qPending {
		j.answer, j.abandoned = qTimeout, true
		j.q.s.resume(j.waiter)
	}
}

func (e *qjobDone) fire() { (*qjob)(e).q.finish((*qjob)(e)) }

func (e *qchoreDone) fire() {
	q := (*qserver)(e)
	q.idleN++
	q.dispatch()
}

// submit makes j arrive now. j's attempt, deadline and waiter are the
// caller's to set; the rest is the server's. A caller other than call
// leaves waiter nil and reads j.answer when it wants.
func (q *qserver) submit(j *qjob) {
	now := q.s.now
	j.arrived, j.started, j.answer, j.q = now, -1, qPending, q
	q.stats.arrived++
	q.stats.arrivedPer = bump(q.stats.arrivedPer, now)
	if q.cfg.queueLimit > 0 && q.queue.len() >= q.cfg.queueLimit || !q.policy.admit(q, j) {
		q.stats.refused++
		q.refuse(j)
		q.dispatch()
		return
	}
	j.service = q.draw()
	q.changeQueue(func() { q.queue.pushBack(j) })
	q.dispatch()
}

// refuse answers j as refused and leaves its refusal to the workers.
func (q *qserver) refuse(j *qjob) {
	q.stats.refusedPer = bump(q.stats.refusedPer, q.s.now)
	if q.refusal > 0 {
		q.chores++
	}
	q.answer(j, qRefused)
}

// answer gives j its answer and wakes its client, unless the client has
// already given up.
func (q *qserver) answer(j *qjob, a qanswer) {
	if j.answer != qPending {
		return
	}
	j.answer = a
	if j.waiter != nil {
		q.s.resume(j.waiter)
	}
}

// draw returns a service time at full speed.
func (q *qserver) draw() time.Duration {
	switch q.cfg.dist {
	case qConst:
		return q.cfg.service
	default:
		return time.Duration(q.rng.ExpFloat64() * float64(q.cfg.service))
	}
}

// dispatch gives work to the free workers: refusals first, then queued
// requests in the policy's order.
func (q *qserver) dispatch() {
	for q.idleN > 0 {
		if q.chores > 0 {
			q.chores--
			q.work(q.refusal, nil)
			continue
		}
		if q.queue.len() == 0 {
			return
		}
		var j *qjob
		q.changeQueue(func() {
			if q.policy.lifo(q) {
				j = q.queue.popBack()
			} else {
				j = q.queue.popFront()
			}
		})
		if !q.policy.serve(q, j) {
			q.stats.dropped++
			q.refuse(j)
			continue
		}
		j.started = q.s.now
		q.stats.started++
		q.stats.waitSum += j.started - j.arrived
		q.serving = append(q.serving, j)
		q.work(time.Duration(float64(j.service)/q.speed), j)
	}
}

// work occupies one worker for d, on request j or, if j is nil, on a
// refusal.
func (q *qserver) work(d time.Duration, j *qjob) {
	q.idleN--
	q.stats.busy += d
	end := addSat(q.s.now, d)
	if j == nil {
		q.stats.refWork += d
		q.s.event(end, (*qchoreDone)(q))
		return
	}
	j.ends = end
	q.s.event(end, (*qjobDone)(j))
}

// finish frees j's worker and answers j, unless its client gave up.
func (q *qserver) finish(j *qjob) {
	q.idleN++
	i := slices.Index(q.serving, j)
	q.serving[i] = q.serving[len(q.serving)-1]
	q.serving = q.serving[:len(q.serving)-1]
	if j.abandoned {
		q.stats.wasted++
		q.stats.waste += j.ends - j.started
		q.stats.wastedPer = bump(q.stats.wastedPer, q.s.now)
	} else {
		q.stats.served++
		q.stats.servedPer = bump(q.stats.servedPer, q.s.now)
		q.answer(j, qServed)
	}
	q.dispatch()
}

// setSpeed sets the speed of the workers for the requests that start from
// now on: f < 1 is a capacity dip to f of the capacity, 1 the full
// capacity. Requests in service keep their pace. It panics unless f > 0.
func (q *qserver) setSpeed(f float64) {
	if !(f > 0) || math.IsInf(f, 0) {
		panic(fmt.Sprintf("retrysim: qserver: speed %v", f))
	}
	q.speed = f
}

// backlog returns the work standing at the server now, at its current
// speed: the queued requests, the rest of those in service and the
// refusals not yet done, in worker time. backlog / workers is the time
// the server needs to work it off with nothing new arriving (exactly, with
// one worker; a lower bound otherwise).
func (q *qserver) backlog() time.Duration {
	var w float64
	for i := range q.queue.len() {
		w += float64(q.queue.at(i).service) / q.speed
	}
	var rest time.Duration
	for _, j := range q.serving {
		rest += max(j.ends-q.s.now, 0)
	}
	return time.Duration(w) + rest + time.Duration(q.chores)*q.refusal
}

// startStats zeroes the totals of stats from now on; the series stay.
func (q *qserver) startStats() {
	per := q.stats
	q.stats = qstats{
		from: q.s.now, arrivedPer: per.arrivedPer, servedPer: per.servedPer, wastedPer: per.wastedPer,
		refusedPer: per.refusedPer, queuePer: per.queuePer,
	}
	q.last = q.s.now
}

// changeQueue integrates the queue's length up to now, then runs change.
func (q *qserver) changeQueue(change func()) {
	now := q.s.now
	if n := float64(q.queue.len()); n > 0 && now > q.last {
		q.stats.queueInt += n * (now - q.last).Seconds()
		// Split the interval at the buckets' edges.
		for t := q.last; t < now; {
			k := int(t / bucket)
			edge := min(time.Duration(k+1)*bucket, now)
			for len(q.stats.queuePer) <= k {
				q.stats.queuePer = append(q.stats.queuePer, 0)
			}
			q.stats.queuePer[k] += n * (edge - t).Seconds()
			t = edge
		}
	}
	q.last = now
	change()
}

// bump counts one event at time t in the series s.
func bump(s []int, t time.Duration) []int {
	k := int(t / bucket)
	s = grow(s, k)
	s[k]++
	return s
}

// qdeque is a double-ended queue of requests in a ring buffer.
type qdeque struct {
	buf  []*qjob
	head int
	n    int
}

func (d *qdeque) len() int { return d.n }

func (d *qdeque) at(i int) *qjob { return d.buf[(d.head+i)%len(d.buf)] }

func (d *qdeque) front() *qjob {
	if d.n == 0 {
		return nil
	}
	return d.buf[d.head]
}

func (d *qdeque) back() *qjob {
	if d.n == 0 {
		return nil
	}
	return d.at(d.n - 1)
}

func (d *qdeque) pushBack(j *qjob) {
	if d.n == len(d.buf) {
		buf := make([]*qjob, max(2*len(d.buf), 16))
		for i := range d.n {
			buf[i] = d.at(i)
		}
		d.buf, d.head = buf, 0
	}
	d.buf[(d.head+d.n)%len(d.buf)] = j
	d.n++
}

func (d *qdeque) popFront() *qjob {
	j := d.buf[d.head]
	d.buf[d.head] = nil
	d.head = (d.head + 1) % len(d.buf)
	d.n--
	return j
}

func (d *qdeque) popBack() *qjob {
	i := (d.head + d.n - 1) % len(d.buf)
	j := d.buf[i]
	d.buf[i] = nil
	d.n--
	return j
}
