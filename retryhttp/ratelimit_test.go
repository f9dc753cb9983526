package retryhttp

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseDecimal(t *testing.T) {
	tests := []struct {
		in   string
		unit time.Duration
		want time.Duration
		ok   bool
	}{
		{"0", time.Millisecond, 0, true},
		{"1500", time.Millisecond, 1500 * time.Millisecond, true},
		{"1.5", time.Second, 1500 * time.Millisecond, true},
		{" 20.25\t", time.Millisecond, 20250 * time.Microsecond, true},
		{"0.0000000001", time.Second, 0, true},
		{"9223372036854775807", time.Millisecond, math.MaxInt64, true},
		{"99999999999999999999999999", time.Second, math.MaxInt64, true},
		{"9223372036.9", time.Second, math.MaxInt64, true},
		{"", time.Second, 0, false},
		{".5", time.Second, 0, false},
		{"5.", time.Second, 0, false},
		{"-1", time.Second, 0, false},
		{"+1", time.Second, 0, false},
		{"1e3", time.Second, 0, false},
		{"1.2.3", time.Second, 0, false},
		{"1,5", time.Second, 0, false},
		{"5s", time.Second, 0, false},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			got, ok := parseDecimal(tt.in, tt.unit)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestParseReset: how X-RateLimit-Reset's two meanings are told apart.
func TestParseReset(t *testing.T) {
	tests := []struct {
		in    string
		delay time.Duration
		at    time.Time // when absolute
	}{
		{"0", 0, time.Time{}},
		{"60", time.Minute, time.Time{}},
		{"1.5", 1500 * time.Millisecond, time.Time{}},
		{"99999999", 99999999 * time.Second, time.Time{}},             // 3.2 years from now: still a delay
		{"100000000", 0, time.Unix(1e8, 0)},                           // March 1973: a Unix time
		{"946684800", 0, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)}, // synctest's epoch
		{"1893553445", 0, t0},                                         // GitHub's form
		{"1893553445.5", 0, t0.Add(500 * time.Millisecond)},           // with a fraction
		{"1893553445000", 0, t0},                                      // in milliseconds
		{"99999999999999999999", 0, time.UnixMilli(0).Add(math.MaxInt64)},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			ra, ok := parseReset(tt.in)
			require.True(t, ok)
			assert.Equal(t, !tt.at.IsZero(), ra.absolute)
			assert.Equal(t, tt.delay, ra.delay)
			assert.True(t, tt.at.Equal(ra.at), "at: got %v, want %v", ra.at, tt.at)
		})
	}
	for _, bad := range []string{"", "-5", "soon", "Wed, 02 Jan 2030 03:04:05 GMT", "1e9"} {
		_, ok := parseReset(bad)
		assert.False(t, ok, bad)
	}
}

// TestParseRateLimit: the IETF RateLimit and RateLimit-Policy fields, as
// draft-ietf-httpapi-ratelimit-headers writes them (draft 08 and later: a
// List of named policies with r, t, q and w parameters; draft 07: a
// dictionary).
func TestParseRateLimit(t *testing.T) {
	tests := []struct {
		name    string
		rl, pol string
		want    time.Duration
		ok      bool
	}{
		{"exhausted, reset in 30s", `"default";r=0;t=30`, "", 30 * time.Second, true},
		{"token name", `default;r=0;t=12`, "", 12 * time.Second, true},
		{"quota left: no wait", `"default";r=5;t=30`, "", 0, false},
		{"the longest exhausted policy", `"burst";r=0;t=2, "daily";r=0;t=3600, "hourly";r=4;t=60`, "", time.Hour, true},
		{"no t: the policy's window", `"default";r=0`, `"default";q=100;w=60`, time.Minute, true},
		{"no t, another policy's window", `"default";r=0`, `"other";q=100;w=60`, 0, false},
		{"with a partition key", `"peruser";r=0;t=5;pk=:cHsdsRa894==:`, "", 5 * time.Second, true},
		{"spaces", `  "a";r=0;t=7 ,  "b";r=1  `, "", 7 * time.Second, true},
		{"unknown parameters skipped", `"a";x="y";r=0;z=?1;t=9`, "", 9 * time.Second, true},
		{"quoted escapes", `"a\"b";r=0;t=4`, `"a\"b";q=1;w=8`, 4 * time.Second, true},
		{"inner list skipped", `("x" "y");r=0;t=4, "a";r=0;t=3`, "", 4 * time.Second, true},
		{"draft 07 dictionary", `limit=100, remaining=0, reset=50`, "", 50 * time.Second, true},
		{"draft 07, quota left", `limit=100, remaining=3, reset=50`, "", 0, false},
		{"huge t saturates", `"a";r=0;t=99999999999999999999`, "", math.MaxInt64, true},
		{"negative t ignored", `"a";r=0;t=-5`, "", 0, false},
		{"decimal r is not 0", `"a";r=0.0;t=5`, "", 0, false},
		{"empty", ``, "", 0, false},
		{"space before a parameter", `"a" ;r=0;t=7`, "", 0, false},
		{"unterminated string", `"a;r=0;t=5`, "", 0, false},
		{"garbage between members", `"a";r=0;t=5 "b"`, "", 0, false},
		{"trailing comma", `"a";r=0;t=5,`, "", 5 * time.Second, true},
		{"bad key", `"a";R=0;t=5`, "", 0, false},
		{"non-ASCII", `"é";r=0;t=5`, "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseRateLimit(tt.rl, tt.pol)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestRateLimitHeaders is the golden test of each header form through a
// Transport against a loopback server: the one wait before the second
// attempt is what the header asked for.
func TestRateLimitHeaders(t *testing.T) {
	reset := strconv.FormatInt(t0.Add(40*time.Second).Unix(), 10)
	tests := []struct {
		name  string
		first http.HandlerFunc
		sleep time.Duration
	}{
		{"retry-after-ms", status(429, "Retry-After-Ms", "2500"), 2500 * time.Millisecond},
		{"retry-after-ms with a fraction", status(429, "Retry-After-Ms", "1200.5"), 1200500 * time.Microsecond},
		{"retry-after-ms wins over Retry-After", status(429, "Retry-After-Ms", "2500", "Retry-After", "3"), 2500 * time.Millisecond},
		{"malformed retry-after-ms: Retry-After", status(429, "Retry-After-Ms", "soon", "Retry-After", "3"), 3 * time.Second},
		{"Retry-After wins over the rest", status(429, "Retry-After", "3", "X-RateLimit-Reset", "9", "RateLimit", `"d";r=0;t=8`), 3 * time.Second},
		{"X-RateLimit-Reset, Unix time (GitHub)", status(429, "X-RateLimit-Reset", reset, "X-RateLimit-Remaining", "0"), 40 * time.Second},
		{"X-RateLimit-Reset, seconds from now", status(429, "X-RateLimit-Reset", "12"), 12 * time.Second},
		{"X-RateLimit-Reset, milliseconds", status(429, "X-RateLimit-Reset", reset+"000"), 40 * time.Second},
		{"X-RateLimit-Reset with quota left: not the reason", status(429, "X-RateLimit-Reset", "12", "X-RateLimit-Remaining", "7"), time.Second},
		{"RateLimit-Reset (draft 06)", status(503, "RateLimit-Reset", "6"), 6 * time.Second},
		{"RateLimit", status(429, "RateLimit", `"default";r=0;t=30`, "RateLimit-Policy", `"default";q=100;w=60`), 30 * time.Second},
		{"RateLimit, window from the policy", status(429, "RateLimit", `"default";r=0`, "RateLimit-Policy", `"default";q=100;w=20`), 20 * time.Second},
		{"RateLimit wins over X-RateLimit-Reset", status(429, "RateLimit", `"d";r=0;t=8`, "X-RateLimit-Reset", "9"), 8 * time.Second},
		{"RateLimit with quota left: X-RateLimit-Reset", status(429, "RateLimit", `"d";r=3;t=8`, "X-RateLimit-Reset", "9"), 9 * time.Second},
		{"shorter than the schedule", status(429, "Retry-After-Ms", "10"), time.Second},
		{"ignored on 500", status(500, "Retry-After-Ms", "2500", "X-RateLimit-Reset", "12"), time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.first, status(200))
			clock := retry.NewFakeClock(t0)
			rt := NewTransport(newBase(t), retry.Constant(time.Second).Take(3), retry.WithClock(clock))
			resp, err := rt.RoundTrip(mustGet(t, srv.URL))
			require.NoError(t, err)
			assert.Equal(t, "attempt 2", readAll(t, resp))
			assert.Equal(t, []time.Duration{tt.sleep}, clock.Sleeps())
		})
	}
}

// TestRateLimitTooLong: a server asking for a wait longer than MaxPushback
// or than the deadline leaves ends the call at once, with its response,
// and with ErrPushbackTooLong as the reason OnDone sees.
func TestRateLimitTooLong(t *testing.T) {
	tests := []struct {
		name     string
		first    http.HandlerFunc
		deadline bool
	}{
		{"Retry-After over the default MaxPushback", status(503, "Retry-After", "99999999999"), false},
		{"Retry-After date in the year 9999", status(429, "Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT"), false},
		{"retry-after-ms of two minutes", status(429, "Retry-After-Ms", "120000"), false},
		{"X-RateLimit-Reset in an hour", status(429, "X-RateLimit-Reset", strconv.FormatInt(t0.Add(time.Hour).Unix(), 10)), false},
		{"RateLimit in a day", status(429, "RateLimit", `"daily";r=0;t=86400`), false},
		{"RateLimit past the deadline", status(429, "RateLimit", `"d";r=0;t=30`), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv, base := newPipeServer(t, tt.first, status(200))
				clock := retry.NewFakeClock(t0)
				var reason error
				rt := NewTransport(base, retry.Constant(time.Second).Take(3), retry.WithClock(clock),
					retry.OnDone(func(o retry.Outcome) { reason = o.Reason }))
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
				require.NoError(t, err)
				resp, err := rt.RoundTrip(req)
				require.NoError(t, err)
				assert.Equal(t, "attempt 1", readAll(t, resp), "the server's answer, unread")
				assert.Empty(t, clock.Sleeps())
				assert.Len(t, srv.requests(), 1)
				assert.ErrorIs(t, reason, retry.ErrPushbackTooLong)
				var pe *retry.PushbackTooLongError
				require.ErrorAs(t, reason, &pe)
				assert.Equal(t, tt.deadline, pe.Deadline)
				assert.Equal(t, tt.deadline, errors.Is(reason, context.DeadlineExceeded))
			})
		})
	}
}

// FuzzRateLimitHeaders checks that no header text panics or yields a
// negative wait, and that withPushback always keeps the error.
func FuzzRateLimitHeaders(f *testing.F) {
	for _, s := range [][4]string{
		{"2500", `"default";r=0;t=30`, `"default";q=100;w=60`, "1893553445"},
		{"1.5", `limit=1, remaining=0, reset=5`, "", "12"},
		{"", `("a" "b");r=0, "c";r=0;t=1;pk=:AAA=:`, `"c";w=9`, "1893553445000"},
		{"x", `"a\`, `;`, "-1"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, ms, rl, pol, reset string) {
		if d, ok := parseDecimal(ms, time.Millisecond); d < 0 || !ok && d != 0 {
			t.Fatalf("parseDecimal(%q) = %v, %v", ms, d, ok)
		}
		if d, ok := parseRateLimit(rl, pol); d < 0 || !ok && d != 0 {
			t.Fatalf("parseRateLimit(%q, %q) = %v, %v", rl, pol, d, ok)
		}
		if ra, ok := parseReset(reset); ra.delay < 0 || !ok && ra != (retryAfter{}) {
			t.Fatalf("parseReset(%q) = %+v, %v", reset, ra, ok)
		}
		h := http.Header{"Retry-After-Ms": {ms}, "Ratelimit": {rl}, "Ratelimit-Policy": {pol}, "X-Ratelimit-Reset": {reset}}
		if withPushback(errors.New("x"), h) == nil {
			t.Fatal("lost the error")
		}
	})
}

// TestRateLimitHerd: 1 000 clients call a server that serves 100 requests
// a second and answers the rest 429 with the time its quota resets for
// them (the start of the first second with room left, as a limiter that
// books the places it hands out does, and keeps them for those clients). Honouring the header, the clients
// come back at no more than 1.1 times the capacity in any second, for each
// header form. The server is an in-memory pipe in a synctest bubble, so
// time is fake and the test deterministic.
func TestRateLimitHerd(t *testing.T) {
	const clients, capacity = 1000, 100
	forms := []struct {
		name   string
		header func(w http.ResponseWriter, now, at time.Time)
	}{
		{"Retry-After", func(w http.ResponseWriter, now, at time.Time) {
			w.Header().Set("Retry-After", strconv.Itoa(int(at.Sub(now).Round(time.Second)/time.Second)))
		}},
		{"retry-after-ms", func(w http.ResponseWriter, now, at time.Time) {
			w.Header().Set("Retry-After-Ms", strconv.FormatInt(at.Sub(now).Milliseconds(), 10))
		}},
		{"X-RateLimit-Reset, Unix time", func(w http.ResponseWriter, now, at time.Time) {
			w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(at.Unix(), 10))
			w.Header().Set("X-RateLimit-Remaining", "0")
		}},
		{"X-RateLimit-Reset, seconds", func(w http.ResponseWriter, now, at time.Time) {
			w.Header().Set("X-RateLimit-Reset", strconv.Itoa(int(at.Sub(now).Round(time.Second)/time.Second)))
		}},
		{"RateLimit", func(w http.ResponseWriter, now, at time.Time) {
			w.Header().Set("RateLimit", `"default";r=0;t=`+strconv.Itoa(int(at.Sub(now).Round(time.Second)/time.Second)))
			w.Header().Set("RateLimit-Policy", `"default";q=100;w=1`)
		}},
	}
	for _, form := range forms {
		t.Run(form.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now() // a whole second: synctest's epoch
				var mu sync.Mutex
				booked := map[int64]int{}      // second → requests served or promised
				arrivals := map[int64]int{}    // second → requests received
				promised := map[string]int64{} // client → the second booked for it
				handler := func(w http.ResponseWriter, r *http.Request) {
					now := time.Now()
					mu.Lock()
					sec := int64(now.Sub(start) / time.Second)
					arrivals[sec]++
					if slot, ok := promised[r.URL.Path]; ok && slot <= sec {
						delete(promised, r.URL.Path) // its booked place
						mu.Unlock()
						w.WriteHeader(http.StatusOK)
						return
					}
					if booked[sec] < capacity {
						booked[sec]++
						mu.Unlock()
						w.WriteHeader(http.StatusOK)
						return
					}
					next := sec + 1
					for booked[next] >= capacity {
						next++
					}
					booked[next]++
					promised[r.URL.Path] = next
					mu.Unlock()
					form.header(w, now, start.Add(time.Duration(next)*time.Second))
					w.WriteHeader(http.StatusTooManyRequests)
				}
				srv, base := newPipeServer(t, handler)
				base.MaxIdleConnsPerHost = clients
				client := &http.Client{Transport: NewTransport(base, retry.Constant(100*time.Millisecond).Take(5))}
				var wg sync.WaitGroup
				codes := make([]int, clients)
				for i := range clients {
					wg.Go(func() {
						resp, err := client.Get(srv.URL + "/" + strconv.Itoa(i))
						if err != nil {
							t.Error(err)
							return
						}
						codes[i] = resp.StatusCode
						resp.Body.Close()
					})
				}
				wg.Wait()
				base.CloseIdleConnections()
				for i, c := range codes {
					require.Equal(t, http.StatusOK, c, "client %d", i)
				}
				peak := 0
				for sec, n := range arrivals {
					if sec > 0 { // second 0 is the first attempts, not a return
						peak = max(peak, n)
					}
				}
				t.Logf("%s: %d clients, capacity %d/s, served in %d s, peak returns %d/s (%.2f× capacity)",
					form.name, clients, capacity, len(arrivals), peak, float64(peak)/capacity)
				assert.LessOrEqual(t, float64(peak), 1.1*capacity)
			})
		})
	}
}
