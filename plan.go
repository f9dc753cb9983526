package retry

import (
	"math"
	"slices"
	"time"
)

// A plan is a chain of this package's sources and combinators folded, at
// construction, into one flat description: the segments that Then joins,
// each a source followed by a pipeline of combinators, and a pipeline
// applied to all of them. Every built-in Schedule is a plan's closure (see
// planSchedule), and a combinator applied to one returns a new plan rather
// than a relay around it (see planOf), so that Retry and Do can draw the
// delays of a built-in chain in a flat loop with the state in its locals
// (loop.go), and ranging one is a loop over planIter.next with no relay
// at all (plan_iter.go). A chain that a plan cannot hold (a hand-written
// Schedule anywhere in it, more Within than a planIter has room for, a Then
// after a Take or Within that spans a Then) is built with relays instead,
// exactly as before plans: both give the same delays (FuzzFusion).
//
// A plan never changes once built: combinators copy what they change, so
// one plan can back any number of Schedules, runs and goroutines.
type plan struct {
	head segment   // the first segment, kept in the plan so that a source is one object
	tail []segment // the segments that follow it, in order
	pipe pipeline  // applied to the delays of all segments; empty with one segment
	// simple is set by planSchedule for a plan of one segment without
	// Within: planIter.next then takes its short path, in which shape, if
	// ok, stands for the segment's ops.
	simple bool
	shape  shape
}

// A shape is the pipeline of most chains, a clamp, a jitter and a clamp,
// each of them optional, in a form that planIter.next applies without a
// loop: [lo1, hi1], then the jitter, then [lo2, hi2].
type shape struct {
	ok       bool
	lo1, hi1 time.Duration
	jitter   opKind // opFull, opEqual, opJitter, or opClamp for none
	factor   float64
	src      source
	lo2, hi2 time.Duration
}

// shapeOf returns the shape of ops, not ok if they have none.
func shapeOf(ops []op) shape {
	sh := shape{ok: true, hi1: maxDuration, jitter: opClamp, hi2: maxDuration}
	i := 0
	if i < len(ops) && ops[i].kind == opClamp {
		sh.lo1, sh.hi1 = ops[i].lo, ops[i].hi
		i++
	}
	if i < len(ops) && ops[i].kind != opClamp && ops[i].kind != opWithin {
		sh.jitter, sh.factor, sh.src = ops[i].kind, ops[i].factor, ops[i].src
		i++
	}
	if i < len(ops) && ops[i].kind == opClamp && sh.jitter != opClamp {
		sh.lo2, sh.hi2 = ops[i].lo, ops[i].hi
		i++
	}
	sh.ok = i == len(ops)
	return sh
}

// segments returns the number of p's segments.
func (p *plan) segments() int {
	return 1 + len(p.tail)
}

// segment returns p's i-th segment, from 0.
func (p *plan) segment(i int) *segment {
	if i == 0 {
		return &p.head
	}
	return &p.tail[i-1]
}

// A segment is a source and the pipeline applied to its delays alone.
type segment struct {
	src  sourceSpec
	pipe pipeline
}

// A pipeline is a sequence of combinators applied to each delay, and a limit
// on how many delays pass (every Take in a pipeline counts the same delays,
// so only the smallest matters, wherever it stands).
type pipeline struct {
	ops  []op
	take int // at most this many delays; noLimit for none
	sums int // the number of Within ops, each with a slot in planIter.sums
}

// noLimit is the take of a pipeline without Take.
const noLimit = math.MaxInt

// maxSums is the number of Within totals a planIter has room for: those of
// the plan's pipeline and those of the pipeline of the segment being drawn.
const maxSums = 2

// empty reports whether the pipeline does nothing.
func (pp *pipeline) empty() bool {
	return len(pp.ops) == 0 && pp.take == noLimit
}

type opKind uint8

const (
	opClamp  opKind = iota // Cap and AtLeast: min(max(d, lo), hi)
	opFull                 // FullJitter
	opEqual                // EqualJitter
	opJitter               // Jitter(factor)
	opWithin               // Within(hi): the sum in slot must stay within hi
)

// An op is one combinator of a pipeline.
type op struct {
	kind   opKind
	slot   uint8         // opWithin: its sum's index among the pipeline's
	lo, hi time.Duration // opClamp's bounds; opWithin's total in hi
	factor float64       // opJitter
	src    source        // the jitters'
}

type sourceKind uint8

const (
	srcConstant sourceKind = iota
	srcLinear
	srcExponential
	srcFactor // ExponentialFactor
	srcFibonacci
	srcDelays
	srcDecorrelated
	srcSmooth
	srcQuantile // Latency.Quantile
)

// A sourceSpec is the description of a source: see planIter.draw for what
// each one yields.
type sourceSpec struct {
	kind   sourceKind
	base   time.Duration   // Constant's delay, every base, SmoothJitter's median
	limit  time.Duration   // DecorrelatedJitter's
	factor float64         // ExponentialFactor's; SmoothJitter's scale
	ds     []time.Duration // Delays'
	src    source          // DecorrelatedJitter's and SmoothJitter's
	est    *estimate       // Quantile's, shared by every run
}

// last returns a copy of p whose last pipeline (its segment's with one
// segment, its own otherwise) can be changed without changing p, and that
// pipeline. Its ops are shared with p's: append to them only after
// slices.Clip.
func (p *plan) last() (*plan, *pipeline) {
	q := new(plan)
	*q = *p
	if len(q.tail) > 0 {
		return q, &q.pipe
	}
	return q, &q.head.pipe
}

// withOp returns p followed by o, or nil if a planIter would have no room
// for it. Two clamps in a row become one.
func (p *plan) withOp(o op) *plan {
	q, pp := p.last()
	switch o.kind {
	case opWithin:
		if q.sums() == maxSums {
			return nil
		}
		o.slot = uint8(pp.sums)
		pp.sums++
	case opClamp:
		if n := len(pp.ops); n > 0 && pp.ops[n-1].kind == opClamp {
			// Clamping to [lo1, hi1] then to [lo2, hi2] is clamping to the
			// image of [lo1, hi1] under the second clamp, since a clamp is
			// monotone.
			prev := pp.ops[n-1]
			o.lo, o.hi = min(max(prev.lo, o.lo), o.hi), min(max(prev.hi, o.lo), o.hi)
			pp.ops = append(slices.Clip(pp.ops[:n-1]), o)
			return q
		}
	}
	pp.ops = append(slices.Clip(pp.ops), o)
	return q
}

// withTake returns p followed by Take(n).
func (p *plan) withTake(n int) *plan {
	q, pp := p.last()
	pp.take = min(pp.take, n)
	return q
}

// then returns the plan of p's delays followed by next's, or nil if either
// has a pipeline that spans several segments.
func (p *plan) then(next *plan) *plan {
	if !p.pipe.empty() || !next.pipe.empty() {
		return nil
	}
	tail := slices.Concat(p.tail, []segment{next.head}, next.tail)
	return &plan{head: p.head, tail: tail, pipe: pipeline{take: noLimit}}
}

// sums returns the number of Within totals a planIter needs for p.
func (p *plan) sums() int {
	n := p.head.pipe.sums
	for i := range p.tail {
		n = max(n, p.tail[i].pipe.sums)
	}
	return p.pipe.sums + n
}
