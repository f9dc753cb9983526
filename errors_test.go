package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
