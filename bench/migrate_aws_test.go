package bench_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryaws"
)

// throttlingDynamo starts a loopback DynamoDB endpoint that answers
// ThrottlingException n times, then lists one table, "orders".
func throttlingDynamo(n int) *httptest.Server {
	var calls atomic.Int64
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		if calls.Add(1) <= int64(n) {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException"}`)
			return
		}
		fmt.Fprint(w, `{"TableNames":["orders"]}`)
	}))
}

// dynamoOptions are a DynamoDB client's options for endpoint url, with
// static credentials: nothing leaves the machine.
func dynamoOptions(url string) dynamodb.Options {
	return dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(url),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "SECRET"}, nil
		}),
	}
}

func Example_awsBefore() {
	ctx := context.Background()
	srv := throttlingDynamo(2) // ThrottlingException twice, then a table
	defer srv.Close()

	retryer := awsretry.AddWithMaxAttempts(awsretry.NewStandard(func(o *awsretry.StandardOptions) {
		o.MaxBackoff = 10 * time.Millisecond
	}), 5)
	client := dynamodb.New(dynamoOptions(srv.URL), func(o *dynamodb.Options) { o.Retryer = retryer })
	out, err := client.ListTables(ctx, &dynamodb.ListTablesInput{})
	fmt.Println(out.TableNames, err)
	// Output:
	// [orders] <nil>
}

func Example_awsAfter() {
	ctx := context.Background()
	srv := throttlingDynamo(2) // ThrottlingException twice, then a table
	defer srv.Close()

	policy := retry.Exponential(time.Millisecond).Cap(10 * time.Millisecond).FullJitter(nil).Take(4) // 5 attempts
	budget := retry.NewBudget(0.1, 10)                                                               // share it between clients
	client := dynamodb.New(dynamoOptions(srv.URL), func(o *dynamodb.Options) { o.Retryer = retryaws.New(policy, budget) })
	out, err := client.ListTables(ctx, &dynamodb.ListTablesInput{})
	fmt.Println(out.TableNames, err)
	// Output:
	// [orders] <nil>
}

// awsScript is an in-memory HTTP client for a DynamoDB client: it answers
// with status codes in turn (the last one again once they run out) and
// records when each request came, on the bubble's clock.
type awsScript struct {
	start   time.Time
	answers []awsAnswer
	at      []time.Duration
}

type awsAnswer struct {
	status int
	header http.Header
}

func (s *awsScript) Do(req *http.Request) (*http.Response, error) {
	a := s.answers[min(len(s.at), len(s.answers)-1)]
	s.at = append(s.at, time.Since(s.start))
	body := `{"TableNames":[]}`
	if a.status != 200 {
		body = `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError"}`
	}
	h := http.Header{"Content-Type": {"application/x-amz-json-1.0"}}
	for k, v := range a.header {
		h[k] = v
	}
	return &http.Response{StatusCode: a.status, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

func awsClient(s *awsScript, r aws.Retryer) *dynamodb.Client {
	o := dynamoOptions("http://dynamodb.invalid")
	o.HTTPClient, o.Retryer = s, r
	return dynamodb.New(o)
}

func noBackoff(o *awsretry.StandardOptions) {
	o.Backoff = awsretry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
}

func TestAWSDifferences(t *testing.T) {
	ctx := context.Background()
	list := func(c *dynamodb.Client) error {
		_, err := c.ListTables(ctx, &dynamodb.ListTablesInput{})
		return err
	}
	t.Run("Retry-After on a 503", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			answers := []awsAnswer{{503, http.Header{"Retry-After": {"2"}}}, {200, nil}}
			s := &awsScript{start: time.Now(), answers: answers}
			if err := list(awsClient(s, awsretry.NewStandard(noBackoff))); err != nil || len(s.at) != 2 || s.at[1] != 0 {
				t.Errorf("standard: %v, requests at %v; want the retry at once", err, s.at)
			}
			s = &awsScript{start: time.Now(), answers: answers}
			if err := list(awsClient(s, retryaws.New(retry.Delays(0), nil))); err != nil || len(s.at) != 2 || s.at[1] != 2*time.Second {
				t.Errorf("retryaws: %v, requests at %v; want the retry after 2s", err, s.at)
			}
		})
	})
	t.Run("a success refunds the quota, not a budget", func(t *testing.T) {
		answers := []awsAnswer{{500, nil}, {200, nil}}
		// A quota of 14 tokens: one retry, which the success refunds.
		std := awsretry.NewStandard(noBackoff, func(o *awsretry.StandardOptions) { o.RateLimiter = ratelimit.NewTokenRateLimit(14) })
		for i := range 3 {
			s := &awsScript{answers: answers}
			if err := list(awsClient(s, std)); err != nil || len(s.at) != 2 {
				t.Errorf("standard, call %d: %v after %d requests; want a success after 2", i+1, err, len(s.at))
			}
		}
		// A budget of 1 token that calls do not refill: one retry in all.
		ours := retryaws.New(retry.Constant(0).Take(2), retry.NewBudget(0, 1))
		s := &awsScript{answers: answers}
		if err := list(awsClient(s, ours)); err != nil || len(s.at) != 2 {
			t.Errorf("retryaws, call 1: %v after %d requests; want a success after 2", err, len(s.at))
		}
		s = &awsScript{answers: answers}
		if err := list(awsClient(s, ours)); !errors.Is(err, retry.ErrBudgetExhausted) || len(s.at) != 1 {
			t.Errorf("retryaws, call 2: %v after %d requests; want the budget's refusal after 1", err, len(s.at))
		}
	})
	t.Run("attempts", func(t *testing.T) {
		if got := awsretry.NewStandard().MaxAttempts(); got != 3 {
			t.Errorf("standard: MaxAttempts %d, want 3", got)
		}
		if got := retryaws.New(retry.Constant(time.Second).Take(4), nil).MaxAttempts(); got != 5 {
			t.Errorf("retryaws, Take(4): MaxAttempts %d, want 5", got)
		}
		if got := retryaws.New(retry.Constant(time.Second), nil).MaxAttempts(); got != 0 {
			t.Errorf("retryaws, an infinite schedule: MaxAttempts %d, want 0 (no limit)", got)
		}
	})
}
