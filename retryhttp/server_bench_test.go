package retryhttp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/seed-b8c8f69d/retry/retryhttp"
	"github.com/seed-b8c8f69d/retry/retryserver"
)

// discardWriter is a ResponseWriter that keeps nothing but a reusable
// header map, so that the benchmark measures the handler, not a recorder.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }

// BenchmarkNewHandler measures what NewHandler costs the server per request,
// without a network: a handler that writes "ok" called bare, through
// NewHandler and served, and through NewHandler and refused (the slot is
// taken for good, no queue).
func BenchmarkNewHandler(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	req := httptest.NewRequest("GET", "/", nil)
	run := func(b *testing.B, h http.Handler, want int) {
		w := &discardWriter{h: make(http.Header)}
		b.ReportAllocs()
		for b.Loop() {
			clear(w.h)
			w.code = 200
			h.ServeHTTP(w, req)
			if w.code != want {
				b.Fatalf("status %d, want %d", w.code, want)
			}
		}
	}
	b.Run("outcome=bare", func(b *testing.B) { run(b, ok, 200) })
	b.Run("outcome=served", func(b *testing.B) { run(b, retryhttp.NewHandler(ok, retryserver.New()), 200) })
	b.Run("outcome=refused", func(b *testing.B) {
		s := retryserver.New(retryserver.Concurrency(1), retryserver.QueueLimit(0))
		hold, _ := s.Admit(context.Background(), false)
		defer hold.Drop()
		run(b, retryhttp.NewHandler(ok, s), 503)
	})
}
