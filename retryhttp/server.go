package retryhttp

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/seed-b8c8f69d/retry/retryserver"
)

// NewHandler returns an http.Handler that admits each request to h through
// s (retryserver.Shedder.Admit), telling retries (PreviousAttemptsHeader)
// from first attempts, and serves it with h once admitted.
//
// A refused request gets 503 Service Unavailable with a Retry-After of the
// refusal's pushback in whole seconds, rounded up (at least 1: the header
// has no finer unit), or, when the Shedder sheds hard, no Retry-After and
// ShouldRetryHeader "false". A request whose context has ended before it
// could start (its client has gone, or a deadline set by middleware above
// has passed) is not served: it gets nothing if its client has gone (its
// context is cancelled), and a 503 without Retry-After if only its deadline
// has passed.
//
// h runs on the request's goroutine with the ResponseWriter as net/http
// gave it, so flushing, hijacking and http.ResponseController work as
// without NewHandler. The slot is held until h returns (not while a
// hijacked connection lives on) and released as a Drop if the request's
// context has ended, else as a Failure if h panics (the panic then goes on
// to net/http, unchanged) and a Success if it returns.
//
// NewHandler panics if h or s is nil.
func NewHandler(h http.Handler, s *retryserver.Shedder) http.Handler {
	if h == nil {
		panic("retryhttp: NewHandler: nil Handler")
	}
	if s == nil {
		panic("retryhttp: NewHandler: nil Shedder")
	}
	return &handler{h: h, s: s}
}

type handler struct {
	h http.Handler
	s *retryserver.Shedder
}

func (sh *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t, err := sh.s.Admit(ctx, isRetry(r))
	if err != nil {
		var rf *retryserver.Refusal
		switch {
		case errors.As(err, &rf):
			refuse(w, rf.Pushback)
		case !errors.Is(ctx.Err(), context.Canceled):
			// Only a deadline that passed (whether or not the context
			// has been told yet): the client may still listen, and
			// must not take silence for a 200.
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		return
	}
	served := false
	defer func() {
		switch {
		case served:
		case ctx.Err() != nil:
			t.Drop() // h panicked, its client gone: an aborted proxy, say
		default:
			t.Failure() // h panicked
		}
	}()
	sh.h.ServeHTTP(w, r)
	served = true
	if ctx.Err() != nil {
		t.Drop()
	} else {
		t.Success()
	}
}

// refuse answers a refused request: 503 with the pushback d.
func refuse(w http.ResponseWriter, d time.Duration) {
	h := w.Header()
	if d < 0 {
		h[ShouldRetryHeader] = []string{"false"}
	} else {
		h["Retry-After"] = []string{strconv.FormatInt(retryAfterSeconds(d), 10)}
	}
	w.WriteHeader(http.StatusServiceUnavailable)
}

// retryAfterSeconds returns d in whole seconds, rounded up, at least 1.
func retryAfterSeconds(d time.Duration) int64 {
	s := int64((d + time.Second - 1) / time.Second) // d ≤ a minute: no overflow
	return max(s, 1)
}
