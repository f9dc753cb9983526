package retryconnect

import (
	"math"
	"net/http"
	"time"
)

// PushbackKey is the response header or trailer in which a server asks for
// a wait before the next attempt, as gRPC's retry design (gRFC A6) defines
// it: a non-negative decimal number of milliseconds, or anything else (a
// negative number, text, several values) to ask not to be retried at all.
// A Connect handler sets it on the error it returns:
//
//	err := connect.NewError(connect.CodeUnavailable, errors.New("busy"))
//	err.Meta().Set(retryconnect.PushbackKey, "250")
//
// which reaches the client over the Connect, gRPC and gRPC-Web protocols
// alike.
const PushbackKey = "Grpc-Retry-Pushback-Ms"

// pushback reads PushbackKey from an error's metadata. ok is false when it
// is absent; otherwise d is the wait asked for, or -1 when the server asked
// not to be retried. It never panics, whatever the metadata holds.
func pushback(meta http.Header) (d time.Duration, ok bool) {
	v := meta.Values(PushbackKey)
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
