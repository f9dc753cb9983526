package retryaws_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"
	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryaws"
)

func TestRetriesThrottlingAnd5xxOnSchedule(t *testing.T) {
	srv := newServer(t, throttled, internal, throughput, unavailable, ok)
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		c := newClient(srv.URL, retryaws.New(retry.Delays(time.Second, 2*time.Second, 3*time.Second, 4*time.Second), nil), rec)
		if err := list(t.Context(), c); err != nil {
			t.Fatalf("ListTables: %v", err)
		}
		want := []time.Duration{0, time.Second, 3 * time.Second, 6 * time.Second, 10 * time.Second}
		if got := rec.times(); !slices.Equal(got, want) {
			t.Errorf("attempts sent at %v, want %v", got, want)
		}
	})
	if got := srv.attempts(); got != 5 {
		t.Errorf("server saw %d attempts, want 5", got)
	}
	// The SDK's metrics header carries MaxAttempts: 4 delays, 5 attempts.
	if got, want := srv.headers[0], "attempt=1; max=5"; got != want {
		t.Errorf("Amz-Sdk-Request = %q, want %q", got, want)
	}
}

func TestMaxAttemptsIsScheduleLengthPlusOne(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    retry.Schedule
		want int
	}{
		{"empty", retry.Delays(), 1},
		{"take 2", retry.Exponential(time.Second).FullJitter(nil).Take(2), 3},
		{"1000 delays", retry.Constant(0).Take(1000), 1001},
		{"1001 delays", retry.Constant(0).Take(1001), 0},
		{"infinite", retry.Exponential(time.Second), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := retryaws.New(tc.s, nil).MaxAttempts(); got != tc.want {
				t.Errorf("MaxAttempts() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestGivesUpAsTheStandardRetryer(t *testing.T) {
	// Two retries, then the standard retryer's MaxAttemptsError around the
	// last attempt's API error, for both retryers.
	for _, tc := range []struct {
		name string
		r    aws.Retryer
	}{
		{"retryaws", retryaws.New(retry.Delays(time.Second, time.Second), nil)},
		{"standard", awsretry.NewStandard(func(o *awsretry.StandardOptions) { o.MaxAttempts = 3 })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, throttled)
			synctest.Test(t, func(t *testing.T) {
				err := list(t.Context(), newClient(srv.URL, tc.r, newRecorder()))
				var me *awsretry.MaxAttemptsError
				if !errors.As(err, &me) || me.Attempt != 3 {
					t.Fatalf("error %v: want a MaxAttemptsError after 3 attempts", err)
				}
				var api smithy.APIError
				if !errors.As(err, &api) || api.ErrorCode() != "ThrottlingException" {
					t.Errorf("error %v: want the ThrottlingException", err)
				}
			})
			if got := srv.attempts(); got != 3 {
				t.Errorf("server saw %d attempts, want 3", got)
			}
		})
	}
}

func TestSameErrorsRetriedAsTheStandardRetryer(t *testing.T) {
	// Each scenario runs against both retryers, with the same number of
	// attempts allowed; the server must see the same number of attempts.
	for _, tc := range []struct {
		name   string
		script []answer
		want   int
	}{
		{"throttling", []answer{throttled, ok}, 2},
		{"throughput exceeded", []answer{throughput, ok}, 2},
		{"500", []answer{internal, ok}, 2},
		{"503", []answer{unavailable, ok}, 2},
		{"502 unmodeled", []answer{{status: 502, code: "BadGateway"}, ok}, 2},
		{"429 unmodeled", []answer{{status: 429, code: "SomethingNew"}, ok}, 2},
		{"RequestTimeoutException", []answer{{status: 400, code: "RequestTimeoutException"}, ok}, 2},
		{"validation", []answer{invalid, ok}, 1},
		{"not found", []answer{{status: 400, code: "ResourceNotFoundException"}, ok}, 1},
		{"access denied without skew", []answer{{status: 400, code: "AccessDeniedException"}, ok}, 1},
		{"clock skew", []answer{{status: 400, code: "InvalidSignatureException",
			header: map[string]string{"Date": time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}}, ok}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []struct {
				name string
				r    aws.Retryer
			}{
				{"retryaws", retryaws.New(retry.Delays(0, 0), nil)},
				{"standard", awsretry.NewStandard(func(o *awsretry.StandardOptions) {
					o.Backoff = awsretry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
				})},
			} {
				srv := newServer(t, tc.script...)
				_ = list(t.Context(), newClient(srv.URL, r.r, nil))
				if got := srv.attempts(); got != tc.want {
					t.Errorf("%s: server saw %d attempts, want %d", r.name, got, tc.want)
				}
			}
		})
	}
}

func TestRetryAfterHints(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header map[string]string
		status int
		want   time.Duration // the wait before the second attempt
	}{
		{"none", nil, 503, time.Second},
		{"Retry-After seconds", map[string]string{"Retry-After": "3"}, 503, 3 * time.Second},
		{"Retry-After shorter than the delay", map[string]string{"Retry-After": "0"}, 503, time.Second},
		{"Retry-After on 429", map[string]string{"Retry-After": "2"}, 429, 2 * time.Second},
		{"Retry-After ignored on 500", map[string]string{"Retry-After": "3"}, 500, time.Second},
		{"Retry-After bounded", map[string]string{"Retry-After": "3600"}, 503, time.Minute},
		{"Retry-After malformed", map[string]string{"Retry-After": "soon"}, 503, time.Second},
		// The SDK's middleware clamps x-amz-retry-after to [delay, delay+5s].
		{"x-amz-retry-after", map[string]string{"X-Amz-Retry-After": "2500"}, 500, 2500 * time.Millisecond},
		{"x-amz-retry-after clamped", map[string]string{"X-Amz-Retry-After": "60000"}, 500, 6 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, answer{status: tc.status, code: "Busy", header: tc.header}, ok)
			synctest.Test(t, func(t *testing.T) {
				rec := newRecorder()
				if err := list(t.Context(), newClient(srv.URL, retryaws.New(retry.Delays(time.Second), nil), rec)); err != nil {
					t.Fatalf("ListTables: %v", err)
				}
				if got := rec.times(); len(got) != 2 || got[1] != tc.want {
					t.Errorf("attempts sent at %v, want the second at %v", got, tc.want)
				}
			})
		})
	}
}

func TestRetryAfterDate(t *testing.T) {
	srv := newServer(t, unavailable, ok)
	synctest.Test(t, func(t *testing.T) {
		// The bubble's clock starts at a whole second, as HTTP dates are.
		srv.script[0].header = map[string]string{"Retry-After": time.Now().Add(4 * time.Second).UTC().Format(http.TimeFormat)}
		rec := newRecorder()
		if err := list(t.Context(), newClient(srv.URL, retryaws.New(retry.Delays(time.Second), nil), rec)); err != nil {
			t.Fatalf("ListTables: %v", err)
		}
		if got := rec.times(); len(got) != 2 || got[1] != 4*time.Second {
			t.Errorf("attempts sent at %v, want the second at 4s", got)
		}
	})
}

func TestBudgetRefusesWithQuotaError(t *testing.T) {
	srv := newServer(t, throttled)
	budget := retry.NewBudget(0, 1) // one retry in all
	synctest.Test(t, func(t *testing.T) {
		err := list(t.Context(), newClient(srv.URL, retryaws.New(retry.Constant(time.Second).Take(5), budget), newRecorder()))
		if !errors.Is(err, retry.ErrBudgetExhausted) {
			t.Errorf("error %v: want retry.ErrBudgetExhausted", err)
		}
		var q ratelimit.QuotaExceededError
		if !errors.As(err, &q) || q.Available != 0 || q.Requested != 1 {
			t.Errorf("error %v: want a QuotaExceededError{0, 1}, got %+v", err, q)
		}
		var api smithy.APIError
		if !errors.As(err, &api) || api.ErrorCode() != "ThrottlingException" {
			t.Errorf("error %v: want the last attempt's ThrottlingException", err)
		}
		var me *awsretry.MaxAttemptsError
		if errors.As(err, &me) {
			t.Errorf("error %v: a refused budget is not a MaxAttemptsError", err)
		}
	})
	if got := srv.attempts(); got != 2 {
		t.Errorf("server saw %d attempts, want 2 (the budget allowed one retry)", got)
	}
}

func TestStandardQuotaErrorHasTheSameShape(t *testing.T) {
	// The standard retryer with a quota of one retry (14 tokens): the error
	// has the same shape as retryaws's, so code that checks for
	// QuotaExceededError keeps working.
	srv := newServer(t, internal)
	std := awsretry.NewStandard(func(o *awsretry.StandardOptions) {
		o.MaxAttempts = 6
		o.RateLimiter = ratelimit.NewTokenRateLimit(14)
		o.Backoff = awsretry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	})
	err := list(t.Context(), newClient(srv.URL, std, nil))
	var q ratelimit.QuotaExceededError
	if !errors.As(err, &q) {
		t.Errorf("standard: error %v: want a QuotaExceededError", err)
	}
	if got := srv.attempts(); got != 2 {
		t.Errorf("standard: server saw %d attempts, want 2", got)
	}
}

func TestBudgetDepositsOncePerOperation(t *testing.T) {
	srv := newServer(t, internal, internal, ok, ok, internal, ok)
	budget := retry.NewBudget(0.5, 2)
	c := newClient(srv.URL, retryaws.New(retry.Constant(0).Take(5), budget), nil)
	for i, want := range []float64{
		0,   // full, so its deposit is lost; two retries: 2 - 2
		0.5, // one deposit, no retry
		0,   // one deposit, one retry: 0.5 + 0.5 - 1
	} {
		if err := list(t.Context(), c); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		if got := budget.Tokens(); got != want {
			t.Errorf("after call %d: %v tokens, want %v", i+1, got, want)
		}
	}
	if got := srv.attempts(); got != 6 {
		t.Errorf("server saw %d attempts, want 6", got)
	}
}

func TestContextCanceledDuringWait(t *testing.T) {
	srv := newServer(t, throttled)
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(4*time.Second, cancel)
		start := time.Now()
		err := list(ctx, newClient(srv.URL, retryaws.New(retry.Constant(10*time.Second), nil), newRecorder()))
		if got := time.Since(start); got != 4*time.Second {
			t.Errorf("returned after %v, want 4s", got)
		}
		var ce *aws.RequestCanceledError
		if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) {
			t.Errorf("error %v: want an aws.RequestCanceledError for context.Canceled", err)
		}
	})
	if got := srv.attempts(); got != 1 {
		t.Errorf("server saw %d attempts, want 1", got)
	}
}

func TestInfiniteScheduleEndsWithTheContext(t *testing.T) {
	srv := newServer(t, throttled)
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second+time.Millisecond)
		defer cancel()
		rec := newRecorder()
		err := list(ctx, newClient(srv.URL, retryaws.New(retry.Constant(time.Second), nil), rec))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error %v: want context.DeadlineExceeded", err)
		}
		if got := len(rec.times()); got != 11 {
			t.Errorf("%d attempts, want 11 (at 0s, 1s, …, 10s)", got)
		}
	})
	if got := srv.headers[0]; got != "attempt=1" {
		t.Errorf("Amz-Sdk-Request = %q, want no max for an infinite schedule", got)
	}
}

func TestRetryDelay(t *testing.T) {
	r := retryaws.New(retry.Delays(time.Second, 2*time.Second), nil)
	opErr := errors.New("boom")
	for attempt, want := range map[int]time.Duration{0: time.Second, 1: time.Second, 2: 2 * time.Second} {
		if d, err := r.RetryDelay(attempt, opErr); d != want || err != nil {
			t.Errorf("RetryDelay(%d) = %v, %v; want %v, nil", attempt, d, err, want)
		}
	}
	_, err := r.RetryDelay(3, opErr)
	var me *awsretry.MaxAttemptsError
	if !errors.As(err, &me) || me.Attempt != 3 || !errors.Is(err, opErr) {
		t.Errorf("RetryDelay(3): error %v, want a MaxAttemptsError around the attempt's error", err)
	}
}

func TestNewPanicsOnNilSchedule(t *testing.T) {
	defer func() {
		if r := recover(); r != "retryaws: New: nil Schedule" {
			t.Errorf("panic %v", r)
		}
	}()
	retryaws.New(nil, nil)
}

func TestGetAttemptTokenAllocations(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		b    *retry.Budget
		want float64
	}{
		{"no budget", nil, 0},
		// The two closures the SDK's Standard.GetAttemptToken makes.
		{"budget", retry.NewBudget(0.1, 10), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := retryaws.New(retry.Delays(), tc.b)
			if got := testing.AllocsPerRun(100, func() {
				release, _ := r.GetAttemptToken(ctx)
				_ = release(nil)
			}); got > tc.want {
				t.Errorf("%v allocations, want at most %v", got, tc.want)
			}
		})
	}
}

var _ = itoa

func TestFromConfig(t *testing.T) {
	// aws.Config.Retryer is what config.WithRetryer sets: a function that
	// makes each client's retryer.
	srv := newServer(t, throttled, ok)
	budget := retry.NewBudget(0.1, 10)
	cfg := aws.Config{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "SECRET"}, nil
		}),
		Retryer: func() aws.Retryer { return retryaws.New(retry.Delays(0, 0), budget) },
	}
	if err := list(t.Context(), dynamodb.NewFromConfig(cfg)); err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	if got := srv.attempts(); got != 2 {
		t.Errorf("server saw %d attempts, want 2", got)
	}
	if got := srv.headers[0]; got != "attempt=1; max=3" {
		t.Errorf("Amz-Sdk-Request = %q, want max=3 from the schedule", got)
	}
	if got := budget.Tokens(); got != 9 {
		t.Errorf("budget has %v tokens, want 9", got)
	}
}
