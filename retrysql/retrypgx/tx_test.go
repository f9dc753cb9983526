package retrypgx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrysql"
	"github.com/seed-b8c8f69d/retry/retrysql/internal/pgtest"
	"github.com/seed-b8c8f69d/retry/retrysql/retrypgx"
)

var serializable = pgx.TxOptions{IsoLevel: pgx.Serializable}

func TestSerializationFailureRetried(t *testing.T) {
	p := pool(t, "")
	acct := table(t, p, 1)
	calls := 0
	var seen []error
	err := retrypgx.Tx(ctxT(t), p, fast, serializable, func(ctx context.Context, tx pgx.Tx) error {
		calls++
		var b int
		if err := tx.QueryRow(ctx, "SELECT balance FROM "+acct+" WHERE id = 1").Scan(&b); err != nil {
			return err
		}
		if calls == 1 {
			exec(t, p, "UPDATE "+acct+" SET balance = balance + 1000")
		}
		_, err := tx.Exec(ctx, "UPDATE "+acct+" SET balance = $1", b+1)
		return err
	}, retry.OnRetry(func(a retry.Attempt) { seen = append(seen, a.Err) }))
	if err != nil {
		t.Fatal(err)
	}
	var pgErr *pgconn.PgError
	if calls != 2 || len(seen) != 1 || !errors.As(seen[0], &pgErr) || pgErr.Code != "40001" {
		t.Errorf("calls = %d, retried after %v; want 2 calls, retried after a 40001 *pgconn.PgError", calls, seen)
	}
	if got := scalar(t, p, "SELECT balance FROM "+acct); got != 1101 {
		t.Errorf("balance = %d, want 1101", got)
	}
}

func TestConnectionLostBeforeCommitRetried(t *testing.T) {
	p := pool(t, "")
	admin := pool(t, "")
	acct := table(t, admin, 1)
	calls := 0
	err := retrypgx.Tx(ctxT(t), p, fast, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		calls++
		if _, err := tx.Exec(ctx, "UPDATE "+acct+" SET balance = balance + 1"); err != nil {
			return err
		}
		if calls == 1 {
			exec(t, admin, "SELECT pg_terminate_backend($1, 10000)", tx.Conn().PgConn().PID())
			_, err := tx.Exec(ctx, "SELECT 1")
			t.Logf("after pg_terminate_backend: %v", err)
			return err
		}
		return nil
	})
	if err != nil || calls != 2 {
		t.Fatalf("err = %v after %d calls; want nil after 2", err, calls)
	}
	if got := scalar(t, admin, "SELECT balance FROM "+acct); got != 101 {
		t.Errorf("balance = %d, want 101", got)
	}
}

func TestCommitLostIsUnknown(t *testing.T) {
	proxy, err := pgtest.NewProxy(pgtest.Need(t).Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	p := pool(t, proxy.Addr())
	admin := pool(t, "")
	acct := table(t, admin, 1)
	calls := 0
	err = retrypgx.Tx(ctxT(t), p, fast, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		calls++
		proxy.DropNextCommit()
		_, err := tx.Exec(ctx, "UPDATE "+acct+" SET balance = balance + 1")
		return err
	})
	if !errors.Is(err, retrysql.ErrCommitUnknown) || calls != 1 {
		t.Fatalf("err = %v after %d calls; want ErrCommitUnknown after 1", err, calls)
	}
	if pgconn.SafeToRetry(err) {
		t.Errorf("err = %v: the driver's error inside says it is safe to retry", err)
	}
	select {
	case <-proxy.Answered:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never answered the COMMIT")
	}
	if got := scalar(t, admin, "SELECT balance FROM "+acct); got != 101 {
		t.Errorf("balance = %d, want 101 (committed once)", got)
	}
}

func TestFnEndsTransaction(t *testing.T) {
	p := pool(t, "")
	acct := table(t, p, 1)
	for _, c := range []struct {
		name string
		end  func(pgx.Tx, context.Context) error
		want int
	}{
		{"commit", pgx.Tx.Commit, 101},
		{"rollback", pgx.Tx.Rollback, 101},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			err := retrypgx.Tx(ctxT(t), p, fast, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
				calls++
				if _, err := tx.Exec(ctx, "UPDATE "+acct+" SET balance = balance + 1"); err != nil {
					return err
				}
				return c.end(tx, ctx)
			})
			if !errors.Is(err, pgx.ErrTxClosed) || calls != 1 {
				t.Errorf("err = %v after %d calls; want pgx.ErrTxClosed after 1", err, calls)
			}
			if got := scalar(t, p, "SELECT balance FROM "+acct); got != c.want {
				t.Errorf("balance = %d, want %d", got, c.want)
			}
		})
	}
}

func TestSwallowedErrorRollsBack(t *testing.T) {
	p := pool(t, "")
	acct := table(t, p, 1)
	calls := 0
	err := retrypgx.Tx(ctxT(t), p, fast, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		calls++
		_, _ = tx.Exec(ctx, "INSERT INTO "+acct+" VALUES (1, 1)") // fails, error ignored
		return nil
	})
	if !errors.Is(err, pgx.ErrTxCommitRollback) || errors.Is(err, retrysql.ErrCommitUnknown) || calls != 1 {
		t.Errorf("err = %v after %d calls; want pgx.ErrTxCommitRollback after 1", err, calls)
	}
}

func TestPanicInFn(t *testing.T) {
	p := pool(t, "")
	acct := table(t, p, 1)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want boom", r)
			}
		}()
		_ = retrypgx.Tx(ctxT(t), p, fast, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "UPDATE "+acct+" SET balance = 0"); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	if got := scalar(t, p, "SELECT balance FROM "+acct); got != 100 {
		t.Errorf("balance = %d, want 100", got)
	}
}

func TestContextEndsMidTransaction(t *testing.T) {
	p := pool(t, "")
	acct := table(t, p, 1)
	ctx, cancel := context.WithCancel(ctxT(t))
	calls := 0
	err := retrypgx.Tx(ctx, p, fast, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		calls++
		if _, err := tx.Exec(ctx, "UPDATE "+acct+" SET balance = 0"); err != nil {
			return err
		}
		time.AfterFunc(20*time.Millisecond, cancel)
		_, err := tx.Exec(ctx, "SELECT pg_sleep(30)")
		return err
	})
	var re *retry.Error
	if !errors.Is(err, context.Canceled) || !errors.As(err, &re) || calls != 1 {
		t.Errorf("err = %v after %d calls; want a *retry.Error matching context.Canceled after 1", err, calls)
	}
	if got := scalar(t, p, "SELECT balance FROM "+acct); got != 100 {
		t.Errorf("balance = %d, want 100", got)
	}
}

func TestNilArguments(t *testing.T) {
	fn := func(context.Context, pgx.Tx) error { return nil }
	var nilConn *pgx.Conn
	for _, c := range []struct {
		name string
		call func()
		want string
	}{
		{"nil db", func() { _ = retrypgx.Tx(context.Background(), nil, fast, pgx.TxOptions{}, fn) }, "retrypgx: Tx: nil db"},
		{"typed nil db", func() { _ = retrypgx.Tx(context.Background(), nilConn, fast, pgx.TxOptions{}, fn) }, "retrypgx: Tx: nil db"},
		{"nil schedule", func() { _ = retrypgx.Tx(context.Background(), &pgx.Conn{}, nil, pgx.TxOptions{}, fn) }, "retrypgx: Tx: nil Schedule"},
		{"nil fn", func() { _ = retrypgx.Tx(context.Background(), &pgx.Conn{}, fast, pgx.TxOptions{}, nil) }, "retrypgx: Tx: nil fn"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != c.want {
					t.Errorf("panic %v, want %q", r, c.want)
				}
			}()
			c.call()
		})
	}
}
