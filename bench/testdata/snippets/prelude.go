// Package snippets is where bench's TestDocSnippets compiles the Go blocks of
// README.md and docs/*.md. This file declares the names they use without
// declaring them: a block may use any of them as if the prose around it had
// set it up. Add a name here rather than a line of setup to a doc.
package snippets

import (
	"context"
	"database/sql"
	"net/http"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"google.golang.org/grpc/credentials"
)

// The caller's context, and a policy built elsewhere.
var (
	ctx    context.Context
	policy retry.Schedule
	budget *retry.Budget
)

// Calls to retry: fn, fetch and alwaysFails return a value, call does not.
func fn(context.Context) (string, error)          { return "", nil }
func fetch(context.Context) (string, error)       { return "", nil }
func alwaysFails(context.Context) (string, error) { return "", context.Canceled }
func call(context.Context) error                  { return nil }

// A database, a queue and what goes through them.
type User struct{ Name string }

var (
	db interface {
		GetUser(ctx context.Context, id string) (User, error)
		BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error) // as *sql.DB's
	}
	id    string
	queue interface {
		Publish(ctx context.Context, msg any) error
	}
	msg any
)

// A transaction's work: move amount from one account to another.
func transfer(ctx context.Context, tx *sql.Tx, from, to string, amount int) error { return nil }

var (
	from, to string
	amount   int
)

// Metrics, shaped like Prometheus's client.
type counter interface{ Inc() }

var (
	calls    interface{ WithLabelValues(...string) counter }
	attempts interface{ Observe(float64) }
)

// HTTP and gRPC.
func sign(*http.Request) error { return nil }

var (
	retryAfterDate time.Time
	target         string
	creds          credentials.TransportCredentials
)

// A test.
var t *testing.T
