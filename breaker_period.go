package retry

import "time"

// openPeriods draws a Breaker's open periods: the k-th time in a row the
// Breaker opens, it stays open for the k-th delay of one run of its
// schedule, started when the streak started; once the run has ended, for
// its last delay (0 if it had none). Finding the next period costs O(1),
// whatever the length of the streak: a built-in schedule (a plan) is drawn
// one delay at a time from a planIter kept here; a hand-written one, which
// can only be ranged from its start, is ranged for twice as many delays as
// before each time the streak outgrows the delays kept from the last range
// (amortised O(1), up to maxKeptPeriods kept delays). The Breaker's lock
// guards it.
type openPeriods struct {
	s     Schedule
	p     *plan // s's plan, nil for a hand-written s
	it    planIter
	n     int             // periods drawn in this streak
	last  time.Duration   // the latest of them
	ended bool            // the run has ended: every later period is last
	kept  []time.Duration // hand-written s: the delays of this streak's run, as far as ranged
}

// maxKeptPeriods bounds the delays kept of a hand-written schedule's run:
// past that many open periods in a row, the Breaker keeps the last one.
const maxKeptPeriods = 1 << 12

func newOpenPeriods(s Schedule) openPeriods {
	return openPeriods{s: s, p: planOf(s)}
}

// next returns the next open period of the streak.
func (o *openPeriods) next() time.Duration {
	if o.ended {
		return o.last
	}
	o.n++
	if o.p != nil {
		if o.n == 1 {
			o.it.init(o.p)
		}
		d, ok := o.it.next()
		if !ok {
			o.ended = true
			return o.last
		}
		o.last = max(d, 0)
		return o.last
	}
	if o.n > len(o.kept) {
		o.rangeFor(min(max(2*len(o.kept), 8), maxKeptPeriods))
		if o.n > len(o.kept) {
			o.ended = true
			return o.last
		}
	}
	o.last = o.kept[o.n-1]
	return o.last
}

// rangeFor ranges a fresh run of the hand-written schedule for up to n
// delays, keeping them. The delays kept before are replaced: a jittered
// schedule draws them anew, and the streak has used them already.
func (o *openPeriods) rangeFor(n int) {
	o.kept = o.kept[:0]
	for d := range o.s {
		o.kept = append(o.kept, max(d, 0))
		if len(o.kept) == n {
			break
		}
	}
}

// reset ends the streak: the next period is the first of a fresh run.
func (o *openPeriods) reset() {
	*o = openPeriods{s: o.s, p: o.p, kept: o.kept[:0]}
}
