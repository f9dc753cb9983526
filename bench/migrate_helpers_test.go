package bench_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"time"
)

// The migration guide (docs/MIGRATING.md) shows, for each library, the body
// of an Example that uses it and the body of an Example that does the same
// with retry; these are the fakes those snippets call. The snippets' delays
// are milliseconds so that the examples run in real time without slowing
// the tests down; what the guide says about timing is checked by the tests
// next to them, in testing/synctest bubbles.

// StatusError is the error of a fake API call: an HTTP status and, for a
// 429, how long the server asked the client to wait.
type StatusError struct {
	Code       int
	RetryAfter time.Duration
}

func (e *StatusError) Error() string { return "status " + strconv.Itoa(e.Code) }

// errUnavailable is what a flaky API fails with.
var errUnavailable = &StatusError{Code: http.StatusServiceUnavailable}

// errRateLimited is a 429 without Retry-After.
var errRateLimited = &StatusError{Code: http.StatusTooManyRequests}

// errBadRequest is what no retry can fix.
var errBadRequest = &StatusError{Code: http.StatusBadRequest}

// flakyAPI returns a fake API call that fails with each of errs in turn and
// then returns "hello". It is made once per example: its count is its own.
func flakyAPI(errs ...error) func(ctx context.Context) (string, error) {
	var n atomic.Int64
	return func(ctx context.Context) (string, error) {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		if i := n.Add(1) - 1; i < int64(len(errs)) {
			return "", errs[i]
		}
		return "hello", nil
	}
}

// jobStatus returns a fake job whose status is "pending" for the first
// pending polls and "done" afterwards.
func jobStatus(pending int) func(ctx context.Context) (string, error) {
	var n atomic.Int64
	return func(ctx context.Context) (string, error) {
		if n.Add(1) <= int64(pending) {
			return "pending", nil
		}
		return "done", nil
	}
}

// always returns a fake call that always fails with err, and counts its
// calls in *calls.
func always(err error, calls *int) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		*calls++
		return "", err
	}
}

// flakyServer starts an HTTP server that answers 503 to the first fails
// requests and 200 "hello" afterwards.
func flakyServer(fails int) *httptest.Server {
	var n atomic.Int64
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= int64(fails) {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "hello")
	}))
}

// isStatus reports whether err is a *StatusError with the given code.
func isStatus(err error, code int) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == code
}
