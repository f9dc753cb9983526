package retryhttp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/seed-b8c8f69d/retry/retryhttp"
	"github.com/seed-b8c8f69d/retry/retryserver"
)

// A handler behind a Shedder that serves one request at a time, with no
// queue. While the slot is taken (here by a Ticket held by hand, in a real
// server by a request in flight), a request is refused with 503 and a
// Retry-After, which a retryhttp.Transport honours.
func ExampleNewHandler() {
	s := retryserver.New(retryserver.Concurrency(1), retryserver.QueueLimit(0))
	h := retryhttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	}), s)

	busy, _ := s.Admit(context.Background(), false)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	fmt.Println(rec.Code, "Retry-After:", rec.Header().Get("Retry-After"))

	busy.Success()
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	fmt.Println(rec.Code, rec.Body)
	// Output:
	// 503 Retry-After: 1
	// 200 hello
}
