package retry

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// bytesReader hands out the fuzzer's bytes as arguments; past the end it
// returns zeros, so every input builds some valid chain.
type bytesReader struct {
	data []byte
}

func (r *bytesReader) byte() byte {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return b
}

func (r *bytesReader) uint64() uint64 {
	var v uint64
	for range 8 {
		v = v<<8 | uint64(r.byte())
	}
	return v
}

// duration returns a non-negative Duration spread over every scale, from
// 0 and 1 ns up to the largest Duration.
func (r *bytesReader) duration() time.Duration {
	switch b := r.byte(); b % 8 {
	case 0:
		return 0
	case 1:
		return maxDuration - time.Duration(r.byte())
	case 2:
		return time.Duration(r.byte())
	default:
		mantissa := time.Duration(r.byte())<<8 | time.Duration(r.byte())
		return min(mantissa<<(b%63), maxDuration) & maxDuration
	}
}

// signed returns a Duration that may be negative, down to the most negative
// Duration, as a hand-written Schedule may yield.
func (r *bytesReader) signed() time.Duration {
	switch r.byte() % 4 {
	case 0:
		return -r.duration()
	case 1:
		return minDuration + time.Duration(r.byte())
	case 2:
		return -time.Duration(r.byte())
	default:
		return r.duration()
	}
}

// model is what the fuzz target knows about a chain without running it.
type model struct {
	lower, upper   time.Duration // every delay lies in [lower, upper]
	minLen, maxLen int           // the number of delays; math.MaxInt is infinite
	monotone       bool          // delays never decrease
	sumLimit       time.Duration // the delays sum to at most this
	random         bool
	raw            bool // a hand-written source without combinators: delays may be negative
}

// clamp is what a combinator's input becomes: a negative delay counts as 0.
func (m *model) clamp() {
	m.lower, m.upper, m.raw = max(m.lower, 0), max(m.upper, 0), false
}

const infinite = math.MaxInt

// buildSource builds one of the sources from r and returns it with its
// model. Each of this package's sources is passed through wrap.
func buildSource(r *bytesReader, src rand.Source, wrap func(Schedule) Schedule) (s Schedule, m model) {
	defer func() {
		if !m.raw {
			s = wrap(s)
		}
	}()
	m = model{minLen: infinite, maxLen: infinite, upper: maxDuration, monotone: true, sumLimit: maxDuration}
	kind := r.byte()
	if kind >= 0xf8 {
		// A hand-written Schedule, finite, whose delays may be negative.
		ds := make([]time.Duration, r.byte()%8)
		for i := range ds {
			ds[i] = r.signed()
		}
		m.minLen, m.maxLen, m.lower, m.upper, m.raw = len(ds), len(ds), 0, 0, true
		for i, d := range ds {
			if i == 0 {
				m.lower, m.upper = d, d
			}
			m.lower, m.upper = min(m.lower, d), max(m.upper, d)
			if i > 0 && d < ds[i-1] {
				m.monotone = false
			}
		}
		return handWritten(ds), m
	}
	switch kind % 8 {
	case 0:
		d := r.duration()
		m.lower, m.upper = d, d
		return Constant(d), m
	case 1:
		d := r.duration()
		m.lower = d
		return Linear(d), m
	case 2:
		d := r.duration()
		m.lower = d
		return Exponential(d), m
	case 3:
		d := r.duration()
		factor := 1 + float64(r.byte())/32
		if r.byte() == 255 {
			factor = math.Inf(1)
		}
		m.lower = d
		return ExponentialFactor(d, factor), m
	case 4:
		d := r.duration()
		m.lower = d
		return Fibonacci(d), m
	case 5:
		ds := make([]time.Duration, r.byte()%8)
		for i := range ds {
			ds[i] = r.duration()
		}
		m.minLen, m.maxLen, m.lower, m.upper = len(ds), len(ds), 0, 0
		if len(ds) > 0 {
			m.lower, m.upper = ds[0], ds[0]
		}
		for i, d := range ds {
			m.lower, m.upper = min(m.lower, d), max(m.upper, d)
			if i > 0 && d < ds[i-1] {
				m.monotone = false
			}
		}
		return Delays(ds...), m
	case 6:
		base := max(r.duration(), 1)
		limit := addSat(base, r.duration())
		m.lower, m.upper, m.monotone, m.random = base, limit, false, true
		return DecorrelatedJitter(base, limit, src), m
	default:
		m.monotone, m.random = false, true
		return SmoothJitter(r.duration(), src), m
	}
}

// buildChain applies up to eight combinators chosen by r to a source. Each
// of this package's sources in it is passed through wrap.
func buildChain(r *bytesReader, src rand.Source, wrap func(Schedule) Schedule) (Schedule, model) {
	s, m := buildSource(r, src, wrap)
	for range r.byte() % 8 {
		m.clamp()
		switch r.byte() % 8 {
		case 0:
			n := int(r.byte() % 64)
			s = s.Take(n)
			m.minLen, m.maxLen = min(m.minLen, n), min(m.maxLen, n)
		case 1:
			limit := r.duration()
			s = s.Cap(limit)
			m.lower, m.upper = min(m.lower, limit), min(m.upper, limit)
		case 2:
			floor := r.duration()
			s = s.AtLeast(floor)
			m.lower, m.upper = max(m.lower, floor), max(m.upper, floor)
			m.sumLimit = maxDuration
		case 3:
			s = s.FullJitter(src)
			m.lower, m.monotone, m.random = 0, false, true
		case 4:
			s = s.EqualJitter(src)
			m.lower, m.monotone, m.random = m.lower/2, false, true
		case 5:
			f := float64(r.byte()) / 255
			s = s.Jitter(f, src)
			m.lower = max(0, m.lower-fromFloat(float64(m.lower)*f)-1)
			m.upper = addSat(m.upper, fromFloat(float64(m.upper)*f)+1)
			m.sumLimit = maxDuration
			if f > 0 {
				m.monotone, m.random = false, true
			}
		case 6:
			total := r.duration()
			s = s.Within(total)
			m.minLen, m.upper, m.sumLimit = 0, min(m.upper, total), min(m.sumLimit, total)
		default:
			next, nm := buildSource(r, src, wrap)
			nm.clamp()
			n := int(r.byte() % 8)
			s = s.Then(next.Take(n))
			nm.minLen, nm.maxLen = min(nm.minLen, n), min(nm.maxLen, n)
			if m.maxLen == 0 {
				m.lower, m.upper = nm.lower, nm.upper
			} else if nm.maxLen > 0 {
				m.lower, m.upper = min(m.lower, nm.lower), max(m.upper, nm.upper)
			}
			if m.minLen != infinite {
				m.minLen += nm.minLen
			}
			if m.maxLen != infinite {
				m.maxLen += nm.maxLen
			}
			m.monotone = false
			m.sumLimit = maxDuration
			m.random = m.random || nm.random
		}
	}
	return s, m
}

// same returns s as it is.
func same(s Schedule) Schedule { return s }

// handWritten is a Schedule written by hand, not built by this package,
// that yields ds, negative or not.
func handWritten(ds []time.Duration) Schedule {
	return func(yield func(time.Duration) bool) {
		for _, d := range ds {
			if !yield(d) {
				return
			}
		}
	}
}

// FuzzSchedule builds an arbitrary chain of sources (including hand-written
// schedules that yield negative delays) and combinators with valid
// arguments and checks the invariants every chain keeps: no panic, delays
// never negative once a combinator has seen them and within the model's
// bounds (so never above a Cap that nothing after it raises), the exact
// count that Take promises, saturation that never wraps (monotone chains
// never decrease), Within's total, early break, and a second range that
// repeats the first.
func FuzzSchedule(f *testing.F) {
	f.Add([]byte{2, 1, 0, 2, 1, 0, 100, 1, 3, 3, 0, 6})                                                     // Exponential.Cap.Take
	f.Add([]byte{2, 5, 0, 1, 4, 3, 1, 3, 2, 0, 200, 0, 7})                                                  // Exponential, saturating
	f.Add([]byte{5, 5, 3, 0, 9, 3, 0, 7, 3, 0, 5, 0, 2, 2, 3, 4, 0, 8})                                     // Delays.Then.Take
	f.Add([]byte{6, 3, 0, 5, 3, 1, 0, 3, 2, 3, 6, 3, 0, 90})                                                // DecorrelatedJitter.FullJitter.Within
	f.Add([]byte{7, 4, 0, 20, 4, 5, 255, 1, 4, 0, 3, 0, 64})                                                // SmoothJitter.Jitter.Cap.Take
	f.Add([]byte{3, 1, 9, 255, 6, 2, 3, 0, 4, 5, 128, 2, 3, 7, 0, 3, 1, 0, 10})                             // ExponentialFactor(+Inf)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0xf8, 4, 0, 3, 1, 2, 5, 3, 9, 3, 4, 2, 3, 5, 0, 3, 4, 6, 4, 0, 9}) // hand-written, negative, jittered
	f.Add([]byte("00000000\xffC00100017"))                                                                  // hand-written, the most negative Duration, Then
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 5, 0, 4, 2, 7, 1, 0, 0, 3, 200, 3, 2, 6, 4, 0, 20})          // hand-written, negative, Within
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &bytesReader{data: data}
		seed := r.uint64()
		s, m := buildChain(r, rand.NewPCG(seed, seed^0x9e3779b97f4a7c15), same)
		const most = 256
		var got []time.Duration
		var sum time.Duration
		for d := range s {
			if d < 0 && !m.raw {
				t.Fatalf("delay %d is negative: %v", len(got), d)
			}
			if d < m.lower || d > m.upper {
				t.Fatalf("delay %d is %v, outside [%v, %v]", len(got), d, m.lower, m.upper)
			}
			if m.monotone && len(got) > 0 && d < got[len(got)-1] {
				t.Fatalf("delay %d is %v, below the previous %v in a monotone chain", len(got), d, got[len(got)-1])
			}
			if sum = addSat(sum, max(d, 0)); sum > m.sumLimit {
				t.Fatalf("delays sum to %v, over Within's %v", sum, m.sumLimit)
			}
			if got = append(got, d); len(got) == most {
				break
			}
		}
		if n := len(got); n < min(m.minLen, most) || n > m.maxLen {
			t.Fatalf("got %d delays, want between %d and %d", n, m.minLen, m.maxLen)
		}
		if !m.random {
			i := 0
			for d := range s {
				if i == len(got) || d != got[i] {
					t.Fatalf("the second range differs at %d", i)
				}
				if i++; i == len(got) {
					break
				}
			}
		}
		if len(got) > 0 {
			stop := int(seed%uint64(len(got))) + 1
			n := 0
			for range s {
				if n++; n == stop {
					break
				}
			}
			// A random chain may end sooner on another run (Within of jittered
			// delays), but never later.
			if n > stop || !m.random && n != stop {
				t.Fatalf("broke after %d delays, want %d", n, stop)
			}
		}
	})
}

// FuzzRetry drives Retry on a FakeClock with an arbitrary failure pattern,
// schedule and deadline, and checks the calls made, the sleeps recorded and
// the error returned against a plain model of the rules.
func FuzzRetry(f *testing.F) {
	f.Add([]byte{1, 1, 0}, []byte{1, 2, 3}, uint16(0))
	f.Add([]byte{1, 1, 1, 1, 1}, []byte{1, 2}, uint16(0))
	f.Add([]byte{1, 2}, []byte{5, 5, 5}, uint16(0))
	f.Add([]byte{7, 11, 3, 0}, []byte{1, 1, 1}, uint16(0))
	f.Add([]byte{1, 1, 1, 1}, []byte{30, 30, 30, 30}, uint16(70))
	f.Add([]byte{3, 1}, []byte{0, 0}, uint16(1))
	f.Fuzz(func(t *testing.T, pattern, delays []byte, deadline uint16) {
		// Durations are whole seconds, so the real time the test itself takes
		// (which shortens what is left before a real deadline) never decides.
		sched := make([]time.Duration, len(delays))
		for i, d := range delays {
			sched[i] = time.Duration(d) * time.Second
		}
		const limit = 40 * time.Second
		const (
			succeed = iota
			fail
			permanent
			pushback
		)
		// outcome returns the kind of attempt i, its pushback and its error.
		outcome := func(i int) (int, time.Duration, error) {
			if i >= len(pattern) {
				return succeed, 0, nil
			}
			switch b := pattern[i]; b % 4 {
			case 0:
				return succeed, 0, nil
			case 1:
				return fail, 0, errBoom
			case 2:
				return permanent, 0, Permanent(errBoom)
			default:
				d := time.Duration(int(b>>2)-8) * time.Second // -8 s to 55 s
				return pushback, d, RetryAfter(errBoom, d)
			}
		}

		// The model.
		var wantSleeps []time.Duration
		var wantErr error // nil, errBoom (returned as it is), or a reason
		wantCalls := 0
		var elapsed time.Duration
		for i := 0; ; i++ {
			wantCalls++
			kind, pd, _ := outcome(i)
			if kind == succeed {
				break
			}
			if kind == permanent || kind == pushback && pd < 0 {
				wantErr = errBoom
				break
			}
			if i >= len(sched) {
				wantErr = ErrExhausted
				break
			}
			wait := sched[i]
			if kind == pushback {
				if pd > limit && pd > wait {
					wantErr = ErrPushbackTooLong // longer than MaxPushback allows: the call ends at once
					break
				}
				wait = max(wait, pd)
			}
			if deadline > 0 && wait >= time.Duration(deadline)*time.Second-elapsed {
				wantErr = context.DeadlineExceeded
				if kind == pushback && pd > sched[i] {
					wantErr = ErrPushbackTooLong // the server's wait, not the schedule's, passes the deadline
				}
				break
			}
			wantSleeps = append(wantSleeps, wait)
			elapsed += wait
		}

		ctx := t.Context()
		if deadline > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(deadline)*time.Second)
			defer cancel()
		}
		clock := NewFakeClock(epoch)
		calls, hooks := 0, 0
		v, err := Retry(ctx, Delays(sched...), func(context.Context) (int, error) {
			calls++
			_, _, e := outcome(calls - 1)
			return calls, e
		}, WithClock(clock), MaxPushback(limit), OnRetry(func(a Attempt) {
			hooks++
			if a.Number != hooks {
				t.Fatalf("OnRetry got attempt %d, want %d", a.Number, hooks)
			}
		}))

		if calls != wantCalls || v != calls {
			t.Fatalf("%d calls returning %d, want %d", calls, v, wantCalls)
		}
		sleeps := clock.Sleeps()
		if len(sleeps) != len(wantSleeps) || hooks != len(wantSleeps) {
			t.Fatalf("sleeps %v (%d hooks), want %v", sleeps, hooks, wantSleeps)
		}
		for i := range sleeps {
			if sleeps[i] != wantSleeps[i] {
				t.Fatalf("sleeps %v, want %v", sleeps, wantSleeps)
			}
		}
		switch wantErr {
		case nil:
			if err != nil {
				t.Fatalf("err = %v, want success", err)
			}
		case errBoom:
			if err != errBoom {
				t.Fatalf("err = %v, want the unmarked error as it is", err)
			}
		default:
			var re *Error
			if !errors.As(err, &re) || !errors.Is(err, wantErr) || re.Last != errBoom || re.Attempts != calls {
				t.Fatalf("err = %v, want an *Error for %v after %d attempts", err, wantErr, calls)
			}
		}
	})
}

// FuzzPushback checks the pushback arithmetic at the extremes: any server
// value and any limit give a wait of max(schedule, min(pushback, limit)),
// never negative and never wrapped, unless the pushback is longer than both
// the limit and the schedule's own delay: then the call ends at once with
// ErrPushbackTooLong (testdata/fuzz/FuzzPushback holds the input that found
// this target still expecting the old cut to the limit).
func FuzzPushback(f *testing.F) {
	f.Add(int64(5e9), int64(60e9), int64(1e9), false, int64(0), int64(0))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), int64(0), false, int64(0), int64(0))
	f.Add(int64(-1), int64(0), int64(0), false, int64(0), int64(0))
	f.Add(int64(0), int64(60e9), int64(1e9), true, int64(math.MaxInt64), int64(999999999))
	f.Add(int64(0), int64(60e9), int64(1e9), true, int64(math.MinInt64), int64(0))
	f.Fuzz(func(t *testing.T, d, limit, next int64, absolute bool, sec, nsec int64) {
		limit &= math.MaxInt64 // non-negative
		next &= math.MaxInt64
		at := time.Unix(sec, nsec)
		var marked error
		var pushback time.Duration
		if absolute {
			marked = RetryAt(errBoom, at)
			pushback = max(at.Sub(epoch), 0)
		} else {
			marked = RetryAfter(errBoom, time.Duration(d))
			pushback = time.Duration(d)
		}
		clock := NewFakeClock(epoch)
		calls := 0
		_, err := Retry(t.Context(), Delays(time.Duration(next)), func(context.Context) (int, error) {
			if calls++; calls == 1 {
				return 0, marked
			}
			return 0, errBoom
		}, WithClock(clock), MaxPushback(time.Duration(limit)))
		sleeps := clock.Sleeps()
		if pushback < 0 {
			if calls != 1 || len(sleeps) != 0 || err != errBoom {
				t.Fatalf("a negative pushback must stop: %d calls, sleeps %v, err %v", calls, sleeps, err)
			}
			return
		}
		if limit > 0 && pushback > time.Duration(limit) && pushback > time.Duration(next) {
			// Longer than MaxPushback allows: the call ends at once.
			if calls != 1 || len(sleeps) != 0 || !errors.Is(err, ErrPushbackTooLong) {
				t.Fatalf("a pushback over MaxPushback must end the call: %d calls, sleeps %v, err %v", calls, sleeps, err)
			}
			return
		}
		want := max(time.Duration(next), min(pushback, time.Duration(limit)))
		if len(sleeps) != 1 || sleeps[0] != want || sleeps[0] < 0 {
			t.Fatalf("sleeps %v, want [%v]", sleeps, want)
		}
		if !errors.Is(err, ErrExhausted) || calls != 2 {
			t.Fatalf("%d calls, err %v", calls, err)
		}
	})
}
