package retryaws_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// answer is one scripted response of the fake DynamoDB server.
type answer struct {
	status int
	code   string            // the error's __type; "" for a success
	header map[string]string // extra response headers
}

var (
	ok          = answer{status: 200}
	throttled   = answer{status: 400, code: "ThrottlingException"}
	throughput  = answer{status: 400, code: "ProvisionedThroughputExceededException"}
	internal    = answer{status: 500, code: "InternalServerError"}
	unavailable = answer{status: 503, code: "ServiceUnavailable"}
	invalid     = answer{status: 400, code: "ValidationException"}
)

// server is a loopback DynamoDB endpoint that answers each request with the
// next answer of its script (the last one again once the script runs out)
// and counts the requests.
type server struct {
	*httptest.Server
	mu      sync.Mutex
	script  []answer
	n       int
	headers []string // Amz-Sdk-Request of each request
}

func newServer(t testing.TB, script ...answer) *server {
	t.Helper()
	s := &server{script: script}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	a := s.script[min(s.n, len(s.script)-1)]
	s.n++
	s.headers = append(s.headers, r.Header.Get("Amz-Sdk-Request"))
	s.mu.Unlock()
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	if a.code == "" {
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"TableNames":["t"]}`))
		return
	}
	w.WriteHeader(a.status)
	w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#` + a.code + `","message":"scripted"}`))
}

// attempts returns the number of requests the server received.
func (s *server) attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// recorder is an HTTP client that notes the time each attempt is sent, on
// the clock of the goroutine's bubble under synctest.
type recorder struct {
	c     *http.Client
	mu    sync.Mutex
	start time.Time
	at    []time.Duration
}

func newRecorder() *recorder {
	// No keep-alive: an idle connection's reader is blocked on the
	// network, which is not durably blocked for synctest, and would keep
	// the bubble's clock from moving during the waits.
	return &recorder{c: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}, start: time.Now()}
}

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.at = append(r.at, time.Since(r.start))
	r.mu.Unlock()
	return r.c.Do(req)
}

// times returns when each attempt was sent, from the recorder's creation.
func (r *recorder) times() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.at...)
}

// newClient returns a DynamoDB client of the server with retryer r, static
// credentials and hc as its HTTP client; nothing leaves the loopback.
func newClient(url string, r aws.Retryer, hc dynamodb.HTTPClient) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(url),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "SECRET", Source: "test"}, nil
		}),
		Retryer:    r,
		HTTPClient: hc,
	})
}

// list makes one ListTables call.
func list(ctx context.Context, c *dynamodb.Client) error {
	_, err := c.ListTables(ctx, &dynamodb.ListTablesInput{})
	return err
}

func itoa(n int) string { return strconv.Itoa(n) }
