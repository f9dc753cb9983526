package retryserver

import (
	"strconv"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// An Option configures a Shedder; New takes them. Options are made only by
// this package (WithLimiter, Concurrency, Target, Interval, QueueLimit);
// the zero Option does nothing.
type Option struct {
	kind optionKind
	d    time.Duration
	n    int
	lim  *retry.Limiter
}

type optionKind uint8

const (
	noOption optionKind = iota
	concurrencyOption
	targetOption
	intervalOption
	queueLimitOption
	limiterOption
)

// Defaults of the options not given to New.
const (
	// DefaultTarget is the longest wait in a standing queue without
	// Target: 5 ms, as CoDel's and Facebook's servers use.
	DefaultTarget = 5 * time.Millisecond
	// DefaultInterval is the Interval without that option: 100 ms.
	DefaultInterval = 100 * time.Millisecond
	// DefaultQueueLimit is the most requests waiting at once without
	// QueueLimit.
	DefaultQueueLimit = 128
)

// WithLimiter returns an Option that makes l decide how many requests a
// Shedder serves at once: a request is served with a permit of l, taken
// without waiting and released with the request's Ticket (Success, Failure
// or Drop: l learns the server's latency and failures from them). Give the
// Shedder a Limiter of its own: it serves its queue when a Ticket is
// released, so permits released elsewhere would leave the queue waiting.
// Without WithLimiter or Concurrency, a Shedder has its own
// retry.NewLimiter(). A later WithLimiter or Concurrency replaces an
// earlier one.
//
// WithLimiter panics if l is nil.
func WithLimiter(l *retry.Limiter) Option {
	if l == nil {
		panic("retryserver: WithLimiter: nil Limiter")
	}
	return Option{kind: limiterOption, lim: l}
}

// Concurrency returns an Option that fixes the number of requests a
// Shedder serves at once, in place of an adaptive Limiter; the others wait
// in its queue or are refused. Set it to what the server can serve without
// its latency growing: its worker count, or its throughput times its
// unloaded latency. A later Concurrency or WithLimiter replaces an earlier
// one.
//
// Concurrency panics if n is less than 1.
func Concurrency(n int) Option {
	if n < 1 {
		panic("retryserver: Concurrency: n must be at least 1, got " + strconv.Itoa(n))
	}
	return Option{kind: concurrencyOption, n: n}
}

// Target returns an Option that sets the longest a request waits in a
// standing queue (DefaultTarget without it): CoDel's target delay. Keep it
// well under the clients' timeouts. A later Target replaces an earlier one.
//
// Target panics if d is not positive.
func Target(d time.Duration) Option {
	mustPositive("Target", d)
	return Option{kind: targetOption, d: d}
}

// Interval returns an Option that sets CoDel's interval (DefaultInterval
// without it): the longest a request waits in a queue that is not standing,
// the time the queue must stay non-empty to count as standing, and the
// window over which the Shedder judges that it is shedding hard. Make it
// several service times: the defaults suit requests of a few milliseconds;
// for slower ones, scale Target and Interval with the service time
// (docs/SERVER.md). A later Interval replaces an earlier one.
//
// Interval panics if d is not positive.
func Interval(d time.Duration) Option {
	mustPositive("Interval", d)
	return Option{kind: intervalOption, d: d}
}

// QueueLimit returns an Option that sets the most requests waiting at once
// (DefaultQueueLimit without it); 0 means no queue: a request that finds
// every slot taken is refused at once. CoDel bounds the wait, this bounds
// the memory. A later QueueLimit replaces an earlier one.
//
// QueueLimit panics if n is negative.
func QueueLimit(n int) Option {
	if n < 0 {
		panic("retryserver: QueueLimit: negative n " + strconv.Itoa(n))
	}
	return Option{kind: queueLimitOption, n: n}
}

func mustPositive(fn string, d time.Duration) {
	if d <= 0 {
		panic("retryserver: " + fn + ": d must be positive, got " + d.String())
	}
}
