package retry

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// throttled runs n calls of one attempt each through th, each failing with
// err (nil: succeeding), and returns how many reached fn.
func throttled(t *testing.T, th *Throttle, clock Clock, n int, err error) int {
	t.Helper()
	reached := 0
	for range n {
		_ = Do(t.Context(), Delays(), func(context.Context) error { reached++; return err }, WithThrottle(th), WithClock(clock))
	}
	return reached
}

// counts returns the requests (sent or rejected) and accepts in th's
// window now, the current step included.
func (t *Throttle) counts() (requests, accepts uint64) {
	tick, _ := t.w.now(t.clock, nil)
	failed, accepts := t.w.sum(tick-(windowBuckets-1), tick)
	rejected, _ := t.rej.sum(tick-(windowBuckets-1), tick)
	return failed + accepts + rejected, accepts
}

func TestThrottleProbability(t *testing.T) {
	clock := NewFakeClock(epoch)
	// A window of 16s: steps of 1s. The probability counts the steps before
	// the current one.
	th := NewThrottle(ThrottleClock(clock), ThrottleWindow(16*time.Second), ThrottleRand(rand.NewPCG(1, 2)))
	assert.Zero(t, th.Probability())
	require.Equal(t, 10, throttled(t, th, clock, 10, nil))
	clock.Advance(time.Second)
	assert.Zero(t, th.Probability())
	// 10 requests, 10 accepts: 10 more requests without an accept make
	// (20 − 2·10)/21 = 0, the 11th (21 − 20)/22.
	require.Equal(t, 10, throttled(t, th, clock, 10, errBoom))
	assert.Zero(t, th.Probability(), "the current step does not count yet")
	clock.Advance(time.Second)
	assert.Zero(t, th.Probability())
	throttled(t, th, clock, 1, errBoom)
	clock.Advance(time.Second)
	assert.InDelta(t, 1.0/22, th.Probability(), 1e-15)
	assert.Equal(t, "retry.Throttle{p: 0.04545, K: 2}", th.String())
	assert.Equal(t, "<nil>", (*Throttle)(nil).String())

	t.Run("K", func(t *testing.T) {
		th := NewThrottle(ThrottleClock(clock), ThrottleK(1.5))
		throttled(t, th, clock, 10, nil)
		throttled(t, th, clock, 6, errBoom)
		clock.Advance(time.Second)
		assert.InDelta(t, (16-15.0)/17, th.Probability(), 1e-15)
	})

	t.Run("at most 0.9", func(t *testing.T) {
		th := NewThrottle(ThrottleClock(clock), ThrottleRand(rand.NewPCG(1, 2)))
		throttled(t, th, clock, 1000, errBoom)
		clock.Advance(time.Second)
		assert.Equal(t, 0.9, th.Probability(), "1000 failures and no accept")
		// However long it lasts, a tenth of the attempts go out.
		reached := 0
		for range 1000 {
			clock.Advance(10 * time.Millisecond)
			reached += throttled(t, th, clock, 1, errBoom)
		}
		assert.InDelta(t, 100, reached, 30)
		assert.Equal(t, 0.9, th.Probability())
	})

	t.Run("the weight", func(t *testing.T) {
		// A window of 16s, a failed share at the balance of K = 2 (a half)
		// over the last 8s: the book's probability. A quarter of that share
		// or more: the same. Less: in proportion, down to 0.
		for _, tt := range []struct {
			name           string
			failed, answer int // in the last 8s, after 8s of 100 failures
			want           float64
		}{
			{"balance", 10, 10, 1},
			{"a quarter of the balance", 1, 7, 1},
			{"half of that", 1, 15, 0.5},
			{"none failed", 0, 20, 0},
		} {
			t.Run(tt.name, func(t *testing.T) {
				clock := NewFakeClock(epoch)
				th := NewThrottle(ThrottleClock(clock), ThrottleWindow(16*time.Second), ThrottleRand(rand.NewPCG(1, 2)))
				throttled(t, th, clock, 100, errBoom)
				clock.Advance(8 * time.Second)
				// p is 0.9 now; the calls below are made under a fresh
				// Throttle's counts so that none is rejected: the same
				// counts, made directly.
				tick, _ := th.w.now(clock, nil)
				for range tt.failed {
					th.settle(throttleTicket{tick: tick, ok: true}, failed)
				}
				for range tt.answer {
					th.settle(throttleTicket{tick: tick, ok: true}, accepted)
				}
				clock.Advance(time.Second)
				r, a := float64(100+tt.failed+tt.answer), float64(tt.answer)
				book := min(0.9, max(0, (r-2*a)/(r+1)))
				assert.InDelta(t, tt.want*book, th.Probability(), 1e-12)
			})
		}
	})
}

// TestThrottleWhatCounts pins what a Throttle counts as a request and as
// an accept.
func TestThrottleWhatCounts(t *testing.T) {
	clock := NewFakeClock(epoch)
	th := NewThrottle(ThrottleClock(clock))
	do := func(fn func(context.Context) error, opts ...Option) {
		_ = Do(t.Context(), Constant(0).Take(1), fn, append(opts, WithThrottle(th), WithClock(clock))...)
	}
	type counts struct{ requests, accepts uint64 }
	get := func() counts { r, a := th.counts(); return counts{r, a} }
	do(func(context.Context) error { return nil })
	assert.Equal(t, counts{1, 1}, get(), "a success")
	do(func(context.Context) error { return Permanent(errBoom) })
	assert.Equal(t, counts{2, 2}, get(), "a Permanent error: an answer")
	do(func(context.Context) error { return errBoom }, If(func(error) bool { return false }))
	assert.Equal(t, counts{3, 3}, get(), "an error If rejects: an answer")
	do(func(context.Context) error { return RetryAfter(errBoom, -1) })
	assert.Equal(t, counts{4, 3}, get(), "a server's \"don't retry\": pushback")
	do(func(context.Context) error { return errBoom })
	assert.Equal(t, counts{6, 3}, get(), "a retryable error, retried once: 2 requests")
	ctx, cancel := context.WithCancel(t.Context())
	_ = Do(ctx, Constant(0), func(context.Context) error { cancel(); return context.Canceled }, WithThrottle(th), WithClock(clock))
	assert.Equal(t, counts{6, 3}, get(), "ended by the caller's context: nothing")
	synctest.Test(t, func(t *testing.T) {
		th := NewThrottle()
		_ = Do(t.Context(), Delays(), func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
			AttemptTimeout(time.Second), WithThrottle(th), If(func(error) bool { return false }))
		r, a := th.counts()
		assert.Equal(t, counts{1, 0}, counts{r, a}, "an attempt's own timeout: no accept, whatever If says")
	})
}

// TestThrottleInFlightBurst checks that attempts still in flight count
// against nothing: 100 concurrent first calls to a new Throttle, all
// waiting for their answer, must not make the next call's rejection
// probability 100/101, as counting a request before its answer would.
func TestThrottleInFlightBurst(t *testing.T) {
	clock := NewFakeClock(epoch)
	th := NewThrottle(ThrottleClock(clock), ThrottleRand(rand.NewPCG(1, 2)))
	const inFlight = 100
	// Each goroutine reports once on ready: nil from inside its attempt, or
	// the error of a call that never made one.
	ready := make(chan error, inFlight)
	answer := make(chan struct{})
	errs := make(chan error, inFlight)
	for range inFlight {
		go func() {
			var entered bool
			err := Do(t.Context(), Delays(), func(context.Context) error {
				entered = true
				ready <- nil
				<-answer
				return nil
			}, WithThrottle(th), WithClock(clock))
			if !entered {
				ready <- err
			}
			errs <- err
		}()
	}
	var refused int
	for range inFlight {
		if <-ready != nil {
			refused++
		}
	}
	require.Zero(t, refused, "first calls refused while the others were in flight")
	assert.Zero(t, th.Probability(), "attempts in flight")
	for i := range 100 {
		require.NoError(t, Do(t.Context(), Delays(), func(context.Context) error { return nil }, WithThrottle(th), WithClock(clock)), "call %d while %d are in flight", i, inFlight)
	}
	close(answer)
	for range inFlight {
		require.NoError(t, <-errs)
	}
	r, a := th.counts()
	assert.Equal(t, [2]uint64{inFlight + 100, inFlight + 100}, [2]uint64{r, a})
}

// TestThrottleCancelledBurst checks that callers who give up raise no
// rejection probability: a burst of calls whose context ends during their
// attempt counts for nothing.
func TestThrottleCancelledBurst(t *testing.T) {
	clock := NewFakeClock(epoch)
	th := NewThrottle(ThrottleClock(clock))
	for range 1000 {
		ctx, cancel := context.WithCancel(t.Context())
		err := Do(ctx, Constant(0), func(ctx context.Context) error { cancel(); return ctx.Err() }, WithThrottle(th), WithClock(clock))
		require.ErrorIs(t, err, context.Canceled)
	}
	assert.Zero(t, th.Probability())
	r, a := th.counts()
	assert.Zero(t, r+a)
}

func TestThrottleRejects(t *testing.T) {
	clock := NewFakeClock(epoch)
	th := NewThrottle(ThrottleClock(clock), ThrottleRand(rand.NewPCG(1, 2)))
	throttled(t, th, clock, 100, errBoom)
	clock.Advance(time.Second)
	// No accepts: p = R/(R+1) with R = 100 requests, at most 0.9.
	assert.Equal(t, 0.9, th.Probability())
	r, _ := th.counts()
	assert.Equal(t, uint64(100), r)

	t.Run("before the first attempt", func(t *testing.T) {
		budget := NewBudget(0.5, 10)
		var outcome Outcome
		calls := 0
		var err error
		for calls = 1; calls > 0; { // the 10% let through: again
			calls = 0
			err = Do(t.Context(), Constant(0).Take(3), func(context.Context) error { calls++; return errBoom },
				WithThrottle(th), WithClock(clock), WithBudget(budget), OnDone(func(o Outcome) { outcome = o }))
		}
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.ErrorIs(t, err, ErrThrottled)
		assert.Zero(t, e.Attempts)
		assert.Nil(t, e.Last)
		assert.Empty(t, clock.Sleeps(), "a rejected call does not wait")
		assert.Equal(t, ErrThrottled, outcome.Reason)
		assert.Equal(t, err, outcome.Err)
	})

	t.Run("a retry", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		th := NewThrottle(ThrottleClock(clock), ThrottleK(1), ThrottleRand(rand.NewPCG(3, 4)))
		budget := NewBudget(0, 1000)
		calls := 0
		err := Do(t.Context(), Constant(time.Second), func(context.Context) error { calls++; return errBoom },
			WithThrottle(th), WithClock(clock), WithBudget(budget))
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.ErrorIs(t, err, ErrThrottled)
		assert.ErrorIs(t, err, errBoom)
		assert.Equal(t, calls, e.Attempts)
		assert.Equal(t, float64(1000-calls+1), budget.Tokens(), "the rejected retry took no token")
		assert.Len(t, clock.Sleeps(), calls-1, "nor waited")
	})

	t.Run("the window slides", func(t *testing.T) {
		clock.Advance(2 * time.Minute)
		assert.Zero(t, th.Probability())
		assert.Equal(t, 5, throttled(t, th, clock, 5, nil))
	})
}

// TestThrottleLoad checks the point of a Throttle: when the dependency can
// answer only a tenth of the calls, what reaches it settles near K times
// what it answers, as the SRE book says.
func TestThrottleLoad(t *testing.T) {
	clock := NewFakeClock(epoch)
	th := NewThrottle(ThrottleClock(clock), ThrottleRand(rand.NewPCG(5, 6)))
	const perSecond, capacity, seconds = 100, 10, 1200
	reached, accepted := 0, 0
	for range seconds {
		clock.Advance(time.Second)
		room := capacity
		for range perSecond {
			_ = Do(t.Context(), Delays(), func(context.Context) error {
				reached++
				if room > 0 {
					room--
					accepted++
					return nil
				}
				return errBoom
			}, WithThrottle(th), WithClock(clock))
		}
	}
	assert.InDelta(t, capacity*seconds, accepted, capacity*seconds/100, "the dependency is kept busy")
	t.Logf("reached %d, accepted %d: %.3f×", reached, accepted, float64(reached)/float64(accepted))
	assert.InDelta(t, 2, float64(reached)/float64(accepted), 0.05, "reached %d, accepted %d", reached, accepted)
}

// TestThrottleHedge checks that each attempt Hedge starts asks the
// Throttle, and that losers Hedge cancels count for nothing.
func TestThrottleHedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		th := NewThrottle()
		throttled(t, th, nil, 10, nil) // accepts, so that the hedges are let through
		var calls atomic.Int32
		v, err := Hedge(t.Context(), Constant(10*time.Millisecond).Take(2), func(ctx context.Context) (int, error) {
			n := calls.Add(1)
			if n < 3 {
				<-ctx.Done() // the first two are slow: the third wins
				return 0, ctx.Err()
			}
			return int(n), nil
		}, WithThrottle(th))
		require.NoError(t, err)
		assert.Equal(t, 3, v)
		synctest.Wait() // the losers have returned
		r, a := th.counts()
		assert.Equal(t, [2]uint64{11, 11}, [2]uint64{r, a}, "3 requests, 2 taken back")
	})
	t.Run("rejected", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			th := NewThrottle(ThrottleK(1), ThrottleRand(rand.NewPCG(1, 1)))
			for range 10 {
				_ = Do(t.Context(), Delays(), func(context.Context) error { return errBoom }, WithThrottle(th))
			}
			for {
				var calls atomic.Int32
				_, err := Hedge(t.Context(), Constant(10*time.Millisecond), func(ctx context.Context) (int, error) {
					calls.Add(1)
					time.Sleep(15 * time.Millisecond)
					return 0, errBoom
				}, WithThrottle(th))
				assert.ErrorIs(t, err, ErrThrottled)
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, int(calls.Load()), e.Attempts)
				if e.Attempts > 0 {
					assert.ErrorIs(t, err, errBoom)
					return // a hedge was rejected after the first attempt
				}
			}
		})
	})
}

func TestThrottleBadInput(t *testing.T) {
	for _, tt := range []struct {
		name, want string
		f          func()
	}{
		{"K below 1", "retry: ThrottleK: K 0.5 is not between 1 and 1e+09", func() { ThrottleK(0.5) }},
		{"K NaN", "retry: ThrottleK: K NaN is not between 1 and 1e+09", func() { ThrottleK(nan()) }},
		{"K infinite", "retry: ThrottleK: K +Inf is not between 1 and 1e+09", func() { ThrottleK(inf()) }},
		{"window 0", "retry: ThrottleWindow: window 0s is not positive", func() { ThrottleWindow(0) }},
		{"window negative", "retry: ThrottleWindow: window -1s is not positive", func() { ThrottleWindow(-time.Second) }},
		{"nil Throttle", "retry: WithThrottle: nil Throttle", func() { WithThrottle(nil) }},
		{"zero Throttle", "retry: WithThrottle: the zero Throttle; make one with NewThrottle", func() { WithThrottle(&Throttle{}) }},
		{"zero Throttle's Probability", "retry: Throttle.Probability: the zero Throttle; make one with NewThrottle", func() { _ = new(Throttle).Probability() }},
	} {
		t.Run(tt.name, func(t *testing.T) { assert.PanicsWithValue(t, tt.want, tt.f) })
	}
}

// TestThrottleZero checks that the zero Throttle says what it is and
// cannot reach a call: it has no window to count in.
func TestThrottleZero(t *testing.T) {
	var th Throttle
	assert.Equal(t, "retry.Throttle{}", th.String())
	assert.PanicsWithValue(t, "retry: WithThrottle: the zero Throttle; make one with NewThrottle", func() {
		_ = Do(t.Context(), Delays(), func(context.Context) error { return nil }, WithThrottle(&th))
	})
}

func nan() float64 { z := 0.0; return z / z }
func inf() float64 { z := 0.0; return 1 / z }

// FuzzThrottle checks a Throttle's arithmetic against a model: a map of
// steps, summed over the window and over its last half. Each byte of ops is a step: advance the
// clock, or an attempt that is accepted, fails or is cancelled.
func FuzzThrottle(f *testing.F) {
	f.Add([]byte{1, 2, 2, 2, 3, 0x40, 2, 2}, 2.0, uint64(1))
	f.Add([]byte{2, 2, 2, 2, 2, 2, 1, 0xfc, 2, 2, 0x10, 1, 3, 3}, 1.0, uint64(2))
	f.Fuzz(func(t *testing.T, ops []byte, k float64, seed uint64) {
		if !(k >= 1 && k <= maxK) {
			return
		}
		const window = 16 * time.Second
		clock := NewFakeClock(epoch)
		th := NewThrottle(ThrottleClock(clock), ThrottleK(k), ThrottleWindow(window), ThrottleRand(rand.NewPCG(seed, seed)))
		type counts struct{ sent, a, rejected int64 }
		model := map[int64]counts{}
		tick := int64(0)
		// want is the Throttle's rule, written out: the book's formula over
		// the 15 steps before the current one, rejections included, at
		// most 0.9, times the weight from the 8 steps before it.
		want := func() float64 {
			var r, a, sent, acc int64
			for tk, c := range model {
				if tk >= tick-(windowBuckets-1) && tk < tick {
					r += c.sent + c.rejected
					a += c.a
				}
				if tk >= tick-8 && tk < tick {
					sent += c.sent
					acc += c.a
				}
			}
			p := min(0.9, max(0, (float64(r)-k*float64(a))/(float64(r)+1)))
			switch failed := float64(sent - acc); {
			case sent == 0:
			case failed == 0:
				p = 0
			default:
				p *= min(1, failed/(float64(sent)*(1-1/k)/4))
			}
			return p
		}
		for _, op := range ops {
			if op&3 == 0 {
				d := time.Duration(op>>2) * time.Second / 4 // up to 15.75s
				clock.Advance(d)
				tick = int64(clock.Now().Sub(epoch) / time.Second)
				continue
			}
			p := want()
			require.InDelta(t, p, th.current(tick), 1e-12, "the hot path's probability")
			require.InDelta(t, p, th.Probability(), 1e-12)
			require.True(t, p >= 0 && p <= 0.9)
			tk, ok := th.admit(nil)
			c := model[tick]
			if !ok {
				c.rejected++
			} else {
				switch op & 3 {
				case 1:
					th.settle(tk, accepted)
					c.sent++
					c.a++
				case 2:
					th.settle(tk, failed)
					c.sent++
				case 3:
					th.settle(tk, neither)
				}
			}
			model[tick] = c
		}
	})
}

// TestThrottleInParallel checks that concurrent attempts are all counted,
// whichever stripes they land in.
func TestThrottleInParallel(t *testing.T) {
	clock := NewFakeClock(epoch)
	th := NewThrottle(ThrottleClock(clock))
	const goroutines, calls = 10, 1000
	done := make(chan struct{})
	for range goroutines {
		go func() {
			defer func() { done <- struct{}{} }()
			for range calls {
				_ = Do(t.Context(), Delays(), func(context.Context) error { return nil }, WithThrottle(th), WithClock(clock))
			}
		}()
	}
	for range goroutines {
		<-done
	}
	r, a := th.counts()
	assert.Equal(t, [2]uint64{goroutines * calls, goroutines * calls}, [2]uint64{r, a})
	assert.Zero(t, th.Probability())
}

// lockoutRun offers perSecond one-attempt calls a second, evenly spaced, to
// th on clock for d, against a dependency that answers them if up, and
// returns how many th let through.
func lockoutRun(t *testing.T, th *Throttle, clock *FakeClock, perSecond int, d time.Duration, up bool) (offered, through int) {
	t.Helper()
	gap := time.Second / time.Duration(perSecond)
	for range int(d / gap) {
		clock.Advance(gap)
		offered++
		_ = Do(t.Context(), Delays(), func(context.Context) error {
			through++
			if up {
				return nil
			}
			return errBoom
		}, WithThrottle(th), WithClock(clock))
	}
	return offered, through
}

// TestThrottleNeverLocksOut checks that a Throttle with its defaults lets
// the calls through again soon after a dependency that was hard down
// answers again, however long it was down and whether or not the Throttle
// had seen it healthy first: from 5 s after the recovery on (with the
// default window), every second lets through at least 90% of the attempts.
func TestThrottleNeverLocksOut(t *testing.T) {
	const perSecond = 50
	for _, tt := range []struct {
		name            string
		healthy, outage time.Duration
		window          time.Duration // 0: the default
		within          int           // seconds after the recovery
	}{
		{"cold start, 5s outage", 0, 5 * time.Second, 0, 5},
		{"cold start, 30-minute outage", 0, 30 * time.Minute, 0, 5},
		{"after 5 minutes healthy, 30-minute outage", 5 * time.Minute, 30 * time.Minute, 0, 5},
		{"after 5 minutes healthy, 20s outage", 5 * time.Minute, 20 * time.Second, 0, 5},
		// A longer window takes about half of it.
		{"1-minute window, 30-minute outage", 5 * time.Minute, 30 * time.Minute, time.Minute, 35},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := NewFakeClock(epoch)
			opts := []ThrottleOption{ThrottleClock(clock), ThrottleRand(rand.NewPCG(7, 8))}
			if tt.window > 0 {
				opts = append(opts, ThrottleWindow(tt.window))
			}
			th := NewThrottle(opts...)
			lockoutRun(t, th, clock, perSecond, tt.healthy, true)
			lockoutRun(t, th, clock, perSecond, tt.outage, false)
			var first []int // let through in each second before, for the message
			for range tt.within {
				_, through := lockoutRun(t, th, clock, perSecond, time.Second, true)
				first = append(first, through)
			}
			for s := tt.within; s < tt.within+60; s++ {
				offered, through := lockoutRun(t, th, clock, perSecond, time.Second, true)
				if through < offered*9/10 {
					t.Fatalf("second %d after the recovery: %d of %d let through, want at least 90%% (the seconds before: %v of %d each; p now %.3f)",
						s, through, offered, first, perSecond, th.Probability())
				}
			}
		})
	}
}
