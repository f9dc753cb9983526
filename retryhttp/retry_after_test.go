package retryhttp

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRetryAfter(t *testing.T) {
	date := time.Date(2030, time.January, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want retryAfter
		ok   bool
	}{
		{"0", retryAfter{}, true},
		{"120", retryAfter{delay: 2 * time.Minute}, true},
		{" 7\t", retryAfter{delay: 7 * time.Second}, true},
		{"007", retryAfter{delay: 7 * time.Second}, true},
		{"9223372036", retryAfter{delay: 9223372036 * time.Second}, true},
		{"9223372037", retryAfter{delay: math.MaxInt64}, true},
		{"99999999999999999999999999999999", retryAfter{delay: math.MaxInt64}, true},
		{"Wed, 02 Jan 2030 03:04:05 GMT", retryAfter{at: date, absolute: true}, true},     // IMF-fixdate
		{"Wednesday, 02-Jan-30 03:04:05 GMT", retryAfter{at: date, absolute: true}, true}, // RFC 850
		{"Wed Jan  2 03:04:05 2030", retryAfter{at: date, absolute: true}, true},          // asctime
		{"", retryAfter{}, false},
		{"   ", retryAfter{}, false},
		{"-1", retryAfter{}, false},
		{"+5", retryAfter{}, false},
		{"1.5", retryAfter{}, false},
		{"5s", retryAfter{}, false},
		{"1e3", retryAfter{}, false},
		{"0x10", retryAfter{}, false},
		{"5 6", retryAfter{}, false},
		{"١٢", retryAfter{}, false}, // Arabic-Indic digits
		{"soon", retryAfter{}, false},
		{"Wed, 02 Jan 2030 03:04:05", retryAfter{}, false},
		{"2030-01-02T03:04:05Z", retryAfter{}, false},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			got, ok := parseRetryAfter(tt.in)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want.delay, got.delay)
			assert.Equal(t, tt.want.absolute, got.absolute)
			assert.True(t, tt.want.at.Equal(got.at), "at: got %v, want %v", got.at, tt.want.at)
		})
	}
}

// FuzzParseRetryAfter checks that parsing any header value never panics,
// never yields a negative delay (which would stop the retries), and that
// delay-seconds saturate instead of wrapping.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "9223372037", "-1", "1.5", "soon", "",
		"Wed, 02 Jan 2030 03:04:05 GMT", "Wednesday, 02-Jan-30 03:04:05 GMT", "Wed Jan  2 03:04:05 2030"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		ra, ok := parseRetryAfter(v)
		if !ok {
			if ra != (retryAfter{}) {
				t.Fatalf("%q: rejected but got %+v", v, ra)
			}
			return
		}
		if ra.delay < 0 {
			t.Fatalf("%q: negative delay %v", v, ra.delay)
		}
		if ra.absolute {
			if ra.delay != 0 {
				t.Fatalf("%q: date with a delay %v", v, ra.delay)
			}
			return
		}
		n, err := strconv.ParseUint(trimOWS(v), 10, 64)
		switch {
		case err == nil && n <= uint64(maxSeconds):
			if ra.delay != time.Duration(n)*time.Second {
				t.Fatalf("%q: delay %v, want %ds", v, ra.delay, n)
			}
		case err == nil || errors.Is(err, strconv.ErrRange):
			if ra.delay != math.MaxInt64 {
				t.Fatalf("%q: delay %v, want saturation", v, ra.delay)
			}
		default:
			t.Fatalf("%q: accepted as delay-seconds %v, but is not digits", v, ra.delay)
		}
		// A pushback built from it never refuses the retry.
		marked := withPushback(errors.New("x"), http.Header{"Retry-After": {v}})
		if marked == nil {
			t.Fatal("lost the error")
		}
	})
}

func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

func TestRetryAfterHeader(t *testing.T) {
	tests := []struct {
		name  string
		first http.HandlerFunc
		opts  []retry.Option
		sleep time.Duration // the one wait before the second attempt
	}{
		{"503 delay-seconds", status(503, "Retry-After", "7"), nil, 7 * time.Second},
		{"429 delay-seconds", status(429, "Retry-After", "3"), nil, 3 * time.Second},
		{"503 HTTP-date", status(503, "Retry-After", t0.Add(30*time.Second).Format(http.TimeFormat)), nil, 30 * time.Second},
		{"429 HTTP-date", status(429, "Retry-After", t0.Add(45*time.Second).Format(http.TimeFormat)), nil, 45 * time.Second},
		{"RFC 850 date", status(503, "Retry-After", t0.Add(20*time.Second).Format(time.RFC850)), nil, 20 * time.Second},
		{"date in the past", status(503, "Retry-After", t0.Add(-time.Hour).Format(http.TimeFormat)), nil, time.Second},
		{"shorter than the schedule", status(503, "Retry-After", "0"), nil, time.Second},
		{"garbage", status(503, "Retry-After", "soon"), nil, time.Second},
		{"negative", status(503, "Retry-After", "-30"), nil, time.Second},
		{"ignored on 500", status(500, "Retry-After", "7"), nil, time.Second},
		{"ignored on 502", status(502, "Retry-After", "7"), nil, time.Second},
		{"MaxPushback", status(503, "Retry-After", "600"), []retry.Option{retry.MaxPushback(10 * time.Minute)}, 10 * time.Minute},
		{"MaxPushback(0) ignores it", status(503, "Retry-After", "600"), []retry.Option{retry.MaxPushback(0)}, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.first, status(200))
			clock := retry.NewFakeClock(t0)
			opts := append([]retry.Option{retry.WithClock(clock)}, tt.opts...)
			rt := NewTransport(newBase(t), retry.Constant(time.Second).Take(3), opts...)
			resp, err := rt.RoundTrip(mustGet(t, srv.URL))
			require.NoError(t, err)
			assert.Equal(t, "attempt 2", readAll(t, resp))
			assert.Equal(t, []time.Duration{tt.sleep}, clock.Sleeps())
		})
	}
}

// TestRetryAfterPastDeadline checks that a pushback that would end after the
// context's deadline is not waited: the caller gets the server's response at
// once, unread. The deadline is on the bubble's clock, so the attempt
// cannot eat into it however loaded the machine is.
func TestRetryAfterPastDeadline(t *testing.T) {
	for _, v := range []string{"3600", "99999999999", t0.Add(time.Hour).Format(http.TimeFormat)} {
		t.Run(v, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv, base := newPipeServer(t, status(503, "Retry-After", v), status(200))
				clock := retry.NewFakeClock(t0)
				rt := NewTransport(base, retry.Constant(time.Second).Take(3), retry.WithClock(clock), retry.MaxPushback(24*time.Hour))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
				require.NoError(t, err)
				resp, err := rt.RoundTrip(req)
				require.NoError(t, err)
				assert.Equal(t, 503, resp.StatusCode)
				assert.Equal(t, v, resp.Header.Get("Retry-After"))
				assert.Equal(t, "attempt 1", readAll(t, resp))
				assert.Empty(t, clock.Sleeps())
				assert.Len(t, srv.requests(), 1)
			})
		})
	}
}
