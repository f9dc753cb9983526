package retry_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// records is a slog.Handler that keeps each record as a line
// "LEVEL msg key=value …", without its time.
type records struct {
	level slog.Level
	mu    sync.Mutex
	lines []string
}

func (r *records) Enabled(_ context.Context, l slog.Level) bool { return l >= r.level }
func (r *records) WithAttrs([]slog.Attr) slog.Handler           { return r }
func (r *records) WithGroup(string) slog.Handler                { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Level.String() + " " + rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	r.mu.Lock()
	r.lines = append(r.lines, b.String())
	r.mu.Unlock()
	return nil
}

func (r *records) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

var errDown = errors.New("down")

func TestWithLogger(t *testing.T) {
	failing := func(context.Context) error { return errDown }
	t.Run("Retry: each retry and the give-up", func(t *testing.T) {
		rec := &records{level: slog.LevelDebug}
		clock := retry.NewFakeClock(epoch)
		_, err := retry.Retry(t.Context(), retry.Constant(time.Second).Take(1), func(context.Context) (int, error) {
			return 0, errDown
		}, retry.WithLogger(slog.New(rec)), retry.WithClock(clock))
		require.ErrorIs(t, err, retry.ErrExhausted)
		assert.Equal(t, []string{
			"INFO retry retry.attempt=1 retry.delay=1s error=down",
			"WARN retry gave up retry.reason=exhausted retry.attempts=2 retry.call.duration=1s error=" + err.Error(),
		}, rec.all())
	})
	t.Run("a success logs nothing", func(t *testing.T) {
		rec := &records{level: slog.LevelDebug}
		require.NoError(t, retry.Do(t.Context(), retry.Constant(0), func(context.Context) error { return nil },
			retry.WithLogger(slog.New(rec))))
		assert.Empty(t, rec.all())
	})
	t.Run("an error not retried logs nothing", func(t *testing.T) {
		rec := &records{level: slog.LevelDebug}
		err := retry.Do(t.Context(), retry.Constant(0), func(context.Context) error { return retry.Permanent(errDown) },
			retry.WithLogger(slog.New(rec)))
		assert.Same(t, errDown, err)
		assert.Empty(t, rec.all())
	})
	t.Run("levels: a Warn logger sees the give-up only", func(t *testing.T) {
		rec := &records{level: slog.LevelWarn}
		_ = retry.Do(t.Context(), retry.Constant(time.Second).Take(2), failing,
			retry.WithLogger(slog.New(rec)), retry.WithClock(retry.NewFakeClock(epoch)))
		lines := rec.all()
		require.Len(t, lines, 1)
		assert.True(t, strings.HasPrefix(lines[0], "WARN retry gave up retry.reason=exhausted retry.attempts=3"), lines[0])
	})
	t.Run("with OnRetry and OnDone, all run in order", func(t *testing.T) {
		rec := &records{level: slog.LevelDebug}
		var seen []string
		_ = retry.Do(t.Context(), retry.Constant(0).Take(1), failing,
			retry.OnRetry(func(retry.Attempt) { seen = append(seen, "OnRetry") }),
			retry.WithLogger(slog.New(rec)),
			retry.OnDone(func(retry.Outcome) { seen = append(seen, "OnDone") }))
		assert.Equal(t, []string{"OnRetry", "OnDone"}, seen)
		assert.Len(t, rec.all(), 2)
	})
	t.Run("reasons", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		budget := retry.NewBudget(0, 0)
		tests := []struct {
			name string
			ctx  context.Context
			fn   func(context.Context) error
			opts []retry.Option
			want string
		}{
			{"max_elapsed", t.Context(), failing, []retry.Option{retry.MaxElapsed(time.Second)}, "retry.reason=max_elapsed"},
			{"budget_exhausted", t.Context(), failing, []retry.Option{retry.WithBudget(budget)}, "retry.reason=budget_exhausted"},
			{"pushback_too_long", t.Context(), func(context.Context) error { return retry.RetryAfter(errDown, time.Hour) }, nil, "retry.reason=pushback_too_long"},
			{"deadline", ctx, func(context.Context) error { return errDown }, []retry.Option{}, "retry.reason=deadline"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				rec := &records{level: slog.LevelWarn}
				s := retry.Constant(2 * time.Second).Take(3)
				if tt.name == "deadline" {
					s = retry.Constant(2 * time.Hour)
				}
				_ = retry.Do(tt.ctx, s, tt.fn, append(tt.opts, retry.WithLogger(slog.New(rec)), retry.WithClock(retry.NewFakeClock(epoch)))...)
				lines := rec.all()
				require.Len(t, lines, 1)
				assert.Contains(t, lines[0], tt.want)
			})
		}
	})
	t.Run("Throttle and Breaker refusals", func(t *testing.T) {
		clock := retry.NewFakeClock(epoch)
		breaker := retry.NewBreaker(retry.BreakerMinCalls(1), retry.BreakerClock(clock))
		_ = retry.Do(t.Context(), retry.Delays(), failing, retry.WithBreaker(breaker), retry.WithClock(clock))
		rec := &records{level: slog.LevelDebug}
		err := retry.Do(t.Context(), retry.Delays(), failing, retry.WithBreaker(breaker), retry.WithClock(clock),
			retry.WithLogger(slog.New(rec)))
		require.ErrorIs(t, err, retry.ErrBreakerOpen)
		assert.Equal(t, []string{"WARN retry refused retry.reason=open retry.attempts=0 retry.call.duration=0s error=" + err.Error()}, rec.all())
	})
	t.Run("Limiter refusal", func(t *testing.T) {
		clock := retry.NewFakeClock(epoch)
		limiter := retry.NewLimiter(retry.LimiterMax(1), retry.LimiterInitial(1), retry.LimiterClock(clock))
		p, ok := limiter.TryAcquire() // the only permit: the call finds none
		require.True(t, ok)
		defer p.Drop()
		rec := &records{level: slog.LevelDebug}
		err := retry.Do(t.Context(), retry.Delays(), failing, retry.WithLimiter(limiter), retry.WithClock(clock),
			retry.WithLogger(slog.New(rec)))
		require.ErrorIs(t, err, retry.ErrLimited)
		assert.Equal(t, []string{"WARN retry refused retry.reason=limited retry.attempts=0 retry.call.duration=0s error=" + err.Error()}, rec.all())
	})
	t.Run("Hedge: each hedge, at Debug", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rec := &records{level: slog.LevelDebug}
			var mu sync.Mutex
			n := 0
			v, err := retry.Hedge(t.Context(), retry.Constant(10*time.Millisecond).Take(3), func(ctx context.Context) (int, error) {
				mu.Lock()
				n++
				k := n
				mu.Unlock()
				switch k {
				case 1:
					<-ctx.Done() // slow: hedged after 10 ms
					return 0, ctx.Err()
				case 2:
					return 0, errDown // fails at once: the next starts at once
				}
				return k, nil
			}, retry.WithLogger(slog.New(rec)))
			require.NoError(t, err)
			assert.Equal(t, 3, v)
			assert.Equal(t, []string{
				"DEBUG hedge retry.attempt=2 retry.hedge.trigger=delay retry.delay=10ms",
				"DEBUG hedge retry.attempt=3 retry.hedge.trigger=failure retry.delay=10ms error=down",
			}, rec.all())
		})
	})
	t.Run("nil logger panics", func(t *testing.T) {
		assert.PanicsWithValue(t, "retry: WithLogger: nil *slog.Logger", func() { retry.WithLogger(nil) })
		assert.PanicsWithValue(t, "retry: BreakerLogger: nil *slog.Logger", func() { retry.BreakerLogger(nil, "") })
	})
}

// off is a logger whose level is above everything the package logs.
var off = slog.New(&records{level: math.MaxInt32})

// TestWithLoggerOffAllocs: a call with a logger whose levels are all off
// allocates nothing on success, and nothing more than the same call
// without the logger when it retries. The options are a slice built once,
// as a program that shares its options passes them.
func TestWithLoggerOffAllocs(t *testing.T) {
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	s := retry.Constant(0).Take(2)
	clock := retry.NewFakeClock(epoch)
	quiet := []retry.Option{retry.WithLogger(off), retry.WithClock(clock)}
	plain := []retry.Option{retry.WithClock(clock)}
	if n := testing.AllocsPerRun(200, func() { _ = retry.Do(ctx, s, ok, quiet...) }); n != 0 {
		t.Errorf("success with a logger off: %v allocs, want 0", n)
	}
	twice := func() func(context.Context) error {
		n := 0
		return func(context.Context) error {
			if n++; n < 3 {
				return errDown
			}
			return nil
		}
	}
	withLogger := testing.AllocsPerRun(200, func() { _ = retry.Do(ctx, s, twice(), quiet...) })
	without := testing.AllocsPerRun(200, func() { _ = retry.Do(ctx, s, twice(), plain...) })
	if withLogger > without {
		t.Errorf("two retries with a logger off: %v allocs, without it %v", withLogger, without)
	}
}

// BenchmarkWithLoggerOff compares calls with a logger whose levels are all
// off against the same calls without it, and against a logger that is on
// (into a handler that drops every record).
func BenchmarkWithLoggerOff(b *testing.B) {
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	failing := func(context.Context) error { return errDown }
	s := retry.Constant(0).Take(2)
	clock := retry.NewFakeClock(epoch)
	on := slog.New(&records{level: slog.LevelDebug})
	cases := []struct {
		name string
		opts []retry.Option
	}{
		{"none", []retry.Option{retry.WithClock(clock)}},
		{"logger-off", []retry.Option{retry.WithLogger(off), retry.WithClock(clock)}},
		{"logger-on", []retry.Option{retry.WithLogger(on), retry.WithClock(clock)}},
	}
	for _, fn := range []struct {
		name string
		fn   func(context.Context) error
	}{{"success", ok}, {"2 retries", failing}} {
		for _, c := range cases {
			b.Run(fn.name+"/"+c.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					_ = retry.Do(ctx, s, fn.fn, c.opts...)
				}
			})
		}
	}
}
