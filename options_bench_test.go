package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// BenchmarkCallOptions measures what OnDone, MaxElapsed, IfValue and
// MaxRetriesIf add to a call, next to the same call without them: on the
// success path (the real clock, which OnDone and MaxElapsed read when the
// call starts and ends) and on a call that fails twice (a fake clock, so
// that only the runner's own work is measured).
func BenchmarkCallOptions(b *testing.B) {
	ctx := context.Background()
	succeed := func(context.Context) error { return nil }
	succeedT := func(context.Context) (int, error) { return 1, nil }
	done := retry.OnDone(func(retry.Outcome) {})
	elapsed := retry.MaxElapsed(time.Hour)
	value := retry.IfValue(func(v int) bool { return v == 0 })
	limit := retry.MaxRetriesIf(9, retry.IsTransient)
	cases := []struct {
		name string
		fn   func()
	}{
		{"path=success/opt=none", func() { _ = retry.Do(ctx, benchSchedule, succeed) }},
		{"path=success/opt=OnRetry", func() { _ = retry.Do(ctx, benchSchedule, succeed, retry.OnRetry(func(retry.Attempt) {})) }},
		{"path=success/opt=OnDone", func() { _ = retry.Do(ctx, benchSchedule, succeed, done) }},
		{"path=success/opt=MaxElapsed", func() { _ = retry.Do(ctx, benchSchedule, succeed, elapsed) }},
		{"path=success/opt=MaxRetriesIf", func() { _ = retry.Do(ctx, benchSchedule, succeed, limit) }},
		{"path=success/opt=IfValue", func() { _, _ = retry.Retry(ctx, benchSchedule, succeedT, value) }},
	}
	clock := allocClock{}
	s := retry.Constant(time.Nanosecond).Take(4)
	fails := func() func(context.Context) error {
		fn := failTwice()
		return fn
	}
	twice := fails()
	pending := 0
	twoValues := func(context.Context) (int, error) {
		pending = (pending + 1) % 3
		return pending, nil // 1, 2: rejected by value; 0: accepted
	}
	value2 := retry.IfValue(func(v int) bool { return v != 0 })
	cases = append(cases, []struct {
		name string
		fn   func()
	}{
		{"path=two-failures/opt=none", func() { _ = retry.Do(ctx, s, twice, retry.WithClock(clock)) }},
		{"path=two-failures/opt=OnDone", func() { _ = retry.Do(ctx, s, twice, retry.WithClock(clock), done) }},
		{"path=two-failures/opt=MaxElapsed", func() { _ = retry.Do(ctx, s, twice, retry.WithClock(clock), elapsed) }},
		{"path=two-failures/opt=MaxRetriesIf", func() { _ = retry.Do(ctx, s, twice, retry.WithClock(clock), limit) }},
		{"path=two-failures/opt=IfValue", func() { _, _ = retry.Retry(ctx, s, twoValues, retry.WithClock(clock), value2) }},
	}...)
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.fn()
			}
		})
	}
}
