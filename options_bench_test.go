package retry

import (
	"context"
	"testing"
	"time"
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
	done := OnDone(func(Outcome) {})
	elapsed := MaxElapsed(time.Hour)
	value := IfValue(func(v int) bool { return v == 0 })
	limit := MaxRetriesIf(9, IsTransient)
	cases := []struct {
		name string
		fn   func()
	}{
		{"path=success/opt=none", func() { _ = Do(ctx, benchSchedule, succeed) }},
		{"path=success/opt=OnRetry", func() { _ = Do(ctx, benchSchedule, succeed, OnRetry(func(Attempt) {})) }},
		{"path=success/opt=OnDone", func() { _ = Do(ctx, benchSchedule, succeed, done) }},
		{"path=success/opt=MaxElapsed", func() { _ = Do(ctx, benchSchedule, succeed, elapsed) }},
		{"path=success/opt=MaxRetriesIf", func() { _ = Do(ctx, benchSchedule, succeed, limit) }},
		{"path=success/opt=IfValue", func() { _, _ = Retry(ctx, benchSchedule, succeedT, value) }},
	}
	clock := &countingClock{}
	s := Constant(time.Nanosecond).Take(4)
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
	value2 := IfValue(func(v int) bool { return v != 0 })
	cases = append(cases, []struct {
		name string
		fn   func()
	}{
		{"path=two-failures/opt=none", func() { _ = Do(ctx, s, twice, WithClock(clock)) }},
		{"path=two-failures/opt=OnDone", func() { _ = Do(ctx, s, twice, WithClock(clock), done) }},
		{"path=two-failures/opt=MaxElapsed", func() { _ = Do(ctx, s, twice, WithClock(clock), elapsed) }},
		{"path=two-failures/opt=MaxRetriesIf", func() { _ = Do(ctx, s, twice, WithClock(clock), limit) }},
		{"path=two-failures/opt=IfValue", func() { _, _ = Retry(ctx, s, twoValues, WithClock(clock), value2) }},
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
