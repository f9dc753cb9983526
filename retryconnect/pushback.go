package retryconnect

import (
	"net/http"
	"time"

	"github.com/seed-b8c8f69d/retry/internal/a6"
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

// parsePushback parses a pushback value (a6.ParsePushback): a number of
// milliseconds, or -1 for anything that is not decimal digits.
func parsePushback(s string) time.Duration { return a6.ParsePushback(s) }
