package bench_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	avast4 "github.com/avast/retry-go/v4"
	"github.com/cenkalti/backoff/v5"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/hashicorp/go-retryablehttp"
	sethvargo "github.com/sethvargo/go-retry"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryhttp"
)

// The peers suite runs one scenario through another library and through
// retry, and compares what they do: the same delays for the same
// parameters, the same waits for the same Retry-After header. Where they
// differ on purpose, the case says so and pins both sides; the migration
// guide (docs/MIGRATING.md) covers the differences in the retry loop itself.

// collect returns the first n delays of s.
func collect(s retry.Schedule, n int) []time.Duration {
	return slices.Collect(s.Take(n).Seq())
}

// TestPeersSameDelays: for parameters that mean the same thing, the other
// libraries' backoffs and this package's schedules give the same delays,
// overflow included; only a factor that is not an integer differs, by the
// peers' truncation at every step.
func TestPeersSameDelays(t *testing.T) {
	cenkalti := func(initial, limit time.Duration, factor float64, n int) []time.Duration {
		b := &backoff.ExponentialBackOff{InitialInterval: initial, MaxInterval: limit, Multiplier: factor}
		b.Reset()
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = b.NextBackOff()
		}
		return out
	}
	seth := func(b sethvargo.Backoff, n int) []time.Duration {
		var out []time.Duration
		for range n {
			d, stop := b.Next()
			if stop {
				break
			}
			out = append(out, d)
		}
		return out
	}
	tests := []struct {
		name   string
		theirs []time.Duration
		ours   []time.Duration
	}{
		{"cenkalti: 500ms doubling up to 5s, no jitter",
			cenkalti(500*time.Millisecond, 5*time.Second, 2, 20),
			collect(retry.Exponential(500*time.Millisecond).Cap(5*time.Second), 20)},
		{"cenkalti: 1ns doubling up to the largest Duration",
			cenkalti(1, math.MaxInt64, 2, 100),
			collect(retry.Exponential(1), 100)},
		{"cenkalti: MaxInt64/2 times 2.1 saturates",
			cenkalti(math.MaxInt64/2, math.MaxInt64, 2.1, 5),
			collect(retry.ExponentialFactor(math.MaxInt64/2, 2.1), 5)},
		{"cenkalti: constant",
			func() []time.Duration {
				b := backoff.NewConstantBackOff(time.Second)
				return []time.Duration{b.NextBackOff(), b.NextBackOff(), b.NextBackOff()}
			}(),
			collect(retry.Constant(time.Second), 3)},
		{"sethvargo: 1ns doubling, 100 values",
			seth(sethvargo.NewExponential(1), 100),
			collect(retry.Exponential(1), 100)},
		{"sethvargo: 100 000h doubling saturates",
			seth(sethvargo.NewExponential(100_000*time.Hour), 10),
			collect(retry.Exponential(100_000*time.Hour), 10)},
		{"sethvargo: capped exponential",
			seth(sethvargo.WithCappedDuration(3*time.Second, sethvargo.NewExponential(time.Second)), 10),
			collect(retry.Exponential(time.Second).Cap(3*time.Second), 10)},
		{"sethvargo: max retries",
			seth(sethvargo.WithMaxRetries(3, sethvargo.NewConstant(time.Second)), 10),
			collect(retry.Constant(time.Second).Take(3), 10)},
		{"avast: BackOffDelay from 1ns, 12 attempts",
			avastDelays(t, 12, 0),
			collect(retry.Exponential(1).Take(11), 20)},
		{"avast: BackOffDelay under MaxDelay",
			avastDelays(t, 12, 100),
			collect(retry.Exponential(1).Cap(100).Take(11), 20)},
		{"failsafe-go: WithBackoff(1ns, 1µs), 12 retries",
			failsafeDelays(t, retrypolicy.NewBuilder[any]().WithBackoff(1, time.Microsecond).WithMaxRetries(12)),
			collect(retry.Exponential(1).Cap(time.Microsecond).Take(12), 20)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !slices.Equal(tc.theirs, tc.ours) {
				t.Errorf("theirs %v\nours   %v", tc.theirs, tc.ours)
			}
		})
	}

	// A factor that is not an integer: cenkalti and failsafe-go truncate
	// the product at every step and multiply the truncated value, so they
	// fall behind the exact base·factorⁱ, which ExponentialFactor rounds,
	// and the shortfall compounds: below (f^i−1)/(f−1) ns, that is
	// 2·delay/base for a factor of 1.5. Negligible from a millisecond base
	// (about 2 µs at 1 s from 1 ms); 10% after 20 steps from a 7 ns base.
	for _, base := range []time.Duration{7, time.Millisecond, 100 * time.Millisecond} {
		t.Run("a factor of 1.5 from "+base.String()+": the peers truncate at every step", func(t *testing.T) {
			const n = 60
			theirs := cenkalti(base, math.MaxInt64, 1.5, n)
			fs := failsafeDelays(t, retrypolicy.NewBuilder[any]().WithBackoffFactor(base, math.MaxInt64, 1.5).WithMaxRetries(n))
			if !slices.Equal(theirs, fs) {
				t.Errorf("cenkalti %v\nfailsafe-go %v", theirs, fs)
			}
			ours := collect(retry.ExponentialFactor(base, 1.5), n)
			behind := 0
			for i := range n {
				bound := 2*float64(ours[i])/float64(base) + 1
				if d := ours[i] - theirs[i]; d < 0 || float64(d) > bound {
					t.Errorf("delay %d: cenkalti %d, ours %d", i, theirs[i], ours[i])
				} else if d > 0 {
					behind++
				}
			}
			if behind == 0 {
				t.Error("the peers never fell behind: the comparison is vacuous")
			}
		})
	}
}

// avastDelays returns the delays an avast/retry-go v4 Do waits over
// attempts failed attempts, with BackOffDelay from 1ns and, if limit is not
// 0, MaxDelay(limit), which avast applies to what the DelayType returns. It
// sleeps on the real clock, so it runs in a synctest bubble.
func avastDelays(t *testing.T, attempts uint, limit time.Duration) []time.Duration {
	var delays []time.Duration
	record := func(n uint, err error, c *avast4.Config) time.Duration {
		d := avast4.BackOffDelay(n, err, c)
		if limit > 0 {
			delays = append(delays, min(d, limit))
		} else {
			delays = append(delays, d)
		}
		return d
	}
	opts := []avast4.Option{avast4.Attempts(attempts), avast4.Delay(1), avast4.DelayType(record), avast4.LastErrorOnly(true)}
	if limit > 0 {
		opts = append(opts, avast4.MaxDelay(limit))
	}
	synctest.Test(t, func(t *testing.T) {
		if err := avast4.Do(func() error { return errPeer }, opts...); !errors.Is(err, errPeer) {
			t.Fatalf("avast: %v", err)
		}
	})
	return delays
}

// failsafeDelays returns the delays a failsafe-go retry policy schedules
// when every attempt fails, from its OnRetryScheduled events. failsafe-go
// sleeps on the real clock, so it runs in a synctest bubble, where the
// waits take no time.
func failsafeDelays(t *testing.T, b retrypolicy.Builder[any]) []time.Duration {
	var delays []time.Duration
	rp := b.OnRetryScheduled(func(e failsafe.ExecutionScheduledEvent[any]) {
		delays = append(delays, e.Delay)
	}).Build()
	synctest.Test(t, func(t *testing.T) {
		if err := failsafe.With(rp).Run(func() error { return errPeer }); err == nil {
			t.Fatal("failsafe-go: no error")
		}
	})
	return delays
}

var errPeer = errors.New("peer test error")

// TestPeersRetryAfter: the same 503 and Retry-After header through
// go-retryablehttp and through retryhttp, in a synctest bubble: when the
// second request is sent. Both read delay-seconds and RFC 1123 dates alike;
// the cases that differ are pinned with the reason.
func TestPeersRetryAfter(t *testing.T) {
	const floor = 10 * time.Millisecond // both sides' own delay when the header is not used
	// in returns an HTTP-date d from the bubble's start.
	in := func(format string, d time.Duration) func(time.Time) string {
		return func(start time.Time) string { return start.Add(d).UTC().Format(format) }
	}
	secs := func(v string) func(time.Time) string { return func(time.Time) string { return v } }
	tests := []struct {
		name          string
		header        func(start time.Time) string
		theirs, ours  time.Duration // when the second request went; -1: never
		whyTheyDiffer string
	}{
		{"2 seconds", secs("2"), 2 * time.Second, 2 * time.Second, ""},
		{"2 hours (MaxPushback raised)", secs("7200"), 2 * time.Hour, 2 * time.Hour, ""},
		{"an RFC 1123 date in 90s", in(http.TimeFormat, 90*time.Second), 90 * time.Second, 90 * time.Second, ""},
		{"a fraction", secs("2.5"), floor, floor, ""},
		{"a negative number", secs("-2"), floor, floor, ""},
		{"garbage", secs("badbadbad"), floor, floor, ""},
		{"an impossible date", secs("Fri, 32 Dec 1999 23:59:59 GMT"), floor, floor, ""},
		{"0", secs("0"), 0, floor,
			"Retry-After is a floor under the schedule's delay here, the exact wait there"},
		{"a date in the past", secs("Fri, 31 Dec 1999 23:59:00 GMT"), 0, floor,
			"Retry-After is a floor under the schedule's delay here, the exact wait there"},
		{"a plus sign", secs("+2"), 2 * time.Second, floor,
			"RFC 9110 delay-seconds is digits only; retryablehttp's strconv.ParseInt takes a sign"},
		{"more seconds than a Duration holds", secs("99999999999999999999"), floor, -1,
			"retryhttp saturates, and a wait past MaxPushback ends the call at once (ErrPushbackTooLong); retryablehttp's ParseInt fails and it ignores the header"},
		{"an RFC 850 date in 90s", in("Monday, 02-Jan-06 15:04:05 GMT", 90*time.Second), floor, 90 * time.Second,
			"RFC 9110 requires recipients to read all three date formats; retryablehttp reads RFC 1123 only"},
		{"an ANSI C date in 90s", in(time.ANSIC, 90*time.Second), floor, 90 * time.Second,
			"RFC 9110 requires recipients to read all three date formats; retryablehttp reads RFC 1123 only"},
		{"a date in another zone", in("Mon, 02 Jan 2006 15:04:05 PST", 90*time.Second), 90 * time.Second, floor,
			"an HTTP-date is always GMT; retryablehttp's time.RFC1123 takes any zone name, as UTC"},
		{"surrounding spaces", secs(" 2 "), floor, 2 * time.Second,
			"net/http trims header values read from the wire, so only a hand-made Header has them"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// answers sets the header from the time it is called, when a
				// client starts its run, after waiting for a whole second
				// of the bubble's clock: an HTTP-date has no fraction.
				answers := func() []func(*http.Request) (*http.Response, error) {
					time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
					return []func(*http.Request) (*http.Response, error){
						status(http.StatusServiceUnavailable, "Retry-After", tc.header(time.Now())), status(http.StatusOK),
					}
				}

				s := &script{start: time.Now(), answers: answers()}
				c := retryablehttp.NewClient()
				c.HTTPClient = &http.Client{Transport: s}
				c.RetryWaitMin, c.RetryWaitMax, c.RetryMax, c.Logger = floor, floor, 1, nil
				resp, err := c.Get("http://api.example/")
				if err != nil {
					t.Fatalf("retryablehttp: %v", err)
				}
				resp.Body.Close()
				theirs := s.at[1] - s.at[0]

				s = &script{start: time.Now(), answers: answers()}
				rt := retryhttp.NewTransport(s, retry.Constant(floor).Take(1), retry.MaxPushback(2*time.Hour))
				resp, err = (&http.Client{Transport: rt}).Get("http://api.example/")
				if err != nil {
					t.Fatalf("retryhttp: %v", err)
				}
				resp.Body.Close()
				ours := time.Duration(-1) // no retry
				if len(s.at) > 1 {
					ours = s.at[1] - s.at[0]
				}

				if theirs != tc.theirs || ours != tc.ours {
					t.Errorf("Retry-After %q: retryablehttp waited %v (want %v), retryhttp %v (want %v)",
						tc.header(time.Now()), theirs, tc.theirs, ours, tc.ours)
				}
				if (theirs != ours) != (tc.whyTheyDiffer != "") {
					t.Errorf("retryablehttp %v, retryhttp %v: the case says they differ: %q", theirs, ours, tc.whyTheyDiffer)
				}
			})
		})
	}
}

// TestPeersCancelMidWait: a context cancelled while both wait returns at
// once from each, with the context's error; retry keeps the last error too.
func TestPeersCancelMidWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(90*time.Second, cancel)
		start := time.Now()
		_, theirs := backoff.Retry(ctx, func() (int, error) { return 0, errPeer },
			backoff.WithBackOff(backoff.NewConstantBackOff(time.Minute)), backoff.WithMaxElapsedTime(0))
		theirsTook := time.Since(start)

		ctx, cancel = context.WithCancel(t.Context())
		time.AfterFunc(90*time.Second, cancel)
		start = time.Now()
		ours := retry.Do(ctx, retry.Constant(time.Minute), func(context.Context) error { return errPeer })
		oursTook := time.Since(start)

		if theirsTook != 90*time.Second || oursTook != 90*time.Second {
			t.Errorf("cancelled at 90s: cenkalti returned after %v, retry after %v", theirsTook, oursTook)
		}
		if !errors.Is(theirs, context.Canceled) || errors.Is(theirs, errPeer) {
			t.Errorf("cenkalti: %v; want only the context's error", theirs)
		}
		if !errors.Is(ours, context.Canceled) || !errors.Is(ours, errPeer) {
			t.Errorf("retry: %v; want the context's error and the last error", ours)
		}
	})
}
