package retryconnect_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryconnect"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// memory is an HTTP client that serves each request with a handler in the
// same goroutine, without any network, so that a benchmark measures
// Connect's own work and the interceptor's.
type memory struct{ h http.Handler }

func (m memory) Do(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	m.h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

func echoHandler() http.Handler {
	return connect.NewUnaryHandler(getProcedure,
		func(ctx context.Context, req *connect.Request[msg]) (*connect.Response[msg], error) {
			return connect.NewResponse(req.Msg), nil
		})
}

type unaryClient = func(context.Context, *connect.Request[msg]) (*connect.Response[msg], error)

// variants returns the calls the benchmarks compare, over hc at url: a
// bare client, one with NewInterceptor, and Hedge on a bare client (whose
// hedge never starts).
func variants(hc connect.HTTPClient, url string) []struct {
	name string
	call unaryClient
} {
	policy := retry.Exponential(100 * time.Millisecond).Cap(2 * time.Second).FullJitter(nil).Take(4)
	budget := retry.NewBudget(0.1, 10)
	idem := connect.WithIdempotency(connect.IdempotencyNoSideEffects)
	bare := connect.NewClient[msg, msg](hc, url+getProcedure, idem)
	retrying := connect.NewClient[msg, msg](hc, url+getProcedure, idem,
		connect.WithInterceptors(retryconnect.NewInterceptor(policy, retryconnect.With(retry.WithBudget(budget)))))
	hedgeAfter := retry.Constant(time.Second).Take(1)
	return []struct {
		name string
		call unaryClient
	}{
		{"bare", bare.CallUnary},
		{"retryconnect", retrying.CallUnary},
		{"hedge", func(ctx context.Context, req *connect.Request[msg]) (*connect.Response[msg], error) {
			return retryconnect.Hedge(ctx, hedgeAfter, bare.CallUnary, req)
		}},
	}
}

// BenchmarkSuccess measures a unary call that succeeds at once, in memory
// and over the loopback (HTTP/1.1, the Connect protocol).
func BenchmarkSuccess(b *testing.B) {
	srv := httptest.NewServer(echoHandler())
	defer srv.Close()
	for _, transport := range []struct {
		name string
		hc   connect.HTTPClient
		url  string
	}{
		{"memory", memory{echoHandler()}, "http://in.memory"},
		{"loopback", srv.Client(), srv.URL},
	} {
		for _, v := range variants(transport.hc, transport.url) {
			b.Run(transport.name+"/"+v.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := v.call(b.Context(), connect.NewRequest(wrapperspb.String("hi"))); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkInterleaved makes one in-memory call of each variant per
// iteration, in rotating order, so that the load of a shared machine falls
// on all alike, and reports each one's median call time and its ratio to
// the bare client's: the figure to compare against a target.
func BenchmarkInterleaved(b *testing.B) {
	vs := variants(memory{echoHandler()}, "http://in.memory")
	times := make([][]time.Duration, len(vs))
	i := 0
	for b.Loop() {
		for k := range vs {
			j := (i + k) % len(vs)
			start := time.Now()
			if _, err := vs[j].call(b.Context(), connect.NewRequest(wrapperspb.String("hi"))); err != nil {
				b.Fatal(err)
			}
			times[j] = append(times[j], time.Since(start))
		}
		i++
	}
	median := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2])
	}
	bare := median(times[0])
	b.ReportMetric(bare, "bare-ns/call")
	for j, v := range vs[1:] {
		m := median(times[j+1])
		b.ReportMetric(m, v.name+"-ns/call")
		b.ReportMetric(m/bare, v.name+"/bare")
	}
}
