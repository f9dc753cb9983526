package retrysql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrysql"
)

// TestFnEndsTransaction: fn commits or rolls back itself. The runner says so
// (an error matching sql.ErrTxDone), never runs fn again, and what fn
// committed is committed once.
func TestFnEndsTransaction(t *testing.T) {
	for _, c := range []struct {
		name string
		end  func(*sql.Tx) error
		want int
	}{
		{"commit", (*sql.Tx).Commit, 101},
		{"rollback", (*sql.Tx).Rollback, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			eachDriver(t, func(t *testing.T, driver string) {
				db := open(t, driver, "")
				acct := table(t, db, 1)
				calls := 0
				err := retrysql.Tx(ctxT(t), db, fast, nil, func(ctx context.Context, tx *sql.Tx) error {
					calls++
					if _, err := tx.ExecContext(ctx, "UPDATE "+acct+" SET balance = balance + 1"); err != nil {
						return err
					}
					return c.end(tx)
				})
				if !errors.Is(err, sql.ErrTxDone) || calls != 1 {
					t.Errorf("err = %v after %d calls; want sql.ErrTxDone after 1", err, calls)
				}
				if got := scalar(t, db, "SELECT balance FROM "+acct); got != c.want {
					t.Errorf("balance = %d, want %d", got, c.want)
				}
			})
		})
	}
}

// TestPanicInFn: the transaction is rolled back, the connection released, and
// the panic reaches the caller with its value.
func TestPanicInFn(t *testing.T) {
	eachDriver(t, func(t *testing.T, driver string) {
		db := open(t, driver, "")
		acct := table(t, db, 1)
		func() {
			defer func() {
				if r := recover(); r != "boom" {
					t.Errorf("recovered %v, want boom", r)
				}
			}()
			_ = retrysql.Tx(ctxT(t), db, fast, nil, func(ctx context.Context, tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, "UPDATE "+acct+" SET balance = 0"); err != nil {
					return err
				}
				panic("boom")
			})
		}()
		if got := scalar(t, db, "SELECT balance FROM "+acct); got != 100 {
			t.Errorf("balance = %d, want 100 (rolled back)", got)
		}
	})
}

// TestContextEndsMidTransaction: the caller's context ends while fn runs:
// nothing is committed, the call ends with the context's error, and the
// connection is released.
func TestContextEndsMidTransaction(t *testing.T) {
	eachDriver(t, func(t *testing.T, driver string) {
		db := open(t, driver, "")
		acct := table(t, db, 1)
		for _, c := range []struct {
			name string
			fn   func(ctx context.Context, cancel context.CancelFunc, tx *sql.Tx) error
		}{
			{"fn returns nil after the end", func(ctx context.Context, cancel context.CancelFunc, tx *sql.Tx) error {
				cancel()
				return nil
			}},
			{"statement cut short", func(ctx context.Context, cancel context.CancelFunc, tx *sql.Tx) error {
				time.AfterFunc(20*time.Millisecond, cancel)
				_, err := tx.ExecContext(ctx, "SELECT pg_sleep(30)")
				return err
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				ctx, cancel := context.WithCancel(ctxT(t))
				defer cancel()
				calls := 0
				err := retrysql.Tx(ctx, db, fast, nil, func(ctx context.Context, tx *sql.Tx) error {
					calls++
					if _, err := tx.ExecContext(ctx, "UPDATE "+acct+" SET balance = 0"); err != nil {
						return err
					}
					return c.fn(ctx, cancel, tx)
				})
				var re *retry.Error
				if !errors.Is(err, context.Canceled) || !errors.As(err, &re) || calls != 1 {
					t.Errorf("err = %v after %d calls; want a *retry.Error matching context.Canceled after 1", err, calls)
				}
				if got := scalar(t, db, "SELECT balance FROM "+acct); got != 100 {
					t.Errorf("balance = %d, want 100 (nothing committed)", got)
				}
			})
		}
	})
}

// TestAttemptTimeoutRetried: an attempt that exceeds retry.AttemptTimeout
// did not commit, so it is tried again.
func TestAttemptTimeoutRetried(t *testing.T) {
	db := open(t, "pgx", "")
	acct := table(t, db, 1)
	calls := 0
	err := retrysql.Tx(ctxT(t), db, fast, nil, func(ctx context.Context, tx *sql.Tx) error {
		calls++
		if _, err := tx.ExecContext(ctx, "UPDATE "+acct+" SET balance = balance + 1"); err != nil {
			return err
		}
		if calls == 1 {
			_, err := tx.ExecContext(ctx, "SELECT pg_sleep(30)")
			return err
		}
		return nil
	}, retry.AttemptTimeout(200*time.Millisecond))
	if err != nil || calls != 2 {
		t.Errorf("err = %v after %d calls; want nil after 2", err, calls)
	}
	if got := scalar(t, db, "SELECT balance FROM "+acct); got != 101 {
		t.Errorf("balance = %d, want 101", got)
	}
}

// TestNotRetried: a constraint violation, fn's own error and a Permanent one
// end the call at once, as they are.
func TestNotRetried(t *testing.T) {
	eachDriver(t, func(t *testing.T, driver string) {
		db := open(t, driver, "")
		acct := table(t, db, 1)
		mine := errors.New("mine")
		for _, c := range []struct {
			name  string
			fn    func(ctx context.Context, tx *sql.Tx) error
			match func(error) bool
		}{
			{"unique violation", func(ctx context.Context, tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, "INSERT INTO "+acct+" VALUES (1, 1)")
				return err
			}, func(err error) bool { return retrysql.SQLState(err) == "23505" }},
			{"fn's error", func(ctx context.Context, tx *sql.Tx) error { return mine },
				func(err error) bool { return err == mine }},
			{"permanent", func(ctx context.Context, tx *sql.Tx) error { return retry.Permanent(mine) },
				func(err error) bool { return err == mine }},
		} {
			t.Run(c.name, func(t *testing.T) {
				calls := 0
				err := retrysql.Tx(ctxT(t), db, fast, nil, func(ctx context.Context, tx *sql.Tx) error {
					calls++
					if _, err := tx.ExecContext(ctx, "UPDATE "+acct+" SET balance = 0"); err != nil {
						return err
					}
					return c.fn(ctx, tx)
				})
				if !c.match(err) || calls != 1 {
					t.Errorf("err = %v after %d calls", err, calls)
				}
				if got := scalar(t, db, "SELECT balance FROM "+acct); got != 100 {
					t.Errorf("balance = %d, want 100 (rolled back)", got)
				}
			})
		}
	})
}

// TestNilArguments: invalid configuration panics with a retrysql: message.
func TestNilArguments(t *testing.T) {
	fn := func(context.Context, *sql.Tx) error { return nil }
	var nilDB *sql.DB
	for _, c := range []struct {
		name string
		call func()
		want string
	}{
		{"nil db", func() { _ = retrysql.Tx(context.Background(), nil, fast, nil, fn) }, "retrysql: Tx: nil db"},
		{"typed nil db", func() { _ = retrysql.Tx(context.Background(), nilDB, fast, nil, fn) }, "retrysql: Tx: nil db"},
		{"nil schedule", func() { _ = retrysql.Tx(context.Background(), &sql.DB{}, nil, nil, fn) }, "retrysql: Tx: nil Schedule"},
		{"nil fn", func() { _ = retrysql.Tx(context.Background(), &sql.DB{}, fast, nil, nil) }, "retrysql: Tx: nil fn"},
		{"IfValue", func() {
			_ = retrysql.Tx(context.Background(), &sql.DB{}, fast, nil, fn, retry.IfValue(func(int) bool { return false }))
		}, "retry: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if msg, _ := r.(string); msg != c.want && !(c.want == "retry: " && strings.HasPrefix(msg, c.want)) {
					t.Errorf("panic %v, want %q", r, c.want)
				}
			}()
			c.call()
		})
	}
}
