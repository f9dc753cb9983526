package retryaws_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryaws"
)

func ExampleNew() {
	// A loopback DynamoDB that throttles the first request of every two.
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		if requests.Add(1)%2 == 1 {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException"}`)
			return
		}
		fmt.Fprint(w, `{"TableNames":["orders"]}`)
	}))
	defer srv.Close()

	// Retries on a schedule, at most 10% of calls plus a reserve of 1.
	policy := retry.Constant(time.Millisecond).Take(3)
	budget := retry.NewBudget(0.1, 1)
	client := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "SECRET"}, nil
		}),
		Retryer: retryaws.New(policy, budget),
	})

	out, err := client.ListTables(context.Background(), &dynamodb.ListTablesInput{})
	fmt.Println(out.TableNames, err, requests.Load(), "requests")

	// The reserve is spent: the next throttled call is not retried.
	_, err = client.ListTables(context.Background(), &dynamodb.ListTablesInput{})
	var quota ratelimit.QuotaExceededError
	fmt.Println(errors.Is(err, retry.ErrBudgetExhausted), errors.As(err, &quota), requests.Load(), "requests")
	// Output:
	// [orders] <nil> 2 requests
	// true true 3 requests
}
