package retryhttp_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryhttp"
)

// BenchmarkTransport measures a successful GET against a loopback server
// through a bare http.Client and through a Transport on the same kind of
// base, so the Transport's overhead on the happy path reads off one run:
//
//	go test -run '^$' -bench Transport -count 6 ./retryhttp/ > bench.txt
//	benchstat -col /client bench.txt
func BenchmarkTransport(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	clients := []struct {
		name string
		wrap func(http.RoundTripper) http.RoundTripper
	}{
		{"bare", func(base http.RoundTripper) http.RoundTripper { return base }},
		{"retryhttp", func(base http.RoundTripper) http.RoundTripper { return retryhttp.NewTransport(base, nil) }},
		{"retryhttp-timeout", func(base http.RoundTripper) http.RoundTripper {
			return retryhttp.NewTransport(base, nil, retry.AttemptTimeout(10*time.Second))
		}},
		{"hedging", func(base http.RoundTripper) http.RoundTripper {
			return retryhttp.NewHedgingTransport(base, hedgeLate)
		}},
	}
	for _, c := range clients {
		b.Run("client="+c.name, func(b *testing.B) {
			base := &http.Transport{}
			defer base.CloseIdleConnections()
			client := &http.Client{Transport: c.wrap(base)}
			req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// BenchmarkTransportPaired sends the same GET through a bare http.Client and
// through a Transport in alternation, timing each request, so that load from
// elsewhere on the machine hits both alike: it reports the mean time of each
// and their ratio, the Transport's overhead on the happy path.
func BenchmarkTransportPaired(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	bareBase, retryBase := &http.Transport{}, &http.Transport{}
	defer bareBase.CloseIdleConnections()
	defer retryBase.CloseIdleConnections()
	clients := [2]*http.Client{{Transport: bareBase}, {Transport: retryhttp.NewTransport(retryBase, nil)}}
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	if err != nil {
		b.Fatal(err)
	}
	var spent [2]time.Duration
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		for k := range 2 {
			c := (i + k) % 2 // alternate which goes first
			start := time.Now()
			resp, err := clients[c].Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			spent[c] += time.Since(start)
		}
		i++
	}
	b.ReportMetric(float64(spent[0].Nanoseconds())/float64(b.N), "bare-ns/req")
	b.ReportMetric(float64(spent[1].Nanoseconds())/float64(b.N), "retryhttp-ns/req")
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "ratio")
}

// BenchmarkTransportOverhead isolates the Transport's own cost on the happy
// path: the base answers at once from memory, so the difference between the
// two is all the Transport's doing, free of network noise.
func BenchmarkTransportOverhead(b *testing.B) {
	base := stubBase{&http.Response{StatusCode: 200, Body: http.NoBody}}
	req, err := http.NewRequest(http.MethodGet, "http://example.test/", nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"bare", base},
		{"retryhttp", retryhttp.NewTransport(base, nil)},
		{"retryhttp-options", retryhttp.NewTransport(base, nil, retry.WithBudget(retry.NewBudget(0.1, 10)), retry.OnRetry(func(retry.Attempt) {}))},
		{"retryhttp-timeout", retryhttp.NewTransport(base, nil, retry.AttemptTimeout(10*time.Second))},
		{"hedging", retryhttp.NewHedgingTransport(base, hedgeLate)},
	} {
		b.Run("client="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.rt.RoundTrip(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// hedgeLate is the hedge schedule of the benchmarks' hedging Transports: one
// hedge, after a delay no loopback request comes near, so that the first
// copy always wins and the fast path alone is measured.
var hedgeLate = retry.Constant(10 * time.Second).Take(1)

// BenchmarkHedgingTransportPaired is BenchmarkTransportPaired for a hedging
// Transport whose first copy always wins before the delay: it sends the
// same GET through a bare http.Client and through the hedging Transport in
// alternation, and reports the mean time of each and their ratio.
func BenchmarkHedgingTransportPaired(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	bareBase, hedgeBase := &http.Transport{}, &http.Transport{}
	defer bareBase.CloseIdleConnections()
	defer hedgeBase.CloseIdleConnections()
	clients := [2]*http.Client{{Transport: bareBase}, {Transport: retryhttp.NewHedgingTransport(hedgeBase, hedgeLate)}}
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	if err != nil {
		b.Fatal(err)
	}
	var spent [2]time.Duration
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		for k := range 2 {
			c := (i + k) % 2 // alternate which goes first
			start := time.Now()
			resp, err := clients[c].Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			spent[c] += time.Since(start)
		}
		i++
	}
	b.ReportMetric(float64(spent[0].Nanoseconds())/float64(b.N), "bare-ns/req")
	b.ReportMetric(float64(spent[1].Nanoseconds())/float64(b.N), "hedging-ns/req")
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "ratio")
}
