package bench

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/hashicorp/go-retryablehttp"
	"github.com/seed-b8c8f69d/retry/retryhttp"
)

// BenchmarkHTTP measures one successful GET against a loopback server: a
// bare http.Client, the floor here, against the same client with each
// library's retrying transport or client. Every client gets its own clone of
// http.DefaultTransport, so they differ only in the retry layer, and reads
// and closes each body so that the connection is reused.
func BenchmarkHTTP(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	transport := func() *http.Transport { return http.DefaultTransport.(*http.Transport).Clone() }

	// get runs the benchmark loop for one client.
	get := func(b *testing.B, do func() (*http.Response, error)) {
		b.ReportAllocs()
		for b.Loop() {
			resp, err := do()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				b.Fatal(err)
			}
			if err := resp.Body.Close(); err != nil {
				b.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	}

	b.Run("lib=bare", func(b *testing.B) {
		client := &http.Client{Transport: transport()}
		defer client.CloseIdleConnections()
		get(b, func() (*http.Response, error) { return client.Get(srv.URL) })
	})
	b.Run("lib=retry", func(b *testing.B) {
		client := &http.Client{Transport: retryhttp.NewTransport(transport(), ours(standard))}
		defer client.CloseIdleConnections()
		get(b, func() (*http.Response, error) { return client.Get(srv.URL) })
	})
	// go-retryablehttp's own client, as its README shows first. Its default
	// backoff is exponential from RetryWaitMin to RetryWaitMax without
	// jitter, the closest it has; its default logger, which writes a line
	// per request to stderr, is switched off.
	hashicorp := func() *retryablehttp.Client {
		c := retryablehttp.NewClient()
		c.HTTPClient = &http.Client{Transport: transport()}
		c.Logger = nil
		c.RetryWaitMin, c.RetryWaitMax, c.RetryMax = standard.base, standard.limit, attempts-1
		return c
	}
	b.Run("lib=hashicorp", func(b *testing.B) {
		c := hashicorp()
		defer c.HTTPClient.CloseIdleConnections()
		get(b, func() (*http.Response, error) { return c.Get(srv.URL) })
	})
	// The same as an *http.Client, through StandardClient.
	b.Run("lib=hashicorp-std", func(b *testing.B) {
		c := hashicorp()
		defer c.HTTPClient.CloseIdleConnections()
		client := c.StandardClient()
		get(b, func() (*http.Response, error) { return client.Get(srv.URL) })
	})
	// failsafe-go's RoundTripper, with its HTTP retry policy given the
	// standard policy as in failsafePolicy.
	b.Run("lib=failsafe", func(b *testing.B) {
		rp := failsafehttp.NewRetryPolicyBuilder().
			WithMaxAttempts(attempts).
			WithBackoff(half(standard.base), half(standard.limit)).
			WithJitterFactor(1).
			Build()
		tr := transport()
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: failsafehttp.NewRoundTripper(tr, rp)}
		get(b, func() (*http.Response, error) { return client.Get(srv.URL) })
	})
}
