package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBudgetArithmetic(t *testing.T) {
	b := NewBudget(0.5, 2)
	always := func(calls *int) func(context.Context) error {
		return func(context.Context) error { *calls++; return errBoom }
	}
	sched := Constant(0).Take(5)
	clock := &countingClock{}
	tests := []struct {
		name      string
		wantCalls int
		wantErr   error
	}{
		// The balance starts full at 2; the deposit of 0.5 is lost to the cap.
		{"spends the reserve", 3, ErrBudgetExhausted},         // 2 → 1 → 0, third retry refused
		{"half a token is not enough", 1, ErrBudgetExhausted}, // 0 + 0.5
		{"a whole token again", 2, ErrBudgetExhausted},        // 0.5 + 0.5 = 1 → 0
		{"empty again", 1, ErrBudgetExhausted},                // 0.5
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := Do(t.Context(), sched, always(&calls), WithBudget(b), WithClock(clock))
			assert.Equal(t, tt.wantCalls, calls)
			assert.ErrorIs(t, err, tt.wantErr)
			assert.ErrorIs(t, err, errBoom)
			var re *Error
			require.ErrorAs(t, err, &re)
			assert.Equal(t, tt.wantCalls, re.Attempts)
		})
	}
	t.Run("message", func(t *testing.T) {
		err := Do(t.Context(), sched, func(context.Context) error { return errBoom }, WithBudget(NewBudget(0, 0)))
		assert.EqualError(t, err, "retry: gave up after 1 attempt: budget exhausted: last error: boom")
	})
	t.Run("successes refill up to the reserve and no further", func(t *testing.T) {
		b := NewBudget(0.25, 3)
		for range 100 {
			require.NoError(t, Do(t.Context(), sched, func(context.Context) error { return nil }, WithBudget(b)))
		}
		calls := 0
		_ = Do(t.Context(), Constant(0).Take(10), always(&calls), WithBudget(b), WithClock(clock))
		assert.Equal(t, 1+3, calls, "100 deposits of 0.25 still leave only the reserve of 3")
	})
	t.Run("ratio +Inf refills the reserve on every call", func(t *testing.T) {
		b := NewBudget(math.Inf(1), 2)
		for range 3 {
			calls := 0
			_ = Do(t.Context(), Constant(0).Take(10), always(&calls), WithBudget(b), WithClock(clock))
			assert.Equal(t, 3, calls)
		}
	})
	t.Run("the first attempt never needs a token", func(t *testing.T) {
		b := NewBudget(0, 0)
		calls := 0
		assert.NoError(t, Do(t.Context(), sched, func(context.Context) error { calls++; return nil }, WithBudget(b)))
		assert.Equal(t, 1, calls)
	})
	t.Run("a huge reserve does not overflow", func(t *testing.T) {
		b := NewBudget(math.MaxFloat64, math.MaxInt)
		calls := 0
		_ = Do(t.Context(), Constant(0).Take(1000), always(&calls), WithBudget(b), WithClock(clock))
		assert.Equal(t, 1001, calls)
	})
}

// TestBudgetOutage sends many concurrent requests to a dependency that is
// completely down: however the goroutines interleave, the calls that reach
// it stay within requests·(1+ratio) + reserve.
func TestBudgetOutage(t *testing.T) {
	const (
		goroutines = 1000
		perG       = 5
		ratio      = 0.1
		reserve    = 10
	)
	b := NewBudget(ratio, reserve)
	sched := Exponential(ms).Cap(s1).FullJitter(nil).Take(5) // one Schedule shared by all
	clock := &countingClock{}
	var calls, refused atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range perG {
				err := Do(context.Background(), sched, func(context.Context) error {
					calls.Add(1)
					return errBoom
				}, WithBudget(b), WithClock(clock))
				if errors.Is(err, ErrBudgetExhausted) {
					refused.Add(1)
				} else {
					assert.ErrorIs(t, err, ErrExhausted)
				}
				assert.ErrorIs(t, err, errBoom)
			}
		})
	}
	wg.Wait()
	requests := int64(goroutines * perG)
	bound := int64(float64(requests)*(1+ratio)) + reserve
	assert.LessOrEqual(t, calls.Load(), bound)
	assert.GreaterOrEqual(t, calls.Load(), requests+reserve, "the reserve and the ratio are both spent")
	assert.Greater(t, refused.Load(), requests*8/10, "most requests found the budget empty")
	t.Logf("%d requests made %d calls (bound %d, %.1f%% retries); %d refused", requests, calls.Load(), bound,
		100*float64(calls.Load()-requests)/float64(requests), refused.Load())
}

// TestBudgetHealthy runs many concurrent requests against a dependency that
// fails 3% of attempts at random: with a 10% budget no retry is ever refused.
func TestBudgetHealthy(t *testing.T) {
	const (
		goroutines = 1000
		perG       = 50
	)
	b := NewBudget(0.1, 10)
	sched := Exponential(ms).Cap(s1).FullJitter(nil).Take(5)
	clock := &countingClock{}
	var calls, retried atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 3))
			for range perG {
				err := Do(context.Background(), sched, func(context.Context) error {
					calls.Add(1)
					if rng.Float64() < 0.03 {
						return errBoom
					}
					return nil
				}, WithBudget(b), WithClock(clock), OnRetry(func(Attempt) { retried.Add(1) }))
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	assert.Positive(t, retried.Load())
	t.Logf("%d requests, %d calls, %d retries, none refused", goroutines*perG, calls.Load(), retried.Load())
}

// cancelingClock is a Clock whose Sleep cancels the call's context: before
// the wait ends, or, with after set, once it has ended.
type cancelingClock struct {
	cancel context.CancelFunc
	after  bool
}

func (*cancelingClock) Now() time.Time { return epoch }
func (c *cancelingClock) Sleep(ctx context.Context, _ time.Duration) error {
	c.cancel()
	if c.after {
		return nil
	}
	return ctx.Err()
}

// TestBudgetRefund: a retry that does not happen, because the call ended
// during its wait, costs no token.
func TestBudgetRefund(t *testing.T) {
	for _, after := range []bool{false, true} {
		t.Run(fmt.Sprintf("cancelled after the wait: %v", after), func(t *testing.T) {
			b := NewBudget(0, 1)
			ctx, cancel := context.WithCancel(t.Context())
			calls := 0
			err := Do(ctx, Constant(s1).Take(3), func(context.Context) error { calls++; return errBoom },
				WithBudget(b), WithClock(&cancelingClock{cancel: cancel, after: after}))
			assert.ErrorIs(t, err, context.Canceled)
			assert.Equal(t, 1, calls)

			// The next call's only retry is still allowed.
			calls = 0
			err = Do(t.Context(), Constant(s1).Take(3), func(context.Context) error { calls++; return errBoom },
				WithBudget(b), WithClock(NewFakeClock(epoch)))
			assert.ErrorIs(t, err, ErrBudgetExhausted)
			assert.Equal(t, 2, calls, "the reserve's one token pays for one retry")
		})
	}
	t.Run("a refund never lifts the balance above the reserve", func(t *testing.T) {
		b := NewBudget(0, 1)
		b.refund()
		assert.True(t, b.withdraw())
		assert.False(t, b.withdraw())
	})
}

// TestBudgetTinyRatio checks both sides of the smallest ratio: 1e-6 refills
// one token in exactly a million calls, and anything smaller but above 0,
// which billionths of a token cannot represent faithfully, panics.
func TestBudgetTinyRatio(t *testing.T) {
	t.Run("smallest ratio refills exactly", func(t *testing.T) {
		b := NewBudget(1e-6, 1)
		require.True(t, b.withdraw())
		for range 999_999 {
			b.credit()
		}
		assert.False(t, b.withdraw(), "999 999 deposits of 1e-6 are not a token")
		b.credit()
		assert.True(t, b.withdraw(), "a million deposits of 1e-6 are one token")
	})
	t.Run("zero still never refills", func(t *testing.T) {
		b := NewBudget(0, 1)
		require.True(t, b.withdraw())
		for range 1000 {
			b.credit()
		}
		assert.False(t, b.withdraw())
	})
	for _, ratio := range []float64{math.Nextafter(1e-6, 0), 1.5e-9, 4e-10, math.SmallestNonzeroFloat64} {
		t.Run("panics at "+strconv.FormatFloat(ratio, 'g', -1, 64), func(t *testing.T) {
			assert.PanicsWithValue(t, "retry: NewBudget: ratio "+strconv.FormatFloat(ratio, 'g', -1, 64)+
				" is below 1e-06, the smallest supported other than 0", func() { NewBudget(ratio, 1) })
		})
	}
}

func TestBudgetState(t *testing.T) {
	t.Run("tokens and string follow the balance", func(t *testing.T) {
		b := NewBudget(0.1, 10)
		assert.Equal(t, 10.0, b.Tokens())
		assert.Equal(t, "retry.Budget{tokens: 10/10, ratio: 0.1}", b.String())
		for range 3 {
			require.True(t, b.withdraw())
		}
		for range 5 {
			b.credit()
		}
		assert.Equal(t, 7.5, b.Tokens())
		assert.Equal(t, "retry.Budget{tokens: 7.5/10, ratio: 0.1}", fmt.Sprint(b))
		for range 7 {
			require.True(t, b.withdraw())
		}
		b.credit()
		b.credit()
		b.credit()
		assert.Equal(t, 0.8, b.Tokens(), "exact to a billionth, so 0.5+0.3 prints as 0.8")
		assert.Equal(t, "retry.Budget{tokens: 0.8/10, ratio: 0.1}", fmt.Sprintf("%v", b))
	})
	tests := []struct {
		name   string
		b      *Budget
		tokens float64
		want   string
	}{
		{"empty", NewBudget(0, 0), 0, "retry.Budget{tokens: 0/0, ratio: 0}"},
		{"smallest ratio", NewBudget(1e-6, 3), 3, "retry.Budget{tokens: 3/3, ratio: 1e-06}"},
		{"infinite ratio", NewBudget(math.Inf(1), 2), 2, "retry.Budget{tokens: 2/2, ratio: +Inf}"},
		{"huge reserve", NewBudget(1, math.MaxInt), maxReserve, "retry.Budget{tokens: 4.611686018e+09/4611686018, ratio: 1}"},
		{"nil", nil, 0, "<nil>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.b.String())
			assert.Equal(t, tt.want, fmt.Sprint(tt.b))
			if tt.b != nil {
				assert.Equal(t, tt.tokens, tt.b.Tokens())
			}
		})
	}
	t.Run("read while calls spend and refill it", func(t *testing.T) {
		b := NewBudget(0.5, 5)
		clock := &countingClock{}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 200 {
					_ = Do(context.Background(), Constant(0).Take(2), func(context.Context) error { return errBoom },
						WithBudget(b), WithClock(clock))
				}
			})
		}
		wg.Go(func() {
			for range 1000 {
				if n := b.Tokens(); n < 0 || n > 5 {
					t.Errorf("Tokens() = %v, outside [0, 5]", n)
				}
				_ = b.String()
			}
		})
		wg.Wait()
	})
}

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
