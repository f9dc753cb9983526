package retryaws

import (
	"errors"
	"net/http"
	"testing"
	"time"

	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// respErr returns the error the SDK makes of a response with status code
// and a Retry-After header v.
func respErr(code int, v string) error {
	resp := &http.Response{StatusCode: code, Header: http.Header{}}
	if v != "" {
		resp.Header.Set("Retry-After", v)
	}
	return &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: resp}, Err: errors.New("busy")}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		err  error
		d    time.Duration
		ok   bool
	}{
		{"no response", errors.New("x"), 0, false},
		{"no header", respErr(503, ""), 0, false},
		{"seconds", respErr(503, "7"), 7 * time.Second, true},
		{"429", respErr(429, "1"), time.Second, true},
		{"500", respErr(500, "1"), 0, false},
		{"negative", respErr(503, "-1"), 0, false},
		{"huge", respErr(503, "99999999999999999999"), 0, false},
		{"saturates", respErr(503, "9999999999999"), 1<<63 - 1, true},
		{"date", respErr(503, now.Add(90*time.Second).Format(http.TimeFormat)), 90 * time.Second, true},
		{"past date", respErr(503, now.Add(-time.Hour).Format(http.TimeFormat)), 0, true},
		{"garbage", respErr(503, "soon"), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := retryAfter(tc.err, now)
			if d != tc.d || ok != tc.ok {
				t.Errorf("retryAfter = %v, %v; want %v, %v", d, ok, tc.d, tc.ok)
			}
		})
	}
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "-1", "Wed, 21 Oct 2015 07:28:00 GMT", "", "1e3", "99999999999999999999"} {
		f.Add(503, s)
	}
	f.Fuzz(func(t *testing.T, code int, v string) {
		d, ok := retryAfter(respErr(code, v), time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		if d < 0 || (!ok && d != 0) {
			t.Errorf("retryAfter(%d, %q) = %v, %v", code, v, d, ok)
		}
	})
}
