// Package a6 holds what gRFC A6 defines and more than one of this
// repository's modules reads: retrygrpc and retryconnect parse the same
// pushback value.
package a6

import (
	"math"
	"time"
)

// ParsePushback parses a grpc-retry-pushback-ms value: decimal digits only,
// a number of milliseconds, saturating at the largest Duration. Anything
// else, including an empty string, a sign or spaces, is -1, which A6 reads
// as "do not retry". It never panics.
func ParsePushback(s string) time.Duration {
	if s == "" {
		return -1
	}
	const limit = math.MaxInt64 / int64(time.Millisecond)
	var ms int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return -1
		}
		if ms <= limit {
			ms = ms*10 + int64(c-'0')
		}
	}
	if ms > limit {
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}
