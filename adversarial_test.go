package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Adversarial tests: each attacks one promise of the docs with inputs a
// careful caller would not write.

// TestBudgetUnderTenThousand: 10 000 goroutines share one Budget during a
// total outage while others read Tokens and String without pause. The
// readers never see a balance outside [0, reserve] or a String that does
// not parse, and the calls stay within requests·(1+ratio) + reserve.
func TestBudgetUnderTenThousand(t *testing.T) {
	const (
		goroutines = 10_000
		ratio      = 0.1
		reserve    = 10
	)
	b := NewBudget(ratio, reserve)
	var calls, refused atomic.Int64
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				tok := b.Tokens()
				if tok < 0 || tok > reserve {
					t.Errorf("Tokens() = %v, outside [0, %d]", tok, reserve)
					return
				}
				s := b.String()
				var got float64
				var limit int
				var r float64
				if _, err := fmt.Sscanf(s, "retry.Budget{tokens: %g/%d, ratio: %g}", &got, &limit, &r); err != nil ||
					got < 0 || got > reserve || limit != reserve || r != ratio {
					t.Errorf("String() = %q", s)
					return
				}
			}
		})
	}
	clock := &countingClock{}
	s := Constant(time.Millisecond).Take(5)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			err := Do(context.Background(), s, func(context.Context) error {
				calls.Add(1)
				return errBoom
			}, WithBudget(b), WithClock(clock))
			if errors.Is(err, ErrBudgetExhausted) {
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	bound := int64(goroutines*(1+ratio)) + reserve
	assert.LessOrEqual(t, calls.Load(), bound)
	assert.Greater(t, refused.Load(), int64(goroutines*8/10))
	assert.GreaterOrEqual(t, b.Tokens(), 0.0)
	assert.Less(t, b.Tokens(), 1.0, "an outage spends every whole token")
}

// TestFakeClockSharedByManyCalls: one FakeClock serves 200 concurrent Retry
// calls without a deadline; every call makes exactly its waits, and the
// clock's time is the sum of all of them.
func TestFakeClockSharedByManyCalls(t *testing.T) {
	clock := NewFakeClock(epoch)
	const calls = 200
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			n := 0
			err := Do(context.Background(), Constant(time.Second).Take(3), func(context.Context) error {
				n++
				return errBoom
			}, WithClock(clock))
			assert.ErrorIs(t, err, ErrExhausted)
			assert.Equal(t, 4, n)
		})
	}
	wg.Wait()
	assert.Len(t, clock.Sleeps(), 3*calls)
	assert.Equal(t, epoch.Add(3*calls*time.Second), clock.Now())
}

// TestErrorReasons: errors.Is and errors.As on an *Error, for every reason
// Retry gives up with, see the reason, the last error, and the *Error; and
// nothing else.
func TestErrorReasons(t *testing.T) {
	type myErr struct{ error }
	last := &myErr{errors.New("last")}
	cause := errors.New("my cause")
	reasons := map[string]struct {
		run    func(t *testing.T) error
		reason error
	}{
		"exhausted": {func(t *testing.T) error {
			return Do(t.Context(), Delays(), func(context.Context) error { return last })
		}, ErrExhausted},
		"budget": {func(t *testing.T) error {
			return Do(t.Context(), Constant(0), func(context.Context) error { return last }, WithBudget(NewBudget(0, 0)))
		}, ErrBudgetExhausted},
		"cancelled": {func(t *testing.T) error {
			ctx, cancel := context.WithCancel(t.Context())
			return Do(ctx, Constant(0), func(context.Context) error { cancel(); return last })
		}, context.Canceled},
		"cancelled with a cause": {func(t *testing.T) error {
			ctx, cancel := context.WithCancelCause(t.Context())
			return Do(ctx, Constant(0), func(context.Context) error { cancel(cause); return last })
		}, cause},
		"deadline": {func(t *testing.T) error {
			ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
			defer cancel()
			return Do(ctx, Constant(2*time.Hour), func(context.Context) error { return last }, WithClock(NewFakeClock(epoch)))
		}, context.DeadlineExceeded},
		"max elapsed": {func(t *testing.T) error {
			return Do(t.Context(), Constant(2*time.Hour), func(context.Context) error { return last },
				WithClock(NewFakeClock(epoch)), MaxElapsed(time.Hour))
		}, ErrMaxElapsed},
		"deadline with a cause": {func(t *testing.T) error {
			ctx, cancel := context.WithTimeoutCause(t.Context(), time.Hour, cause)
			defer cancel()
			return Do(ctx, Constant(2*time.Hour), func(context.Context) error { return last }, WithClock(NewFakeClock(epoch)))
		}, context.DeadlineExceeded},
	}
	all := []error{ErrExhausted, ErrBudgetExhausted, ErrMaxElapsed, context.Canceled, context.DeadlineExceeded, cause}
	for name, tc := range reasons {
		t.Run(name, func(t *testing.T) {
			err := tc.run(t)
			var re *Error
			require.ErrorAs(t, err, &re)
			assert.Equal(t, 1, re.Attempts)
			assert.Same(t, last, re.Last)
			assert.ErrorIs(t, err, tc.reason)
			assert.ErrorIs(t, err, last)
			var me *myErr
			require.ErrorAs(t, err, &me)
			assert.Same(t, last, me)
			for _, other := range all {
				if other != tc.reason {
					assert.NotErrorIs(t, err, other)
				}
			}
			assert.True(t, strings.HasPrefix(err.Error(), "retry: gave up after 1 attempt: "), err.Error())
			assert.True(t, strings.HasSuffix(err.Error(), ": last error: last"), err.Error())
			// Wrapped, and wrapped again by a layer above, it still
			// matches, and IsTransient refuses it.
			wrapped := fmt.Errorf("layer: %w", errors.Join(io.EOF, err))
			assert.ErrorIs(t, wrapped, tc.reason)
			assert.ErrorIs(t, wrapped, last)
			assert.False(t, IsTransient(wrapped))
		})
	}
	t.Run("an Error made by hand", func(t *testing.T) {
		var zero Error
		assert.Equal(t, "retry: gave up after 0 attempts", zero.Error())
		assert.Nil(t, zero.Unwrap())
		e := &Error{Attempts: 2, Last: last}
		assert.ErrorIs(t, e, last)
		assert.NotErrorIs(t, e, ErrExhausted)
		assert.Equal(t, "retry: gave up after 2 attempts: last error: last", e.Error())
	})
}

// TestIsTransientTrees: IsTransient on trees a careful caller would not
// build: deep chains, wide and shared joins, markers in odd places, and
// nil entries.
func TestIsTransientTrees(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	notFound := errors.New("not found")
	deep := func(err error, n int) error {
		for i := range n {
			err = fmt.Errorf("layer %d: %w", i, err)
		}
		return err
	}
	// shared is a join whose two halves are the same error, n levels deep:
	// a DAG of 2ⁿ paths to reset.
	shared := func(err error, n int) error {
		for range n {
			err = errors.Join(err, err)
		}
		return err
	}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"a reset 1000 layers down", deep(reset, 1000), true},
		{"an unknown error 1000 layers down", deep(notFound, 1000), false},
		{"a reset behind 14 levels of shared joins", shared(reset, 14), true},
		{"the last of 10 000 joined errors is a reset", errors.Join(append(repeat(notFound, 9_999), reset)...), true},
		{"Permanent deep inside a join", errors.Join(reset, deep(Permanent(notFound), 100)), false},
		{"Permanent around a pushback", Permanent(RetryAfter(reset, time.Second)), false},
		{"a pushback around a reset", RetryAfter(reset, time.Second), true},
		{"a refusing pushback around a reset", RetryAfter(reset, -1), true},
		{"an *Error deep inside a join", errors.Join(reset, deep(newError(1, reset, ErrExhausted), 100)), false},
		{"canceled far from a timeout", errors.Join(deep(context.DeadlineExceeded, 50), deep(context.Canceled, 50)), false},
		{"a nil in a hand-made join", joinWithNil{[]error{nil, reset, nil}}, true},
		{"only nils in a hand-made join", joinWithNil{[]error{nil, nil}}, false},
		{"a chain that ends in nil", chainToNil{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, IsTransient(tt.err))
		})
	}
}

// joinWithNil is an error whose Unwrap returns a slice with nil entries,
// which errors.Join never makes but a hand-written type may.
type joinWithNil struct{ errs []error }

func (e joinWithNil) Error() string   { return "join with nil" }
func (e joinWithNil) Unwrap() []error { return e.errs }

// chainToNil is an error whose Unwrap returns nil.
type chainToNil struct{}

func (chainToNil) Error() string { return "chain to nil" }
func (chainToNil) Unwrap() error { return nil }

// TestPushbackExtremes: pushbacks of every size and sign, and points in
// time from the zero Time to the end of representable time, on the real
// clock and on FakeClocks far from now.
func TestPushbackExtremes(t *testing.T) {
	year1 := time.Time{}
	farFuture := time.Unix(1<<62, 0)
	tests := []struct {
		name    string
		clock   *FakeClock
		err     error
		limit   time.Duration // MaxPushback; -1: the default
		wantErr error
		waits   []time.Duration
	}{
		{"the largest RetryAfter ends the call", NewFakeClock(epoch), RetryAfter(errBoom, maxDuration), -1, ErrPushbackTooLong,
			nil},
		{"the largest RetryAfter, unbounded", NewFakeClock(epoch), RetryAfter(errBoom, maxDuration), maxDuration, ErrExhausted,
			[]time.Duration{maxDuration}},
		{"the smallest RetryAfter refuses", NewFakeClock(epoch), RetryAfter(errBoom, math.MinInt64), -1, nil, nil},
		{"RetryAfter(0) keeps the schedule", NewFakeClock(epoch), RetryAfter(errBoom, 0), -1, ErrExhausted,
			[]time.Duration{time.Millisecond}},
		{"RetryAt the zero Time", NewFakeClock(epoch), RetryAt(errBoom, year1), -1, ErrExhausted,
			[]time.Duration{time.Millisecond}},
		{"RetryAt the zero Time on the zero clock", NewFakeClock(year1), RetryAt(errBoom, year1), -1, ErrExhausted,
			[]time.Duration{time.Millisecond}},
		{"RetryAt the far future from year 1", NewFakeClock(year1), RetryAt(errBoom, farFuture), maxDuration, ErrExhausted,
			[]time.Duration{maxDuration}},
		{"RetryAt the far past from the far future", NewFakeClock(farFuture), RetryAt(errBoom, year1), maxDuration, ErrExhausted,
			[]time.Duration{time.Millisecond}},
		{"RetryAt in 90 s on a FakeClock", NewFakeClock(epoch), RetryAt(errBoom, epoch.Add(90*time.Second)), 2 * time.Minute,
			ErrExhausted, []time.Duration{90 * time.Second}},
		{"RetryAt one nanosecond ahead", NewFakeClock(epoch), RetryAt(errBoom, epoch.Add(1)), -1, ErrExhausted,
			[]time.Duration{time.Millisecond}},
		{"a limit of 0 ignores the wait", NewFakeClock(epoch), RetryAfter(errBoom, time.Hour), 0, ErrExhausted,
			[]time.Duration{time.Millisecond}},
		{"a limit of 0 still refuses", NewFakeClock(epoch), RetryAfter(errBoom, -time.Nanosecond), 0, nil, nil},
		{"the outermost pushback counts", NewFakeClock(epoch), RetryAfter(RetryAfter(errBoom, -1), 5*time.Second), -1,
			ErrExhausted, []time.Duration{5 * time.Second}},
		{"a refusal outside a wait refuses", NewFakeClock(epoch), RetryAfter(RetryAfter(errBoom, time.Hour), -1), -1,
			nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := []Option{WithClock(tt.clock)}
			if tt.limit >= 0 {
				opts = append(opts, MaxPushback(tt.limit))
			}
			calls := 0
			err := Do(t.Context(), Delays(time.Millisecond), func(context.Context) error {
				calls++
				return tt.err
			}, opts...)
			if tt.wantErr == nil {
				assert.Same(t, errBoom, err)
				assert.Equal(t, 1, calls)
			} else {
				assert.ErrorIs(t, err, tt.wantErr)
				assert.ErrorIs(t, err, errBoom)
			}
			assert.Equal(t, tt.waits, tt.clock.Sleeps())
		})
	}
	t.Run("a pushback past the deadline is not waited", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		clock := NewFakeClock(epoch)
		err := Do(ctx, Constant(time.Millisecond), func(context.Context) error {
			return RetryAfter(errBoom, maxDuration)
		}, WithClock(clock), MaxPushback(maxDuration))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Empty(t, clock.Sleeps())
	})
	t.Run("RetryAt reads the clock at each wait", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		at := epoch.Add(10 * time.Second)
		err := Do(t.Context(), Constant(time.Second).Take(3), func(context.Context) error {
			return RetryAt(errBoom, at)
		}, WithClock(clock))
		assert.ErrorIs(t, err, ErrExhausted)
		// 10 s to reach at, then at is past: the schedule's own second.
		assert.Equal(t, []time.Duration{10 * time.Second, time.Second, time.Second}, clock.Sleeps())
	})
}

// TestRangedAMillionTimes: ranging a schedule over and over, or taking a
// million delays from one run, holds no memory: the heap after a million
// runs (a hundred thousand under the race detector) is where it was after a
// thousand, and a run of a million delays allocates what a run of ten does.
func TestRangedAMillionTimes(t *testing.T) {
	if testing.Short() {
		t.Skip("a million runs")
	}
	s := Exponential(time.Millisecond).Cap(time.Second).Jitter(0.2, rand.NewPCG(1, 2)).AtLeast(time.Microsecond).Within(time.Hour).Take(5)
	runs := func(n int) {
		for range n {
			for d := range s {
				if d < 0 || d > 1200*time.Millisecond {
					t.Fatalf("delay %v", d)
				}
			}
		}
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	n := 1_000_000
	if raceEnabled {
		n = 100_000 // the race detector makes each run 10 times slower
	}
	runs(1000)
	before := heap()
	runs(n)
	after := heap()
	assert.Less(t, int64(after)-int64(before), int64(64<<10), "heap grew from %d to %d bytes", before, after)

	if raceEnabled {
		return
	}
	long := Exponential(time.Millisecond).Cap(time.Second).FullJitter(rand.NewPCG(3, 4)).Within(maxDuration)
	count := func(n int) func() {
		return func() {
			i := 0
			for range long {
				if i++; i == n {
					break
				}
			}
		}
	}
	assert.Equal(t, testing.AllocsPerRun(5, count(10)), testing.AllocsPerRun(5, count(1_000_000)))
}

// TestSourcesAtTheirLimits: the sources with arguments at the ends of their
// ranges stay within their documented bounds and saturate.
func TestSourcesAtTheirLimits(t *testing.T) {
	t.Run("Linear saturates", func(t *testing.T) {
		assert.Equal(t, []time.Duration{maxDuration, maxDuration, maxDuration}, first(Linear(maxDuration), 3))
		ds := first(Linear(maxDuration/3+1), 4)
		assert.Equal(t, []time.Duration{maxDuration/3 + 1, 2 * (maxDuration/3 + 1), maxDuration, maxDuration}, ds)
		assert.Equal(t, []time.Duration{0, 0, 0}, first(Linear(0), 3))
	})
	t.Run("Fibonacci saturates", func(t *testing.T) {
		assert.Equal(t, []time.Duration{maxDuration, maxDuration, maxDuration}, first(Fibonacci(maxDuration), 3))
		ds := first(Fibonacci(1), 100)
		assert.Equal(t, time.Duration(7540113804746346429), ds[91]) // F(92), the largest that fits
		assert.Equal(t, maxDuration, ds[92])
		assert.Equal(t, maxDuration, ds[99])
	})
	t.Run("ExponentialFactor with a factor next to 1", func(t *testing.T) {
		f := math.Nextafter(1, 2) // 1+2⁻⁵²
		ds := first(ExponentialFactor(maxDuration/2, f), 3)
		assert.Equal(t, []time.Duration{maxDuration / 2, maxDuration/2 + 1024, maxDuration/2 + 2048}, ds)
		assert.Equal(t, []time.Duration{time.Hour, time.Hour, time.Hour}, first(ExponentialFactor(time.Hour, 1+1e-16), 3))
	})
	t.Run("DecorrelatedJitter", func(t *testing.T) {
		src := rand.NewPCG(5, 6)
		for _, tc := range []struct{ base, limit time.Duration }{
			{1, 1}, {1, maxDuration}, {maxDuration, maxDuration}, {maxDuration / 3, maxDuration}, {time.Nanosecond, 2},
		} {
			prev := tc.base
			for i, d := range first(DecorrelatedJitter(tc.base, tc.limit, src), 10_000) {
				hi := min(tc.limit, mulSat(prev, 3))
				if d < tc.base || d > hi {
					t.Fatalf("DecorrelatedJitter(%d, %d): delay %d is %d, outside [%d, %d]", tc.base, tc.limit, i, d, tc.base, hi)
				}
				prev = d
			}
		}
	})
	t.Run("SmoothJitter", func(t *testing.T) {
		src := rand.NewPCG(7, 8)
		for _, median := range []time.Duration{0, 1, 2, time.Hour, maxDuration / 2, maxDuration} {
			ds := first(SmoothJitter(median, src), 2000)
			for i, d := range ds {
				if d < 0 {
					t.Fatalf("SmoothJitter(%d): delay %d is %d", median, i, d)
				}
			}
			if median > 0 {
				assert.Equal(t, maxDuration, ds[len(ds)-1], "SmoothJitter(%d) saturates", median)
			}
		}
	})
}

// TestSeededAcrossRuns: a seeded source repeats its delays when it is made
// anew (each program run, each test), while two ranges over one schedule
// continue the source's sequence, so they differ: a source holds state even
// though the schedule does not. A nil source differs from run to run.
func TestSeededAcrossRuns(t *testing.T) {
	build := func(src rand.Source) Schedule {
		return Exponential(time.Millisecond).Cap(time.Second).FullJitter(src).Take(8)
	}
	a := first(build(rand.NewPCG(1, 2)), 8)
	assert.Equal(t, a, first(build(rand.NewPCG(1, 2)), 8), "a new source with the same seed")
	s := build(rand.NewPCG(1, 2))
	assert.Equal(t, a, first(s, 8))
	assert.NotEqual(t, a, first(s, 8), "the second range continues the source")
	// These values are fixed by math/rand/v2's PCG, which never changes.
	want := make([]string, len(a))
	for i, d := range a {
		want[i] = strconv.FormatInt(int64(d), 10)
	}
	assert.Equal(t, "769374 1232873 3137712 6372773 3748420 1318568 31994352 57521136", strings.Join(want, " "))
	nilA, nilB := first(build(nil), 8), first(build(nil), 8)
	assert.NotEqual(t, nilA, nilB, "the runtime's generator")
}
