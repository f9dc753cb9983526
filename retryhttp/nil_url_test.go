package retryhttp

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/stretchr/testify/assert"
)

// TestNilURL checks that a request without a URL gets net/http's error, and
// has its body closed, in every mode of the Transport, on a real
// http.Transport: with a Throttle or a Breaker it used to panic reading the
// URL's Host.
func TestNilURL(t *testing.T) {
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	s := retry.Constant(time.Millisecond).Take(2)
	throttle := PerHost(func(string) *retry.Throttle { return retry.NewThrottle() })
	breaker := PerHost(func(string) *retry.Breaker { return retry.NewBreaker() })
	for _, tt := range []struct {
		name   string
		method string
		make   func() *Transport
	}{
		{"plain", http.MethodGet, func() *Transport { return NewTransport(base, s) }},
		{"throttle", http.MethodGet, func() *Transport { tr := NewTransport(base, s); tr.Throttle = throttle; return tr }},
		{"breaker", http.MethodGet, func() *Transport { tr := NewTransport(base, s); tr.Breaker = breaker; return tr }},
		{"breaker, sent once", http.MethodPost, func() *Transport { tr := NewTransport(base, s); tr.Breaker = breaker; return tr }},
		{"hedging with a throttle", http.MethodGet, func() *Transport {
			tr := NewHedgingTransport(base, s)
			tr.Throttle = throttle
			return tr
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := &closeCounter{Reader: strings.NewReader("x")}
			req := &http.Request{Method: tt.method, Header: http.Header{}, Body: body}
			req = req.WithContext(t.Context())
			var resp *http.Response
			var err error
			assert.NotPanics(t, func() { resp, err = tt.make().RoundTrip(req) })
			assert.Nil(t, resp)
			if assert.Error(t, err) {
				assert.Equal(t, "http: nil Request.URL", err.Error())
			}
			assert.Equal(t, 1, body.closed, "body closed once")
		})
	}
}
