package retry

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"time"
)

// planIter is one run of a plan, drawn a delay at a time. It holds the whole
// state of the run in a fixed size, so that it lives in its user's frame:
// ranging a plan's Schedule, or the flat retry loop, allocates nothing.
//
// Drawing is what ranging the same chain built with relays does, in the same
// order: a Take refuses before its source is drawn from, a Within after; a
// segment that ends (its source, Take or Within does) gives way to the next
// one in the same draw, as Then starts its next Schedule; a pipeline that
// refuses a delay refuses all the later ones. FuzzFusion checks the two
// against each other.
//
// It is kept small, since the flat loop's frame is what a waiting call adds
// to its goroutine's stack: the counts are int32 (a plan's segments and a
// run's delays stay far below 2³¹, and the counts saturate there: see
// count), and the source's float state shares a word with b.
type planIter struct {
	p     *plan
	seg   int32 // the segment being drawn from; p.segments() once done
	segN  int32 // the delays its pipeline passed on
	planN int32 // the delays the plan's pipeline passed on
	i     int32 // the source's index: see draw
	a     time.Duration
	b     uint64 // Fibonacci's next delay, or the bits of the source's float
	// The Within sums: the plan pipeline's first, then the segment's.
	sums [maxSums]time.Duration
}

// f returns the source's float state.
func (it *planIter) f() float64 { return math.Float64frombits(it.b) }

// setF sets the source's float state.
func (it *planIter) setF(f float64) { it.b = math.Float64bits(f) }

// init starts a run of p.
func (it *planIter) init(p *plan) {
	base := p.head.src.base
	*it = planIter{p: p, a: base, b: uint64(base)}
	if k := p.head.src.kind; k == srcFactor || k == srcSmooth {
		it.start() // their float state
	}
}

// start starts the source of the current segment, if any is left, and its
// pipeline.
func (it *planIter) start() {
	it.segN = 0
	clear(it.sums[it.p.pipe.sums:])
	if int(it.seg) == it.p.segments() {
		return
	}
	s := &it.p.segment(int(it.seg)).src
	it.a, it.b, it.i = s.base, uint64(s.base), 0
	switch s.kind {
	case srcFactor: // hi in b's bits, lo in a's: see draw
		hi := float64(s.base)
		it.setF(hi)
		it.a = time.Duration(math.Float64bits(float64(int64(uint64(s.base) - uint64(hi)))))
	case srcSmooth:
		it.setF(0)
	}
}

// next returns the run's next delay, or false once the run has ended.
func (it *planIter) next() (time.Duration, bool) {
	p := it.p
	if p.simple {
		// One segment, no pipeline of the plan's own, no Within: the
		// common case, without the bookkeeping that the rest needs.
		if int(it.segN) >= p.head.pipe.take {
			return 0, false
		}
		var d time.Duration
		if src := &p.head.src; src.kind == srcExponential {
			d = it.a
			it.a = addSat(d, d)
		} else {
			var ok bool
			if d, ok = it.draw(src); !ok {
				return 0, false
			}
		}
		it.segN = count(it.segN)
		if sh := &p.shape; sh.ok {
			d = min(max(d, sh.lo1), sh.hi1)
			switch sh.jitter {
			case opClamp: // none
			case opFull:
				// fullJitter, written out.
				if n := uint64(d); n != 0 && sh.src.src == nil {
					hi, lo := bits.Mul64(rand.Uint64(), n+1)
					if lo < n+1 {
						hi = sh.src.reject(n+1, hi, lo)
					}
					d = time.Duration(hi)
				} else {
					d = fullJitter(sh.src, d)
				}
			case opEqual:
				d = jitterDelay(d, 0, sh.src)
			default: // opJitter
				d = jitterDelay(d, sh.factor, sh.src)
			}
			return min(max(d, sh.lo2), sh.hi2), true
		}
		return p.head.pipe.transform(d), true
	}
	if int(it.planN) >= p.pipe.take {
		it.seg = int32(p.segments())
		return 0, false
	}
	for int(it.seg) < p.segments() {
		sg := p.segment(int(it.seg))
		if int(it.segN) < sg.pipe.take {
			d, ok := it.draw(&sg.src)
			if ok {
				d, ok = sg.pipe.apply(d, it.sums[p.pipe.sums:])
			}
			if ok {
				it.segN = count(it.segN)
				if d, ok = p.pipe.apply(d, it.sums[:p.pipe.sums]); !ok {
					it.seg = int32(p.segments())
					return 0, false
				}
				it.planN = count(it.planN)
				return d, true
			}
		}
		it.seg++
		it.start()
	}
	return 0, false
}

// count returns n+1, or n at the largest int32: a Take of more than 2³¹−2
// delays then never ends the run, which is what it does in practice.
func count(n int32) int32 {
	if n == math.MaxInt32 {
		return n
	}
	return n + 1
}

// draw returns the next delay of the source s, or false once it has ended
// (only Delays ends). Each case is the loop the source's iterator ran before
// plans, unrolled: a holds the next delay of Linear, Exponential and
// Fibonacci (b the one after), the previous one of DecorrelatedJitter; the
// float (b's bits) is ExponentialFactor's hi (and a's bits its lo), or
// SmoothJitter's previous f(t); i is the index of Delays and SmoothJitter.
// Quantile keeps no state in the run: its estimate is shared (see estimate).
func (it *planIter) draw(s *sourceSpec) (time.Duration, bool) {
	switch s.kind {
	case srcConstant:
		return s.base, true
	case srcLinear:
		d := it.a
		it.a = addSat(d, s.base)
		return d, true
	case srcExponential:
		d := it.a
		it.a = addSat(d, d)
		return d, true
	case srcFactor:
		// The exact delay is the sum hi+lo of two float64s (see
		// ExponentialFactor): hi is the float state, lo the bits in a.
		if s.base == 0 {
			return 0, true
		}
		hi, lo := it.f(), math.Float64frombits(uint64(it.a))
		d := roundSum(hi, lo)
		if d < maxDuration { // once saturated, stay there without touching +Inf
			hi, lo = mulSum(hi, lo, s.factor)
			it.setF(hi)
			it.a = time.Duration(math.Float64bits(lo))
		}
		return d, true
	case srcFibonacci:
		d := it.a
		it.a, it.b = time.Duration(it.b), uint64(addSat(it.a, time.Duration(it.b)))
		return d, true
	case srcDelays:
		if int(it.i) == len(s.ds) {
			return 0, false
		}
		it.i++
		return s.ds[it.i-1], true
	case srcDecorrelated:
		hi := mulSat(it.a, 3)
		it.a = min(s.limit, s.base+time.Duration(s.src.upTo(uint64(hi-s.base))))
		return it.a, true
	case srcQuantile:
		return s.est.get(), true
	default: // srcSmooth
		if s.base == 0 {
			return 0, true
		}
		t := float64(it.i) + s.src.float64()
		next := math.Exp2(t) * math.Tanh(math.Sqrt(4*t))
		d := maxDuration
		if !math.IsInf(next, 1) {
			d = fromFloat((next - it.f()) * s.factor)
		}
		it.setF(next)
		it.i = count(it.i)
		return d, true
	}
}

// apply passes d through the pipeline's ops, and reports false if a Within
// refuses it. sums are the pipeline's Within totals so far.
func (pp *pipeline) apply(d time.Duration, sums []time.Duration) (time.Duration, bool) {
	if pp.sums == 0 {
		return pp.transform(d), true
	}
	for i := range pp.ops {
		o := &pp.ops[i]
		switch o.kind {
		case opClamp:
			d = min(max(d, o.lo), o.hi)
		case opFull:
			d = fullJitter(o.src, d)
		case opEqual:
			d = jitterDelay(d, 0, o.src)
		case opJitter:
			d = jitterDelay(d, o.factor, o.src)
		default: // opWithin
			if d > o.hi-sums[o.slot] {
				return 0, false
			}
			sums[o.slot] += d
		}
	}
	return d, true
}

// transform passes d through the ops of a pipeline without Within.
func (pp *pipeline) transform(d time.Duration) time.Duration {
	for i := range pp.ops {
		switch o := &pp.ops[i]; o.kind {
		case opFull:
			d = fullJitter(o.src, d)
		case opClamp:
			d = min(max(d, o.lo), o.hi)
		case opEqual:
			d = jitterDelay(d, 0, o.src)
		default: // opJitter
			d = jitterDelay(d, o.factor, o.src)
		}
	}
	return d
}

// fullJitter draws FullJitter's delay below d ≥ 0: src.upTo(d), with the common
// case (the runtime's generator, no rejection) written out, since upTo is
// too large to inline. It draws the same numbers as upTo.
func fullJitter(src source, d time.Duration) time.Duration {
	n := uint64(d)
	if n == 0 || src.src != nil {
		return time.Duration(src.upTo(n))
	}
	hi, lo := bits.Mul64(rand.Uint64(), n+1)
	if lo < n+1 {
		return time.Duration(src.reject(n+1, hi, lo))
	}
	return time.Duration(hi)
}

// iterate is the body of p's Schedule: it yields the delays of a run of p.
func (p *plan) iterate(yield func(time.Duration) bool) {
	var it planIter
	it.init(p)
	for {
		d, ok := it.next()
		if !ok || !yield(d) {
			return
		}
	}
}

// sourceSchedule returns the Schedule of the plan made of src alone.
func sourceSchedule(src sourceSpec) Schedule {
	return planSchedule(&plan{head: segment{src: src, pipe: pipeline{take: noLimit}}, pipe: pipeline{take: noLimit}})
}

// planSchedule returns p's Schedule: ranging it runs p's iterator. Every
// plan's Schedule is the method value p.iterate, a closure whose code is the
// compiler's one wrapper for the method, wherever it is made: that is how
// planOf recognises it.
func planSchedule(p *plan) Schedule {
	p.simple = len(p.tail) == 0 && p.pipe.empty() && p.head.pipe.sums == 0
	if p.simple {
		p.shape = shapeOf(p.head.pipe.ops)
	}
	return p.iterate
}
