package retryconnect_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryconnect"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestLimiterPerTarget checks that every attempt to a target holds a
// permit of that target's Limiter: a call that finds none fails with
// retry.ErrLimited and is not sent, another target is not affected, and a
// call ended by its caller gives its permit back.
func TestLimiterPerTarget(t *testing.T) {
	slow := newServer(t, answer{block: true})
	fast := newServer(t, success)
	limiters := map[string]*retry.Limiter{}
	i := retryconnect.NewInterceptor(retry.Constant(0).Take(2), retryconnect.Limiter(func(target string) *retry.Limiter {
		l := retry.NewLimiter(retry.LimiterInitial(1))
		limiters[target] = l
		return l
	}))
	slowClient := slow.client(getProcedure, connect.WithInterceptors(i))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() {
		_, err := call(ctx, slowClient)
		done <- err
	}()
	for slow.attempts() == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, err := call(t.Context(), slowClient); !errors.Is(err, retry.ErrLimited) {
		t.Errorf("a second call to the busy target: %v, want retry.ErrLimited", err)
	}
	if _, err := call(t.Context(), fast.client(getProcedure, connect.WithInterceptors(i))); err != nil {
		t.Errorf("another target has its own Limiter: %v", err)
	}
	cancel()
	<-done
	if n := slow.attempts(); n != 1 {
		t.Errorf("the slow server saw %d requests, want 1", n)
	}
	if len(limiters) != 2 {
		t.Errorf("%d Limiters, want one per target", len(limiters))
	}
	for target, l := range limiters {
		if !strings.HasPrefix(target, "127.0.0.1:") {
			t.Errorf("target %q, want the server's host:port", target)
		}
		if n := l.InFlight(); n != 0 {
			t.Errorf("%s: %d permits still out", target, n)
		}
	}
}

// TestLimiterOverloadNotRetried checks that an overload code the
// interceptor does not retry still reaches the caller as it is.
func TestLimiterOverloadNotRetried(t *testing.T) {
	srv := newServer(t, code(connect.CodeResourceExhausted))
	l := retry.NewLimiter()
	i := retryconnect.NewInterceptor(retry.Constant(0).Take(2), retryconnect.Limiter(func(string) *retry.Limiter { return l }))
	_, err := call(t.Context(), srv.client(getProcedure, connect.WithInterceptors(i)))
	if connect.CodeOf(err) != connect.CodeResourceExhausted || srv.attempts() != 1 {
		t.Errorf("got %v after %d attempts, want ResourceExhausted after 1", err, srv.attempts())
	}
	if l.InFlight() != 0 {
		t.Error("permit not given back")
	}
}

func TestLimiterRefusedByHedge(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "retryconnect: Hedge: Limiter is not supported") {
			t.Errorf("recovered %v", r)
		}
	}()
	srv := newServer(t, success)
	c := srv.client(getProcedure)
	_, _ = retryconnect.Hedge(t.Context(), retry.Delays(), c.CallUnary, connect.NewRequest(wrapperspb.String("hi")),
		retryconnect.Limiter(func(string) *retry.Limiter { return nil }))
}
