package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPushbackWait(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		sched Schedule
		opts  []Option
		want  time.Duration
	}{
		{"longer than the schedule", RetryAfter(errBoom, 5*s1), Constant(s1), nil, 5 * s1},
		{"shorter than the schedule", RetryAfter(errBoom, 500*ms), Constant(s1), nil, s1},
		{"zero", RetryAfter(errBoom, 0), Constant(s1), nil, s1},
		{"up to the default limit of a minute", RetryAfter(errBoom, time.Minute), Constant(s1), nil, time.Minute},
		{"up to MaxPushback", RetryAfter(errBoom, 10*s1), Constant(s1), []Option{MaxPushback(10 * s1)}, 10 * s1},
		{"the limit never cuts the schedule", RetryAfter(errBoom, 30*s1), Constant(time.Hour), []Option{MaxPushback(10 * s1)}, time.Hour},
		{"MaxPushback(0) ignores pushback", RetryAfter(errBoom, 30*s1), Constant(s1), []Option{MaxPushback(0)}, s1},
		{"a later MaxPushback wins", RetryAfter(errBoom, 15*s1), Constant(s1), []Option{MaxPushback(10 * s1), MaxPushback(20 * s1)}, 15 * s1},
		{"hostile duration with no limit", RetryAfter(errBoom, maxDuration), Constant(s1), []Option{MaxPushback(maxDuration)}, maxDuration},
		{"RetryAt on the retry's clock", RetryAt(errBoom, epoch.Add(7*s1)), Constant(s1), nil, 7 * s1},
		{"RetryAt in the past", RetryAt(errBoom, epoch.Add(-time.Hour)), Constant(s1), nil, s1},
		{"RetryAt zero time", RetryAt(errBoom, time.Time{}), Constant(s1), nil, s1},
		{"RetryAt at the end of time", RetryAt(errBoom, time.Unix(math.MaxInt64/2, 0)), Constant(s1), []Option{MaxPushback(maxDuration)}, maxDuration},
		{"wrapped pushback counts", fmt.Errorf("get: %w", RetryAfter(errBoom, 3*s1)), Constant(s1), nil, 3 * s1},
		{"outermost pushback counts", RetryAfter(RetryAfter(errBoom, 9*s1), 3*s1), Constant(s1), nil, 3 * s1},
		{"pushback inside a join", errors.Join(errors.New("x"), RetryAfter(errBoom, 4*s1)), Constant(s1), nil, 4 * s1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := NewFakeClock(epoch)
			var delays []time.Duration
			calls := 0
			_, err := Retry(t.Context(), tt.sched.Take(1), script(&calls, tt.err, errBoom),
				append(tt.opts, WithClock(clock), OnRetry(func(a Attempt) { delays = append(delays, a.Delay) }))...)
			assert.Equal(t, 2, calls)
			assert.Equal(t, []time.Duration{tt.want}, clock.Sleeps())
			assert.Equal(t, []time.Duration{tt.want}, delays, "Attempt.Delay is the wait used")
			assert.ErrorIs(t, err, ErrExhausted)
		})
	}
}

// TestPushbackTooLong: a pushback longer than MaxPushback, or than the
// deadline leaves, ends the call at once with a reason that says so.
func TestPushbackTooLong(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		sched Schedule
		opts  []Option
		want  PushbackTooLongError
	}{
		{"over the default limit of a minute", RetryAfter(errBoom, 2*time.Hour), Constant(s1), nil, PushbackTooLongError{Wait: 2 * time.Hour, Limit: time.Minute}},
		{"over MaxPushback", RetryAfter(errBoom, 30*s1), Constant(s1), []Option{MaxPushback(10 * s1)}, PushbackTooLongError{Wait: 30 * s1, Limit: 10 * s1}},
		{"a later MaxPushback wins", RetryAfter(errBoom, 30*s1), Constant(s1), []Option{MaxPushback(0), MaxPushback(20 * s1)}, PushbackTooLongError{Wait: 30 * s1, Limit: 20 * s1}},
		{"hostile duration", RetryAfter(errBoom, maxDuration), Constant(s1), nil, PushbackTooLongError{Wait: maxDuration, Limit: time.Minute}},
		{"RetryAt in the year 9999", RetryAt(errBoom, epoch.Add(time.Hour)), Constant(s1), nil, PushbackTooLongError{Wait: time.Hour, Limit: time.Minute}},
		{"on the flat loop too", RetryAfter(errBoom, 2*time.Minute), Exponential(s1), []Option{MaxPushback(time.Minute)}, PushbackTooLongError{Wait: 2 * time.Minute, Limit: time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := NewFakeClock(epoch)
			calls := 0
			_, err := Retry(t.Context(), tt.sched.Take(3), script(&calls, tt.err, errBoom), append(tt.opts, WithClock(clock))...)
			assert.Equal(t, 1, calls)
			assert.Empty(t, clock.Sleeps(), "no wait is started")
			assert.ErrorIs(t, err, ErrPushbackTooLong)
			assert.ErrorIs(t, err, errBoom)
			assert.NotErrorIs(t, err, context.DeadlineExceeded)
			var pe *PushbackTooLongError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tt.want, *pe)
		})
	}
	t.Run("the deadline is the bound", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*s1)
		defer cancel()
		calls := 0
		_, err := Retry(ctx, Constant(s1), script(&calls, RetryAfter(errBoom, 45*s1)), WithClock(NewFakeClock(epoch)))
		assert.Equal(t, 1, calls)
		assert.ErrorIs(t, err, ErrPushbackTooLong)
		assert.ErrorIs(t, err, context.DeadlineExceeded, "callers that matched the deadline still do")
		var pe *PushbackTooLongError
		require.ErrorAs(t, err, &pe)
		assert.True(t, pe.Deadline)
		assert.Equal(t, 45*s1, pe.Wait)
		assert.InDelta(t, float64(30*s1), float64(pe.Limit), float64(s1))
		assert.Contains(t, err.Error(), "server asked to wait 45s, more than the ")
	})
	t.Run("the schedule, not the pushback, passes the deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*s1)
		defer cancel()
		calls := 0
		_, err := Retry(ctx, Constant(time.Minute), script(&calls, RetryAfter(errBoom, 45*s1)), WithClock(NewFakeClock(epoch)))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotErrorIs(t, err, ErrPushbackTooLong)
	})
	t.Run("a schedule delay longer than the pushback honours it", func(t *testing.T) {
		clock, calls := NewFakeClock(epoch), 0
		_, err := Retry(t.Context(), Constant(time.Hour).Take(1), script(&calls, RetryAfter(errBoom, 2*time.Minute), errBoom), WithClock(clock))
		assert.ErrorIs(t, err, ErrExhausted)
		assert.Equal(t, []time.Duration{time.Hour}, clock.Sleeps())
	})
	t.Run("the message", func(t *testing.T) {
		calls := 0
		_, err := Retry(t.Context(), Constant(s1), script(&calls, RetryAfter(errBoom, 2*time.Minute)), WithClock(NewFakeClock(epoch)))
		assert.EqualError(t, err, "retry: gave up after 1 attempt: server asked to wait 2m0s, more than MaxPushback (1m0s): last error: boom")
	})
}

func TestPushbackRules(t *testing.T) {
	t.Run("the marker is transparent", func(t *testing.T) {
		err := RetryAfter(errBoom, s1)
		assert.ErrorIs(t, err, errBoom)
		assert.EqualError(t, err, "boom")
		var pe *pathError
		assert.ErrorAs(t, RetryAt(&pathError{"p"}, epoch), &pe)
		assert.Nil(t, RetryAfter(nil, s1))
		assert.Nil(t, RetryAt(nil, epoch))
	})
	t.Run("Last and Attempt.Err are unmarked", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		calls := 0
		var seen error
		_, err := Retry(t.Context(), Constant(0).Take(1), script(&calls, RetryAfter(errBoom, s1), RetryAfter(errBoom, s1)),
			WithClock(clock), OnRetry(func(a Attempt) { seen = a.Err }))
		var re *Error
		require.ErrorAs(t, err, &re)
		assert.Same(t, errBoom, re.Last)
		assert.Same(t, errBoom, seen)
	})
	t.Run("a negative pushback stops at once", func(t *testing.T) {
		calls := 0
		_, err := Retry(t.Context(), Constant(0), script(&calls, RetryAfter(errBoom, -1)))
		assert.Equal(t, 1, calls)
		assert.Same(t, errBoom, err)
	})
	t.Run("it still uses up the schedule", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		calls := 0
		_, err := Retry(t.Context(), Constant(0).Take(2), script(&calls, repeat(RetryAfter(errBoom, s1), 9)...), WithClock(clock))
		assert.Equal(t, 3, calls)
		assert.Equal(t, []time.Duration{s1, s1}, clock.Sleeps())
		assert.ErrorIs(t, err, ErrExhausted)
	})
	t.Run("Permanent wins in either order", func(t *testing.T) {
		for _, e := range []error{RetryAfter(Permanent(errBoom), s1), Permanent(RetryAfter(errBoom, s1))} {
			calls := 0
			_, err := Retry(t.Context(), Constant(0), script(&calls, e))
			assert.Equal(t, 1, calls)
			assert.Same(t, errBoom, err)
		}
	})
	t.Run("If rejecting wins over a pushback", func(t *testing.T) {
		calls := 0
		_, err := Retry(t.Context(), Constant(0), script(&calls, RetryAfter(errBoom, s1)), If(func(error) bool { return false }))
		assert.Equal(t, 1, calls)
		assert.Same(t, errBoom, err)
	})
	t.Run("a pushback past the deadline is not waited", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		clock := NewFakeClock(epoch)
		calls := 0
		_, err := Retry(ctx, Constant(0), script(&calls, repeat(RetryAfter(errBoom, 50*time.Minute), 9)...),
			WithClock(clock), MaxPushback(2*time.Hour))
		assert.Equal(t, 2, calls, "the first wait of 50 minutes fits, the second would end after the hour")
		assert.Equal(t, []time.Duration{50 * time.Minute}, clock.Sleeps())
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, errBoom)
	})
	t.Run("a pushback applies to the next wait only", func(t *testing.T) {
		clock := NewFakeClock(epoch)
		calls := 0
		_, _ = Retry(t.Context(), Constant(ms).Take(3), script(&calls, RetryAfter(errBoom, s1), errBoom, errBoom, errBoom), WithClock(clock))
		assert.Equal(t, []time.Duration{s1, ms, ms}, clock.Sleeps())
	})
}

type pathError struct{ path string }

func (e *pathError) Error() string { return "bad path " + e.path }

// TestWithinAndPushback: Within bounds the schedule's own delays; a server's
// pushback lengthens each wait, up to MaxPushback, without counting against
// it, and MaxElapsed or a context deadline bounds the whole call.
func TestWithinAndPushback(t *testing.T) {
	pushedBack := func(calls *int) func(context.Context) error {
		return func(context.Context) error { *calls++; return RetryAfter(errBoom, time.Minute) }
	}
	t.Run("three delays of 1s within 3s, each lengthened to a minute", func(t *testing.T) {
		clock, calls := NewFakeClock(epoch), 0
		err := Do(t.Context(), Constant(s1).Within(3*s1), pushedBack(&calls), WithClock(clock))
		assert.ErrorIs(t, err, ErrExhausted)
		assert.Equal(t, 4, calls)
		assert.Equal(t, []time.Duration{time.Minute, time.Minute, time.Minute}, clock.Sleeps())
	})
	t.Run("MaxPushback bounds each wait", func(t *testing.T) {
		clock, calls := NewFakeClock(epoch), 0
		err := Do(t.Context(), Constant(s1).Within(3*s1), pushedBack(&calls), WithClock(clock), MaxPushback(10*s1))
		assert.ErrorIs(t, err, ErrPushbackTooLong, "a minute asked, 10s allowed: the call ends at once")
		assert.Equal(t, 1, calls)
		assert.Empty(t, clock.Sleeps())
	})
	t.Run("a deadline bounds the total", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 150*s1)
		defer cancel()
		clock, calls := NewFakeClock(epoch), 0
		err := Do(ctx, Constant(s1).Within(3*s1), pushedBack(&calls), WithClock(clock))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 3, calls)
		assert.Equal(t, []time.Duration{time.Minute, time.Minute}, clock.Sleeps(), "a third minute would end after the deadline")
	})
	t.Run("MaxElapsed counts the lengthened waits", func(t *testing.T) {
		clock, calls := NewFakeClock(epoch), 0
		err := Do(t.Context(), Constant(s1).Within(3*s1), pushedBack(&calls), WithClock(clock), MaxElapsed(2*time.Minute))
		assert.ErrorIs(t, err, ErrMaxElapsed)
		assert.Equal(t, 3, calls, "attempts at 0, 1 and 2 minutes: a wait ending at the limit is made")
		assert.Equal(t, []time.Duration{time.Minute, time.Minute}, clock.Sleeps())
	})
}

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
