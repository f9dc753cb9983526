package retryconnect_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryconnect"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestRetriesUnavailableThenSucceeds(t *testing.T) {
	for _, p := range protocols {
		for _, procedure := range []string{getProcedure, putProcedure} {
			t.Run(p.name+procedure, func(t *testing.T) {
				srv := newServer(t, unavailable(), unavailable(), success)
				clock, withClock := fakeClock()
				i := retryconnect.NewInterceptor(retry.Exponential(time.Second).Take(5), retryconnect.With(withClock))
				req := connect.NewRequest(wrapperspb.String("hi"))
				resp, err := srv.client(procedure, p.opt, connect.WithInterceptors(i)).CallUnary(t.Context(), req)
				if err != nil || resp.Msg.GetValue() != "echo hi" {
					t.Fatalf("call = %v, %v", resp, err)
				}
				if v, ok := req.Header()[retryconnect.PreviousAttemptsKey]; ok {
					t.Errorf("the request keeps %s: %q", retryconnect.PreviousAttemptsKey, v)
				}
				if got, want := clock.Sleeps(), []time.Duration{time.Second, 2 * time.Second}; !slices.Equal(got, want) {
					t.Errorf("waits %v, want %v", got, want)
				}
				if got, want := srv.previousAttempts(), []string{"", "1", "2"}; !slices.Equal(got, want) {
					t.Errorf("server saw previous attempts %q, want %q", got, want)
				}
			})
		}
	}
}

func TestWhatIsNotRetried(t *testing.T) {
	for _, p := range protocols {
		for _, tc := range []struct {
			name      string
			procedure string
			answer    answer
			opts      []retryconnect.Option
			code      connect.Code
		}{
			{"not idempotent", postProcedure, unavailable(), nil, connect.CodeUnavailable},
			{"code not listed", getProcedure, code(connect.CodeInvalidArgument), nil, connect.CodeInvalidArgument},
			{"internal by default", getProcedure, code(connect.CodeInternal), nil, connect.CodeInternal},
			{"unavailable not listed", getProcedure, unavailable(), []retryconnect.Option{retryconnect.Codes(connect.CodeResourceExhausted)}, connect.CodeUnavailable},
			{"no codes", getProcedure, unavailable(), []retryconnect.Option{retryconnect.Codes()}, connect.CodeUnavailable},
			{"server refuses", getProcedure, withPushback(unavailable(), "-1"), nil, connect.CodeUnavailable},
			{"malformed pushback", getProcedure, withPushback(unavailable(), "soon"), nil, connect.CodeUnavailable},
			{"procedures rule", getProcedure, unavailable(),
				[]retryconnect.Option{retryconnect.Procedures(func(s connect.Spec) bool { return s.Procedure != getProcedure })}, connect.CodeUnavailable},
		} {
			t.Run(p.name+"/"+tc.name, func(t *testing.T) {
				srv := newServer(t, tc.answer, success)
				clock, withClock := fakeClock()
				opts := append([]retryconnect.Option{retryconnect.With(withClock)}, tc.opts...)
				i := retryconnect.NewInterceptor(retry.Constant(time.Second).Take(3), opts...)
				_, err := call(t.Context(), srv.client(tc.procedure, p.opt, connect.WithInterceptors(i)))
				if got := connect.CodeOf(err); got != tc.code {
					t.Errorf("code %v, want %v (error %v)", got, tc.code, err)
				}
				var re *retry.Error
				if errors.As(err, &re) {
					t.Errorf("error %v: an error that was not retried comes as it is, not as a *retry.Error", err)
				}
				if got := srv.attempts(); got != 1 {
					t.Errorf("server saw %d attempts, want 1", got)
				}
				if got := clock.Sleeps(); got != nil {
					t.Errorf("waits %v, want none", got)
				}
			})
		}
	}
}

func TestRetriesWhatOptionsAllow(t *testing.T) {
	srv := newServer(t, unavailable(), code(connect.CodeResourceExhausted), success)
	_, withClock := fakeClock()
	i := retryconnect.NewInterceptor(retry.Constant(time.Second).Take(3), retryconnect.With(withClock),
		retryconnect.Codes(connect.CodeUnavailable, connect.CodeResourceExhausted),
		retryconnect.Procedures(func(connect.Spec) bool { return true }))
	if _, err := call(t.Context(), srv.client(postProcedure, connect.WithInterceptors(i))); err != nil {
		t.Fatalf("call: %v", err)
	}
	if got := srv.attempts(); got != 3 {
		t.Errorf("server saw %d attempts, want 3", got)
	}
}

func TestPushback(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := newServer(t, withPushback(unavailable(), "5000"), withPushback(unavailable(), "10"), success)
			clock, withClock := fakeClock()
			i := retryconnect.NewInterceptor(retry.Constant(time.Second).Take(3), retryconnect.With(withClock))
			if _, err := call(t.Context(), srv.client(getProcedure, p.opt, connect.WithInterceptors(i))); err != nil {
				t.Fatalf("call: %v", err)
			}
			// A pushback longer than the delay sets the wait; a shorter one
			// leaves the delay.
			if got, want := clock.Sleeps(), []time.Duration{5 * time.Second, time.Second}; !slices.Equal(got, want) {
				t.Errorf("waits %v, want %v", got, want)
			}
		})
	}
}

func TestGivesUp(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := newServer(t, unavailable())
			_, withClock := fakeClock()
			i := retryconnect.NewInterceptor(retry.Constant(time.Second).Take(2), retryconnect.With(withClock))
			_, err := call(t.Context(), srv.client(getProcedure, p.opt, connect.WithInterceptors(i)))
			var re *retry.Error
			if !errors.Is(err, retry.ErrExhausted) || !errors.As(err, &re) || re.Attempts != 3 {
				t.Errorf("error %v: want retry.ErrExhausted after 3 attempts", err)
			}
			var ce *connect.Error
			if connect.CodeOf(err) != connect.CodeUnavailable || !errors.As(err, &ce) || ce.Message() != "busy" {
				t.Errorf("error %v: want the last attempt's Unavailable error", err)
			}
		})
	}
}

func TestBudgetRefuses(t *testing.T) {
	srv := newServer(t, unavailable())
	_, withClock := fakeClock()
	budget := retry.NewBudget(0, 1)
	i := retryconnect.NewInterceptor(retry.Constant(time.Second).Take(5), retryconnect.With(withClock, retry.WithBudget(budget)))
	_, err := call(t.Context(), srv.client(getProcedure, connect.WithInterceptors(i)))
	if !errors.Is(err, retry.ErrBudgetExhausted) || connect.CodeOf(err) != connect.CodeUnavailable {
		t.Errorf("error %v: want retry.ErrBudgetExhausted with the last attempt's code", err)
	}
	if got := srv.attempts(); got != 2 {
		t.Errorf("server saw %d attempts, want 2", got)
	}
}

// cancellingClock cancels a context at its first Sleep, as if the caller
// gave up during the wait.
type cancellingClock struct {
	*retry.FakeClock
	cancel context.CancelFunc
}

func (c cancellingClock) Sleep(ctx context.Context, d time.Duration) error {
	c.cancel()
	return c.FakeClock.Sleep(ctx, d)
}

func TestContextEndsDuringWait(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := newServer(t, unavailable())
			ctx, cancel := context.WithCancel(t.Context())
			clock, _ := fakeClock()
			i := retryconnect.NewInterceptor(retry.Constant(time.Second).Take(5),
				retryconnect.With(retry.WithClock(cancellingClock{clock, cancel})))
			_, err := call(ctx, srv.client(getProcedure, p.opt, connect.WithInterceptors(i)))
			if connect.CodeOf(err) != connect.CodeCanceled || !errors.Is(err, context.Canceled) {
				t.Errorf("error %v: want CodeCanceled and context.Canceled", err)
			}
			var re *retry.Error
			if !errors.As(err, &re) || connect.CodeOf(re.Last) != connect.CodeUnavailable {
				t.Errorf("error %v: want a *retry.Error whose Last is the Unavailable error", err)
			}
			if got := srv.attempts(); got != 1 {
				t.Errorf("server saw %d attempts, want 1", got)
			}
		})
	}
}

func TestDeadlineWouldPassDuringWait(t *testing.T) {
	srv := newServer(t, unavailable())
	clock, withClock := fakeClock()
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
	defer cancel()
	i := retryconnect.NewInterceptor(retry.Constant(2*time.Hour).Take(5), retryconnect.With(withClock))
	_, err := call(ctx, srv.client(getProcedure, connect.WithInterceptors(i)))
	if !errors.Is(err, context.DeadlineExceeded) || connect.CodeOf(err) != connect.CodeUnavailable {
		t.Errorf("error %v: want context.DeadlineExceeded at once, with the last attempt's code", err)
	}
	if got := clock.Sleeps(); got != nil {
		t.Errorf("waits %v, want none", got)
	}
}

func TestStreamsAreNotRetried(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			srv := newServer(t, unavailable(), success)
			i := retryconnect.NewInterceptor(retry.Constant(0).Take(3))
			c := connect.NewClient[msg, msg](srv.Client(), srv.URL+listProcedure, p.opt,
				connect.WithIdempotency(connect.IdempotencyNoSideEffects), connect.WithInterceptors(i))
			stream, err := c.CallServerStream(t.Context(), connect.NewRequest(wrapperspb.String("hi")))
			if err == nil {
				for stream.Receive() {
					t.Errorf("received %v", stream.Msg())
				}
				err = stream.Err()
				stream.Close()
			}
			if connect.CodeOf(err) != connect.CodeUnavailable {
				t.Errorf("error %v: want Unavailable", err)
			}
			if got := srv.attempts(); got != 1 {
				t.Errorf("server saw %d attempts, want 1", got)
			}
		})
	}
}

func TestHandlerSideDoesNothing(t *testing.T) {
	// The interceptor on a handler passes every call through once.
	i := retryconnect.NewInterceptor(retry.Constant(0).Take(3))
	n := 0
	h := connect.NewUnaryHandler(getProcedure, func(context.Context, *connect.Request[msg]) (*connect.Response[msg], error) {
		n++
		return nil, connect.NewError(connect.CodeUnavailable, errors.New("busy"))
	}, connect.WithInterceptors(i))
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := connect.NewClient[msg, msg](srv.Client(), srv.URL+getProcedure)
	_, err := call(t.Context(), c)
	if connect.CodeOf(err) != connect.CodeUnavailable || n != 1 {
		t.Errorf("error %v after %d calls of the handler, want Unavailable after 1", err, n)
	}
}

func TestPanics(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func()
		want string
	}{
		{"nil schedule", func() { retryconnect.NewInterceptor(nil) }, "retryconnect: NewInterceptor: nil Schedule"},
		{"bad code", func() { retryconnect.Codes(0) }, "retryconnect: Codes: 0 is not a Connect error code"},
		{"nil procedures", func() { retryconnect.Procedures(nil) }, "retryconnect: Procedures: nil function"},
		{"IfValue", func() { retryconnect.With(retry.IfValue(func(any) bool { return true })) },
			"retryconnect: With: retry.IfValue is not supported; judge calls by their code with Codes or retry.If"},
		{"nil hedge request", func() {
			retryconnect.Hedge[msg, msg](context.Background(), retry.Delays(), nil, nil)
		}, "retryconnect: Hedge: nil Schedule, call or request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != tc.want {
					t.Errorf("panic %v, want %q", r, tc.want)
				}
			}()
			tc.f()
		})
	}
}
