package retryaws_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryaws"
)

// memory is an HTTP client that answers every request with a success
// without any network, so that a benchmark measures the SDK's own work.
type memory struct{}

func (memory) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{
		StatusCode: 200,
		Header:     http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:       io.NopCloser(strings.NewReader(`{"TableNames":["t"]}`)),
		Request:    req,
	}, nil
}

// BenchmarkSuccess measures a ListTables call that succeeds at once with
// no retryer (aws.NopRetryer, the bare client), with retryaws.New and a
// Budget, and with the SDK's standard retryer, over the loopback and in
// memory. Run with -count to interleave them.
func BenchmarkSuccess(b *testing.B) {
	policy := retry.Exponential(50 * time.Millisecond).Cap(5 * time.Second).FullJitter(nil).Take(4)
	retryers := []struct {
		name string
		r    func() aws.Retryer
	}{
		{"bare", func() aws.Retryer { return aws.NopRetryer{} }},
		{"retryaws", func() aws.Retryer { return retryaws.New(policy, retry.NewBudget(0.1, 10)) }},
		{"standard", func() aws.Retryer { return awsretry.NewStandard() }},
	}
	srv := newServer(b, ok)
	for _, transport := range []struct {
		name string
		url  string
		hc   func() interface {
			Do(*http.Request) (*http.Response, error)
		}
	}{
		{"loopback", srv.URL, func() interface {
			Do(*http.Request) (*http.Response, error)
		} {
			return &http.Client{Transport: &http.Transport{}}
		}},
		{"memory", "http://127.0.0.1:1", func() interface {
			Do(*http.Request) (*http.Response, error)
		} {
			return memory{}
		}},
	} {
		for _, r := range retryers {
			b.Run(transport.name+"/"+r.name, func(b *testing.B) {
				c := newClient(transport.url, r.r(), transport.hc())
				b.ReportAllocs()
				for b.Loop() {
					if err := list(b.Context(), c); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkInterleaved measures the same three clients as
// BenchmarkSuccess's memory cases, one call of each per iteration in a
// rotating order, so that the load of a shared machine falls on all three
// alike. It reports each client's median call time and the ratios of the
// medians to the bare client's: the figure to compare against a target.
func BenchmarkInterleaved(b *testing.B) {
	policy := retry.Exponential(50 * time.Millisecond).Cap(5 * time.Second).FullJitter(nil).Take(4)
	clients := []interface {
		ListTables(context.Context, *dynamodb.ListTablesInput, ...func(*dynamodb.Options)) (*dynamodb.ListTablesOutput, error)
	}{
		newClient("http://127.0.0.1:1", aws.NopRetryer{}, memory{}),
		newClient("http://127.0.0.1:1", retryaws.New(policy, retry.NewBudget(0.1, 10)), memory{}),
		newClient("http://127.0.0.1:1", awsretry.NewStandard(), memory{}),
	}
	times := make([][]time.Duration, len(clients))
	i := 0
	for b.Loop() {
		for k := range clients {
			j := (i + k) % len(clients)
			start := time.Now()
			if _, err := clients[j].ListTables(b.Context(), &dynamodb.ListTablesInput{}); err != nil {
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
	bare, ours, std := median(times[0]), median(times[1]), median(times[2])
	b.ReportMetric(bare, "bare-ns/call")
	b.ReportMetric(ours, "retryaws-ns/call")
	b.ReportMetric(std, "standard-ns/call")
	b.ReportMetric(ours/bare, "retryaws/bare")
	b.ReportMetric(std/bare, "standard/bare")
}
