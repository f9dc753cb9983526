package retryhttp

import (
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// A retryAfter is a parsed Retry-After header value: a delay, or a point in
// time when absolute.
type retryAfter struct {
	delay    time.Duration // never negative
	at       time.Time
	absolute bool
}

// mark marks err with the wait ra asks for.
func (ra retryAfter) mark(err error) error {
	if ra.absolute {
		return retry.RetryAt(err, ra.at)
	}
	return retry.RetryAfter(err, ra.delay)
}

// maxSeconds is the largest number of seconds that fits a Duration.
const maxSeconds = int64(math.MaxInt64 / int64(time.Second))

// parseRetryAfter parses the value of a Retry-After header (RFC 9110,
// section 10.2.3): delay-seconds, a string of ASCII digits, or an HTTP-date
// in any of the three formats http.ParseTime accepts. Surrounding spaces and
// tabs are ignored. A number of seconds too large for a Duration saturates
// at the largest Duration. Anything else, including an empty value, a sign,
// a fraction or trailing garbage, reports false. It never panics.
func parseRetryAfter(v string) (retryAfter, bool) {
	v = strings.Trim(v, " \t")
	if v == "" {
		return retryAfter{}, false
	}
	if d, ok := parseSeconds(v); ok {
		return retryAfter{delay: d}, true
	}
	if v[0] >= '0' && v[0] <= '9' {
		return retryAfter{}, false // every HTTP-date starts with a day name
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return retryAfter{}, false
	}
	return retryAfter{at: t, absolute: true}, true
}

// parseSeconds parses delay-seconds, saturating at the largest Duration.
func parseSeconds(v string) (time.Duration, bool) {
	var n int64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n <= maxSeconds { // n·10+9 cannot overflow; once above, n stays above
			n = n*10 + int64(c-'0')
		}
	}
	if n > maxSeconds {
		return time.Duration(math.MaxInt64), true
	}
	return time.Duration(n) * time.Second, true
}
