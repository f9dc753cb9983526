package retry

import (
	"context"
	"slices"
	"sync"
	"time"
)

// A FakeClock is a Clock for tests whose time moves only when told to: Sleep
// advances it at once by the requested duration instead of waiting, and
// records the duration, so a test of code that retries checks every wait in
// zero real time.
//
// The zero FakeClock is ready to use, as if made by NewFakeClock with the zero
// time.Time: its Now starts at January 1, year 1, 00:00:00 UTC, and context
// deadlines are tracked on it as on any FakeClock. Use NewFakeClock when the
// code under test prints or compares the time.
//
// A FakeClock is safe for concurrent use, and must not be copied after first
// use. Its record of sleeps grows by one Duration per Sleep. It has one time
// for all its users: every Sleep moves it for everyone, so concurrent calls
// sharing one FakeClock see each other's waits add up. That is harmless for
// calls without a limit in time, but a call with a context deadline or
// MaxElapsed spends its time on the others' waits too, and gives up early;
// give each such call its own FakeClock, or use testing/synctest, where
// concurrent waits overlap as they do on the real clock.
type FakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

// NewFakeClock returns a FakeClock whose Now is start. NewFakeClock(time.Time{})
// is the same as the zero FakeClock.
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start}
}

// Now returns the fake current time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep records d and advances the clock by d at once, without waiting. If
// ctx is already done it returns ctx's error and neither records nor
// advances. A negative d is recorded and does not move the clock.
func (c *FakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	if d > 0 {
		c.now = c.now.Add(d)
	}
	return nil
}

// Advance moves the clock forward by d (backward if d is negative) without
// recording a sleep, as if time passed outside any Sleep.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Sleeps returns a copy of the durations passed to Sleep, in order; nil if
// Sleep was never called.
func (c *FakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sleeps)
}
