package retryconnect_test

import (
	"errors"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryconnect"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func hiRequest() *connect.Request[msg] {
	req := connect.NewRequest(wrapperspb.String("hi"))
	req.Header().Set("X-Trace", "abc")
	return req
}

func TestHedgeRacesASlowAttempt(t *testing.T) {
	// The first request never answers; the hedge sent after 1 ms wins,
	// and the first is cancelled. The outcome does not depend on timing:
	// only the wait before the hedge does.
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := newServer(t, answer{block: true}, success)
			c := srv.client(getProcedure, p.opt, connect.WithInterceptors(retryconnect.NewInterceptor(retry.Constant(0).Take(3))))
			resp, err := retryconnect.Hedge(t.Context(), retry.Constant(time.Millisecond).Take(1), c.CallUnary, hiRequest())
			if err != nil || resp.Msg.GetValue() != "echo hi" {
				t.Fatalf("Hedge = %v, %v", resp, err)
			}
			<-srv.cancelled // the loser's handler sees its cancellation
			if got := srv.attempts(); got != 2 {
				t.Errorf("server saw %d attempts, want 2", got)
			}
		})
	}
}

func TestHedgeRetriesRetryableFailuresAtOnce(t *testing.T) {
	srv := newServer(t, unavailable(), unavailable(), success)
	c := srv.client(getProcedure)
	// A delay of an hour: only failures can start the next attempts.
	resp, err := retryconnect.Hedge(t.Context(), retry.Constant(time.Hour).Take(3), c.CallUnary, hiRequest())
	if err != nil || resp.Msg.GetValue() != "echo hi" {
		t.Fatalf("Hedge = %v, %v", resp, err)
	}
	if got := srv.attempts(); got != 3 {
		t.Errorf("server saw %d attempts, want 3", got)
	}
}

func TestHedgeEndsOnAFatalCode(t *testing.T) {
	srv := newServer(t, code(connect.CodeInvalidArgument), success)
	c := srv.client(getProcedure)
	_, err := retryconnect.Hedge(t.Context(), retry.Constant(time.Hour).Take(3), c.CallUnary, hiRequest())
	var re *retry.Error
	if connect.CodeOf(err) != connect.CodeInvalidArgument || errors.As(err, &re) {
		t.Errorf("error %v: want the InvalidArgument error as it is", err)
	}
	if got := srv.attempts(); got != 1 {
		t.Errorf("server saw %d attempts, want 1", got)
	}
}

func TestHedgeGivesUp(t *testing.T) {
	srv := newServer(t, unavailable())
	c := srv.client(getProcedure)
	_, err := retryconnect.Hedge(t.Context(), retry.Constant(time.Hour).Take(2), c.CallUnary, hiRequest())
	if !errors.Is(err, retry.ErrExhausted) || connect.CodeOf(err) != connect.CodeUnavailable {
		t.Errorf("error %v: want retry.ErrExhausted with the last attempt's code", err)
	}
	if got := srv.attempts(); got != 3 {
		t.Errorf("server saw %d attempts, want 3", got)
	}
}

func TestHedgeRefusesProceduresThatAreNotIdempotent(t *testing.T) {
	srv := newServer(t, success)
	c := srv.client(postProcedure, connect.WithInterceptors(retryconnect.NewInterceptor(retry.Constant(0).Take(3))))
	_, err := retryconnect.Hedge(t.Context(), retry.Constant(time.Hour).Take(2), c.CallUnary, hiRequest())
	if connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Errorf("error %v: want FailedPrecondition", err)
	}
	if got := srv.attempts(); got != 0 {
		t.Errorf("server saw %d attempts, want 0", got)
	}
}

func TestHedgeServerRefusal(t *testing.T) {
	// A negative pushback stops further hedges; with nothing outstanding,
	// the refused failure comes back as it is.
	srv := newServer(t, withPushback(unavailable(), "-1"), success)
	c := srv.client(getProcedure)
	_, err := retryconnect.Hedge(t.Context(), retry.Constant(time.Hour).Take(3), c.CallUnary, hiRequest())
	var re *retry.Error
	if connect.CodeOf(err) != connect.CodeUnavailable || errors.As(err, &re) {
		t.Errorf("error %v: want the Unavailable error as it is", err)
	}
	if got := srv.attempts(); got != 1 {
		t.Errorf("server saw %d attempts, want 1", got)
	}
}
