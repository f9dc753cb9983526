package retrygrpc_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
)

// TestWithLogger: retry.WithLogger through the interceptors logs each
// retry with the attempt's status, and the give-up.
func TestWithLogger(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: dropTime}))
	t.Run("unary", func(t *testing.T) {
		buf.Reset()
		srv := &server{check: failing(10, unavailable)}
		cc, _ := unaryConn(t, srv, retry.Constant(time.Second).Take(1), retrygrpc.With(retry.WithLogger(logger)))
		if _, err := check(t.Context(), cc); err == nil {
			t.Fatal("want an error")
		}
		want := `level=INFO msg=retry retry.attempt=1 retry.delay=1s error="rpc error: code = Unavailable desc = down"
level=WARN msg="retry gave up" retry.reason=exhausted retry.attempts=2 retry.call.duration=1s error="retry: gave up after 2 attempts: schedule exhausted: last error: rpc error: code = Unavailable desc = down"
`
		if got := buf.String(); got != want {
			t.Errorf("logged\n%s\nwant\n%s", got, want)
		}
	})
	t.Run("hedging", func(t *testing.T) {
		buf.Reset()
		srv := &server{check: failing(1, unavailable)}
		cc := hedgeConn(t, srv, retry.Constant(time.Hour).Take(2),
			retrygrpc.With(retry.WithLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: dropTime})))))
		if _, err := check(t.Context(), cc); err != nil {
			t.Fatal(err)
		}
		if got := buf.String(); !strings.HasPrefix(got, `level=DEBUG msg=hedge retry.attempt=2 retry.hedge.trigger=failure`) {
			t.Errorf("logged %q", got)
		}
	})
}

func dropTime(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey && len(groups) == 0 {
		return slog.Attr{}
	}
	return a
}
