package retryaws

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/seed-b8c8f69d/retry"
)

// probeLimit is the number of delays New counts to tell a finite schedule
// from an infinite one: a schedule with more delays than this is treated as
// infinite, and MaxAttempts reports 0 (no limit).
const probeLimit = 1000

// maxPushback bounds the wait a standard Retry-After header can impose, as
// retry.MaxPushback does by default.
const maxPushback = time.Minute

// New returns an aws.RetryerV2 that retries the errors the SDK's standard
// retryer retries, waits the delays of s between attempts and draws every
// retry from b, for aws.Config's Retryer (config.WithRetryer) or a client's
// Options.Retryer:
//
//	policy := retry.Exponential(50 * time.Millisecond).Cap(5 * time.Second).FullJitter(nil).Take(4)
//	budget := retry.NewBudget(0.1, 10)
//	cfg, err := config.LoadDefaultConfig(ctx, config.WithRetryer(func() aws.Retryer {
//		return retryaws.New(policy, budget)
//	}))
//
// # Which errors
//
// Exactly those of awsretry.DefaultRetryables, as
// awsretry.NewStandard: throttling error codes, the codes
// RequestTimeout(Exception), HTTP 500, 502, 503 and 504, an unmodeled 429,
// connection errors, and the clock-skew errors the SDK's middleware marks
// retryable; never a canceled request. awsretry.AddWithErrorCodes and the
// SDK's other wrappers work on the result as on the standard retryer.
//
// # How long
//
// RetryDelay(n, err) is the n-th delay of s (a negative delay counts
// as 0). A response with a standard Retry-After header (429 or 503, seconds or
// an HTTP date) lengthens that delay to the server's wait, up to one minute;
// the SDK's middleware then applies its own x-amz-retry-after rule on top, as
// it does for every retryer (the wait is clamped between the delay and the
// delay plus 5 s). The retryer keeps no state per call: each RetryDelay ranges
// s afresh and takes its n-th delay, so the delays of one call are drawn from
// separate runs of s. For jitter that draws each delay independently
// (FullJitter, EqualJitter, Jitter) that is the same distribution as one run;
// for DecorrelatedJitter and SmoothJitter each delay has its run's
// distribution but is not correlated with the one before. RetryDelay costs n
// draws of s.
//
// # How many
//
// MaxAttempts is the number of delays of s plus one, counted once by
// New. A schedule with more than 1000 delays, or an infinite one, gives
// MaxAttempts 0, which the SDK's middleware takes as no limit: the attempts
// then go on until s ends (RetryDelay reports the end), b refuses, or the
// context ends, so bound such a call with a context deadline or a Budget. A
// schedule whose length varies from run to run (Within over a jittered
// schedule) gives the length of the run New counted; a call then stops at the
// first of that and its own run's end. When s ends, RetryDelay returns an
// *awsretry.MaxAttemptsError, as the SDK does when MaxAttempts is reached.
// Setting aws.Config.RetryMaxAttempts (or a client's Options.RetryMaxAttempts)
// overrides MaxAttempts: leave it unset.
//
// # Budget
//
// b plays the part of the standard retryer's retry quota. Every
// operation deposits its share into b when its first attempt starts, and every
// retry withdraws one token, whatever the error (the standard retryer charges
// 14 tokens, 5 after throttling, and refunds on success; b never refunds, and
// a token taken for a retry whose wait was then cut short by the context is
// not given back). When b refuses, the operation ends at once, as with an
// exhausted quota: its error is errors.Join(the attempt's error, a quota
// error) that matches retry.ErrBudgetExhausted with errors.Is and
// ratelimit.QuotaExceededError with errors.As. A nil b means no budget, as
// ratelimit.None.
//
// # Concurrency and cost
//
// The result is safe for concurrent use by any number of clients and
// operations; a Budget shared by several clients is shared by all their
// operations. On an operation that succeeds at once it allocates nothing
// without a budget, and with one only the two small closures of the SDK's
// first-attempt check (see GetAttemptToken in the source).
//
// New panics if s is nil.
func New(s retry.Schedule, b *retry.Budget) aws.RetryerV2 {
	if s == nil {
		panic("retryaws: New: nil Schedule")
	}
	n := 0
	for range s {
		n++
		if n > probeLimit {
			break
		}
	}
	r := &retryer{s: s, budget: b}
	if n <= probeLimit {
		r.max = n + 1
	}
	r.std = awsretry.NewStandard(func(o *awsretry.StandardOptions) {
		o.RateLimiter = firstAttemptProbe{}
	})
	return r
}

// retryer is what New returns. All its fields are set by New and only read
// afterwards.
type retryer struct {
	s      retry.Schedule
	budget *retry.Budget // nil: no budget
	max    int           // MaxAttempts: 0 when s is infinite
	// std is a standard retryer whose error classification is the SDK's
	// own, and whose rate limiter is firstAttemptProbe (see GetAttemptToken).
	std *awsretry.Standard
}

// IsErrorRetryable reports whether err is retryable for the SDK's standard
// retryer.
func (r *retryer) IsErrorRetryable(err error) bool {
	return r.std.IsErrorRetryable(err)
}

// MaxAttempts returns the number of delays of the schedule plus one, or 0
// when it is infinite.
func (r *retryer) MaxAttempts() int { return r.max }

// RetryDelay returns the attempt-th delay of the schedule (attempt is the
// 1-based number of the attempt that failed), lengthened by a standard
// Retry-After header, or an *awsretry.MaxAttemptsError around err when
// the schedule has no such delay.
func (r *retryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	i := max(attempt, 1) - 1
	d, ok := nth(r.s, i)
	if !ok {
		return 0, &awsretry.MaxAttemptsError{Attempt: attempt, Err: err}
	}
	if p, ok := retryAfter(err, time.Now()); ok {
		d = max(d, min(p, maxPushback))
	}
	return d, nil
}

// nth returns the i-th delay (from 0) of a fresh run of s, as 0 if
// negative, and false if s has no more than i delays.
func nth(s retry.Schedule, i int) (time.Duration, bool) {
	n := 0
	for d := range s {
		if n == i {
			return max(d, 0), true
		}
		n++
	}
	return 0, false
}

// GetRetryToken withdraws one token from the budget for a retry, and
// returns a quota error if it has less than one.
func (r *retryer) GetRetryToken(ctx context.Context, opErr error) (func(error) error, error) {
	if r.budget == nil || r.budget.Withdraw() {
		return nopRelease, nil
	}
	avail := uint(math.Floor(r.budget.Tokens()))
	return nil, &quotaError{q: ratelimit.QuotaExceededError{Available: avail, Requested: 1}}
}

// GetAttemptToken deposits the operation's share into the budget when ctx
// is that of an operation's first attempt.
//
// The SDK tells the attempt number only to its own standard retryer,
// through a context key it does not export: Standard.GetAttemptToken
// returns a release function that adds tokens to its rate limiter on the
// first attempt, and one that does nothing on the others. r.std's rate
// limiter is firstAttemptProbe, whose AddTokens returns errFirstAttempt, so
// calling the release function with a nil error tells the two apart, on
// this goroutine, without touching any shared state. It costs the two
// closures Standard.GetAttemptToken makes.
func (r *retryer) GetAttemptToken(ctx context.Context) (func(error) error, error) {
	if r.budget == nil {
		return nopRelease, nil
	}
	if release, err := r.std.GetAttemptToken(ctx); err == nil && release(nil) == errFirstAttempt {
		r.budget.Deposit()
	}
	return nopRelease, nil
}

// GetInitialToken returns a release function that does nothing: the SDK's
// middleware calls GetAttemptToken instead, which deposits into the budget.
func (r *retryer) GetInitialToken() func(error) error { return nopRelease }

func nopRelease(error) error { return nil }

// errFirstAttempt is what firstAttemptProbe's AddTokens returns.
var errFirstAttempt = errors.New("retryaws: first attempt")

// firstAttemptProbe is the rate limiter of retryer.std: it never limits
// and only serves to tell the first attempt (see GetAttemptToken).
type firstAttemptProbe struct{}

func (firstAttemptProbe) GetToken(context.Context, uint) (func() error, error) {
	return func() error { return nil }, nil
}

func (firstAttemptProbe) AddTokens(uint) error { return errFirstAttempt }

// quotaError is the error GetRetryToken returns when the budget refuses a
// retry: the SDK's own quota error, and retry.ErrBudgetExhausted.
type quotaError struct {
	q ratelimit.QuotaExceededError
}

func (e *quotaError) Error() string {
	return "retryaws: retry budget exhausted: " + e.q.Error()
}

func (e *quotaError) Unwrap() []error { return []error{e.q, retry.ErrBudgetExhausted} }

// retryAfter returns the wait a standard Retry-After header asks for on a
// 429 or 503 response in err's chain: a non-negative number of seconds, or
// an HTTP date (a past date is a wait of 0). ok is false when there is no
// such response or header, or when the header is malformed; it never
// panics.
func retryAfter(err error, now time.Time) (d time.Duration, ok bool) {
	var re *smithyhttp.ResponseError
	if !errors.As(err, &re) || re.Response == nil || re.Response.Response == nil {
		return 0, false
	}
	resp := re.Response.Response
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0, false
	}
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseUint(v, 10, 64); err == nil {
		if secs > uint64(math.MaxInt64/int64(time.Second)) {
			return math.MaxInt64, true
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}
