package retrysql_test

import (
	"context"
	"database/sql"
	"os"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/lib/pq"
	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrysql/internal/pgtest"
)

// The cluster of this package's tests and benchmarks allows up to 100
// benchmark clients, the tests' and the tools' connections.
func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m, 130))
}

// open returns a database/sql handle on the cluster through driver ("pgx" or
// "postgres", lib/pq), at addr (the cluster's when ""), closed after the test,
// which also checks that no connection is left in use.
func open(t testing.TB, driver, addr string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, pgtest.ConnString(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if n := db.Stats().InUse; n != 0 {
			t.Errorf("%d connections still in use", n)
		}
		db.Close()
	})
	return db
}

// table creates a table of n accounts (id, balance 100), dropped after the
// test, and returns its name.
func table(t testing.TB, db *sql.DB, n int) string {
	t.Helper()
	return pgtest.Accounts(t, n, func(q string) error { _, err := db.Exec(q); return err })
}

func mustExec(t testing.TB, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func scalar(t testing.TB, db *sql.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// fast retries at once, a few times: the tests provoke each failure once.
var fast = retry.Constant(time.Millisecond).Take(5)

var serializable = &sql.TxOptions{Isolation: sql.LevelSerializable}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
