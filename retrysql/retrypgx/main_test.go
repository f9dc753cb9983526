package retrypgx_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrysql/internal/pgtest"
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m, 30))
}

// pool returns a pool on the cluster at addr (the cluster's when ""), closed
// after the test, which also checks that no connection is left acquired.
func pool(t testing.TB, addr string) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(context.Background(), pgtest.ConnString(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A connection pgx closed (its context ended mid-statement) is
		// destroyed by the pool on a goroutine of its own, and counted as
		// acquired until then: wait for it, up to a bound that only a leak
		// reaches.
		for deadline := time.Now().Add(10 * time.Second); p.Stat().AcquiredConns() != 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if n := p.Stat().AcquiredConns(); n != 0 {
			t.Errorf("%d connections still acquired", n)
		}
		p.Close()
	})
	return p
}

// table creates a table of n accounts (id, balance 100), dropped after the
// test, and returns its name.
func table(t testing.TB, p *pgxpool.Pool, n int) string {
	t.Helper()
	return pgtest.Accounts(t, n, func(q string) error { _, err := p.Exec(context.Background(), q); return err })
}

func exec(t testing.TB, p *pgxpool.Pool, q string, args ...any) {
	t.Helper()
	if _, err := p.Exec(context.Background(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func scalar(t testing.TB, p *pgxpool.Pool, q string) int {
	t.Helper()
	var n int
	if err := p.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

var fast = retry.Constant(time.Millisecond).Take(5)

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
