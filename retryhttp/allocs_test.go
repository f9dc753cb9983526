package retryhttp_test

import (
	"net/http"
	"testing"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryhttp"
)

// stubBase answers every request with the same response, allocating nothing.
type stubBase struct{ resp *http.Response }

func (b stubBase) RoundTrip(*http.Request) (*http.Response, error) { return b.resp, nil }

// TestAllocs guards the hot path: a request that succeeds at once costs the
// Transport no allocation, with or without options.
func TestAllocs(t *testing.T) {
	if retryhttp.RaceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	base := stubBase{&http.Response{StatusCode: 200, Body: http.NoBody}}
	get, err := http.NewRequest(http.MethodGet, "http://example.test/", nil)
	if err != nil {
		t.Fatal(err)
	}
	post, err := http.NewRequest(http.MethodPost, "http://example.test/", nil)
	if err != nil {
		t.Fatal(err)
	}
	options := retryhttp.NewTransport(base, retry.Constant(0).Take(3),
		retry.WithBudget(retry.NewBudget(0.1, 10)),
		retry.OnRetry(func(retry.Attempt) {}),
		retry.If(retry.IsTransient),
		retry.MaxPushback(0))
	hooks := retryhttp.NewTransport(base, nil)
	hooks.ShouldRetry = retryhttp.DefaultShouldRetry
	hooks.OnAttempt = func(*http.Request, int) {}
	hooks.PrepareRetry = func(*http.Request) error { return nil }
	hooks.BufferBody = 1 << 20
	perHost := retryhttp.NewTransport(base, nil)
	perHost.Breaker = retryhttp.PerHost(func(string) *retry.Breaker { return retry.NewBreaker() })
	perHost.Throttle = retryhttp.PerHost(func(string) *retry.Throttle { return retry.NewThrottle() })
	limited := retryhttp.NewTransport(base, nil)
	limited.Limiter = retryhttp.PerHost(func(string) *retry.Limiter { return retry.NewLimiter() })
	for _, tt := range []struct {
		name string
		rt   *retryhttp.Transport
		req  *http.Request
	}{
		{"defaults", retryhttp.NewTransport(base, nil), get},
		{"zero Transport", retryhttp.TransportWithBase(base), get},
		{"options", options, get},
		{"sent once", retryhttp.NewTransport(base, nil), post},
		{"sent once with options", options, post},
		{"hooks", hooks, get},
		{"hooks, sent once", hooks, post},
		{"a Breaker and a Throttle per host", perHost, get},
		{"a Limiter per host", limited, get},
	} {
		t.Run(tt.name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(100, func() {
				if _, err := tt.rt.RoundTrip(tt.req); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("RoundTrip allocates %v times per successful request, want 0", allocs)
			}
		})
	}
}
