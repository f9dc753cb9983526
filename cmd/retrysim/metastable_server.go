package main

import (
	"math/rand/v2"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryserver"
)

// The server's half in the metastable model: the strategies server (naive
// clients in front of a server that sheds) and server+recommended (the
// recommended client policy in front of it). The server runs the rules of
// retryserver.Shedder, (retryserver.Rules), the very code the middleware
// runs, on simulated time, with the Shedder's options (-shed-target,
// -shed-interval, -shed-queue-limit; the Shedder's defaults unless given)
// and its concurrency fixed at the model's workers; the
// clients honour the pushback of a refusal as this library's clients
// honour Retry-After and grpc-retry-pushback-ms: through retry.RetryAfter,
// a negative one ending the retries.
//
// Where the model differs from the middleware, the difference is the
// qserver's, which has one queue and answers only through its hooks:
//
//   - A request whose wait in the queue has run out is refused when a
//     worker reaches it, not the instant it runs out. Its client learns
//     later (or gives up first); the server's work is the same refusal.
//   - A first attempt that finds the queue full takes the place of the
//     oldest queued retry (retryserver.VerdictEvictRetry) in the same way: the retry is
//     refused when a worker reaches it.
//   - Freed workers take the queue's newest or oldest request, first
//     attempts and retries alike: the Shedder's preference of first
//     attempts over queued retries at dispatch is not modelled.
//   - The moving average of service times reads each request's service
//     time when it starts rather than when it ends.
//   - A request whose client has given up is dropped unstarted, as the
//     Shedder drops a request whose context has ended (the client's
//     connection closed, or its deadline passed); like any refusal, it costs
//     the server -refusal-cost of a service time.

const (
	msServer            msStrategy = "server"             // naive clients, the server's half
	msServerRecommended msStrategy = "server+recommended" // the recommended clients, the server's half
)

// streamMsShed is the random stream of the shedding server's jitter.
const streamMsShed = 4

// serverPolicy returns the qserver policy of st: the Shedder's rules for
// the server strategies, nil (the config's FIFO or LIFO) for the others.
func (st msStrategy) serverPolicy(cfg *msConfig) qpolicy {
	if st != msServer && st != msServerRecommended {
		return nil
	}
	return &shedPolicy{
		rules:   retryserver.NewRules(cfg.shedTarget, cfg.shedInterval, cfg.shedQueueLimit),
		slots:   cfg.workers,
		rng:     rand.New(pcg(cfg.seed, streamMsShed)),
		expires: map[*qjob]time.Duration{},
		evicted: map[*qjob]bool{},
	}
}

// naiveSchedule reports whether st's clients retry at once (Constant(0)).
func (st msStrategy) naiveSchedule() bool { return st == msNaive || st == msServer }

// refusedError is the error of an attempt that the server refused: with
// the refusal's pushback, if the server gave one.
func refusedError(j *qjob) error {
	if j.pushback != 0 {
		return retry.RetryAfter(errRefused, j.pushback)
	}
	return errRefused
}

// shedPolicy is a qpolicy that runs retryserver.Rules; see the comment at the top
// of this file.
type shedPolicy struct {
	rules   retryserver.Rules
	slots   int
	rng     *rand.Rand
	expires map[*qjob]time.Duration // queued requests: when their wait runs out
	retries []*qjob                 // queued retries, oldest first
	evicted map[*qjob]bool          // queued retries that a first attempt displaced
}

func (p *shedPolicy) admit(q *qserver, j *qjob) bool {
	now := q.now()
	p.rules.Arrive(now)
	queued := q.queueLen() - len(p.evicted) // the evicted are refused already, in effect
	if queued == 0 && q.idle() > 0 {
		return true // served at once
	}
	retry := j.attempt > 1
	switch p.rules.Decide(now, queued, len(p.retries), retry) {
	case retryserver.VerdictRefuse:
		j.pushback = p.refuse(now, queued)
		return false
	case retryserver.VerdictEvictRetry:
		old := p.retries[0]
		p.retries = p.retries[1:]
		p.evicted[old] = true
		old.pushback = p.refuse(now, queued)
		queued--
	}
	p.expires[j] = now + p.rules.MaxWait(now, queued)
	if queued == 0 {
		p.rules.Emptied(now)
	}
	if retry {
		p.retries = append(p.retries, j)
	}
	return true
}

func (p *shedPolicy) lifo(q *qserver) bool {
	return p.rules.Standing(q.now(), q.queueLen()-len(p.evicted))
}

func (p *shedPolicy) serve(q *qserver, j *qjob) bool {
	now := q.now()
	if q.queueLen()-len(p.evicted) <= 0 {
		p.rules.Emptied(now)
	}
	expires, queued := p.expires[j]
	delete(p.expires, j)
	if j.attempt > 1 {
		for i, r := range p.retries {
			if r == j {
				p.retries = append(p.retries[:i], p.retries[i+1:]...)
				break
			}
		}
	}
	switch {
	case p.evicted[j]:
		delete(p.evicted, j) // its pushback was set when it was displaced
		return false
	case j.abandoned:
		return false // its client has gone: not started
	case queued && now > expires:
		j.pushback = p.refuse(now, q.queueLen()-len(p.evicted))
		return false
	}
	p.rules.Served(time.Duration(float64(j.service) / q.speed))
	return true
}

// refuse returns the pushback of a refusal at now with queued requests
// waiting.
func (p *shedPolicy) refuse(now time.Duration, queued int) time.Duration {
	return p.rules.Refuse(now, max(queued, 0), p.slots, p.rng.Float64())
}
