package retrygrpc

import (
	"math"
	"time"

	"google.golang.org/grpc/metadata"
)

// PushbackKey is the trailer in which a server asks for a wait before the
// next attempt (gRFC A6): a non-negative decimal number of milliseconds, or
// anything else (a negative number, text, several values) to ask not to be
// retried at all.
const PushbackKey = "grpc-retry-pushback-ms"

// PreviousAttemptsKey is the request header that carries, on every attempt
// after the first, the number of attempts made before it (gRFC A6): absent
// on the first attempt, then "1", "2", ….
const PreviousAttemptsKey = "grpc-previous-rpc-attempts"

// pushback reads PushbackKey from an attempt's trailer. ok is false when the
// trailer has no such key; otherwise d is the wait asked for, or -1 when the
// server asked not to be retried. It never panics, whatever the trailer
// holds.
func pushback(md metadata.MD) (d time.Duration, ok bool) {
	v := md[PushbackKey] // incoming metadata keys are lower case
	switch len(v) {
	case 0:
		return 0, false
	case 1:
		return parsePushback(v[0]), true
	}
	return -1, true // several values: as grpc-go, take it as "don't"
}

// parsePushback parses a pushback value: decimal digits only, a number of
// milliseconds, saturating at the largest Duration. Anything else, including
// an empty string, a sign or spaces, is -1, which gRFC A6 reads as "do not
// retry". It never panics. (retrygrpc and retryconnect each keep this copy:
// they are released apart from the library and from each other, so neither
// reaches into another module's internals.)
func parsePushback(s string) time.Duration {
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
