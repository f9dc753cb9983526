package retryconnect_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryconnect"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// addInner is an interceptor nearer the network than the retrying one that
// adds a header to every request it sends.
var addInner = connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Add("X-Inner", "v")
		return next(ctx, req)
	}
})

// TestHeadersAsTheCallerMadeThem checks that every attempt, retried or
// hedged, sends the caller's headers and nothing left by an earlier attempt.
func TestHeadersAsTheCallerMadeThem(t *testing.T) {
	want := []string{"a b|v|", "a b|v|", "a b|v|"}
	wantMany := []string{"a b|v|5", "a b|v|5", "a b|v|5"}
	for _, p := range protocols {
		t.Run(p.name+"/retried", func(t *testing.T) {
			srv := newServer(t, unavailable(), unavailable(), success)
			_, withClock := fakeClock()
			i := retryconnect.NewInterceptor(retry.Constant(time.Second).Take(5), retryconnect.With(withClock))
			req := connect.NewRequest(wrapperspb.String("hi"))
			req.Header().Add("X-Caller", "a")
			req.Header().Add("X-Caller", "b")
			for k := range 5 { // more keys than a snapshot keeps inline
				req.Header().Set("X-Extra-"+strconv.Itoa(k+1), strconv.Itoa(k+1))
			}
			if _, err := srv.client(getProcedure, p.opt, connect.WithInterceptors(i, addInner)).CallUnary(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			if got := srv.seenHeaders(); !slices.Equal(got, wantMany) {
				t.Errorf("the server saw %q, want %q", got, wantMany)
			}
			if got := req.Header().Values("X-Caller"); !slices.Equal(got, []string{"a", "b"}) {
				t.Errorf("the caller's request holds X-Caller %q", got)
			}
		})
		t.Run(p.name+"/hedged", func(t *testing.T) {
			srv := newServer(t, unavailable(), unavailable(), success)
			i := retryconnect.NewInterceptor(retry.Constant(time.Second).Take(5))
			req := connect.NewRequest(wrapperspb.String("hi"))
			req.Header().Add("X-Caller", "a")
			req.Header().Add("X-Caller", "b")
			c := srv.client(getProcedure, p.opt, connect.WithInterceptors(i, addInner))
			if _, err := retryconnect.Hedge(t.Context(), retry.Constant(time.Hour).Take(2), c.CallUnary, req); err != nil {
				t.Fatal(err)
			}
			if got := srv.seenHeaders(); !slices.Equal(got, want) {
				t.Errorf("the server saw %q, want %q", got, want)
			}
		})
	}
}
