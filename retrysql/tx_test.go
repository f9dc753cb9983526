package retrysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrysql"
	"github.com/seed-b8c8f69d/retry/retrysql/internal/pgtest"
)

var drivers = []string{"pgx", "postgres"}

// Each driver: a test's body, run once through pgx's database/sql driver and
// once through lib/pq.
func eachDriver(t *testing.T, body func(t *testing.T, driver string)) {
	for _, d := range drivers {
		t.Run(d, func(t *testing.T) { body(t, d) })
	}
}

// onRetry records the SQLSTATE of every retried attempt.
func onRetry(codes *[]string) retry.Option {
	return retry.OnRetry(func(a retry.Attempt) { *codes = append(*codes, retrysql.SQLState(a.Err)) })
}

// TestSerializationFailureRetried: a concurrent update between the read and
// the write of a REPEATABLE READ or SERIALIZABLE transaction: 40001, retried,
// and the second attempt commits once.
func TestSerializationFailureRetried(t *testing.T) {
	eachDriver(t, func(t *testing.T, driver string) {
		db := open(t, driver, "")
		acct := table(t, db, 2)
		var codes []string
		calls := 0
		err := retrysql.Tx(ctxT(t), db, fast, serializable, func(ctx context.Context, tx *sql.Tx) error {
			calls++
			var b int
			if err := tx.QueryRowContext(ctx, "SELECT balance FROM "+acct+" WHERE id = 1").Scan(&b); err != nil {
				return err
			}
			if calls == 1 {
				// Another client commits a change to the row read.
				mustExec(t, db, "UPDATE "+acct+" SET balance = balance + 1000 WHERE id = 1")
			}
			_, err := tx.ExecContext(ctx, "UPDATE "+acct+" SET balance = $1 WHERE id = 1", b+1)
			return err
		}, onRetry(&codes))
		if err != nil {
			t.Fatal(err)
		}
		if calls != 2 || fmt.Sprint(codes) != "[40001]" {
			t.Errorf("calls = %d, retried on %v; want 2 calls, retried on [40001]", calls, codes)
		}
		if got := scalar(t, db, "SELECT balance FROM "+acct+" WHERE id = 1"); got != 1101 {
			t.Errorf("balance = %d, want 1101 (the other client's +1000 and ours +1, once)", got)
		}
	})
}

// TestSerializationFailureAtCommitRetried: write skew under SERIALIZABLE
// (each transaction reads what the other writes); the second to commit is
// refused, at COMMIT or at its last statement, with 40001, and retried.
func TestSerializationFailureAtCommitRetried(t *testing.T) {
	eachDriver(t, func(t *testing.T, driver string) {
		db := open(t, driver, "")
		acct := table(t, db, 2)
		var codes []string
		calls := 0
		err := retrysql.Tx(ctxT(t), db, fast, serializable, func(ctx context.Context, tx *sql.Tx) error {
			calls++
			var sum int
			if err := tx.QueryRowContext(ctx, "SELECT sum(balance) FROM "+acct).Scan(&sum); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "UPDATE "+acct+" SET balance = balance - 1 WHERE id = 1"); err != nil {
				return err
			}
			if calls == 1 {
				// The other transaction of the skew reads both rows and
				// writes row 2, and commits first.
				other, err := db.BeginTx(ctx, serializable)
				if err != nil {
					return err
				}
				defer other.Rollback()
				if err := other.QueryRowContext(ctx, "SELECT sum(balance) FROM "+acct).Scan(&sum); err != nil {
					return err
				}
				if _, err := other.ExecContext(ctx, "UPDATE "+acct+" SET balance = balance - 1 WHERE id = 2"); err != nil {
					return err
				}
				if err := other.Commit(); err != nil {
					t.Errorf("the other transaction: %v", err)
				}
			}
			return nil
		}, onRetry(&codes))
		if err != nil {
			t.Fatal(err)
		}
		if calls != 2 || fmt.Sprint(codes) != "[40001]" {
			t.Errorf("calls = %d, retried on %v; want 2 calls, retried on [40001]", calls, codes)
		}
		if got := scalar(t, db, "SELECT sum(balance) FROM "+acct); got != 198 {
			t.Errorf("sum = %d, want 198", got)
		}
	})
}

// TestDeadlockRetried: two transactions lock two rows in opposite orders;
// PostgreSQL breaks the cycle with 40P01 in one of them, which is retried.
func TestDeadlockRetried(t *testing.T) {
	eachDriver(t, func(t *testing.T, driver string) {
		db := open(t, driver, "")
		acct := table(t, db, 2)
		var wg, locked sync.WaitGroup
		locked.Add(2)
		var mu sync.Mutex
		var codes []string
		errs := make([]error, 2)
		for i, order := range [][2]int{{1, 2}, {2, 1}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				first := true
				var mine []string
				errs[i] = retrysql.Tx(ctxT(t), db, fast, nil, func(ctx context.Context, tx *sql.Tx) error {
					if _, err := tx.ExecContext(ctx, "UPDATE "+acct+" SET balance = balance + 1 WHERE id = $1", order[0]); err != nil {
						return err
					}
					if first {
						// Both hold their first row before taking the second.
						first = false
						locked.Done()
						locked.Wait()
					}
					_, err := tx.ExecContext(ctx, "UPDATE "+acct+" SET balance = balance + 1 WHERE id = $1", order[1])
					return err
				}, onRetry(&mine))
				mu.Lock()
				codes = append(codes, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if len(codes) == 0 || strings.Trim(strings.ReplaceAll(fmt.Sprint(codes), "40P01", ""), "[ ]") != "" {
			t.Errorf("retried on %v, want 40P01 only, at least once", codes)
		}
		if got := scalar(t, db, "SELECT sum(balance) FROM "+acct); got != 204 {
			t.Errorf("sum = %d, want 204: each transaction committed once", got)
		}
	})
}

// TestConnectionLostBeforeCommitRetried: the backend is terminated in the
// middle of the transaction; what it wrote is gone, and the retry writes it
// once.
func TestConnectionLostBeforeCommitRetried(t *testing.T) {
	eachDriver(t, func(t *testing.T, driver string) {
		db := open(t, driver, "")
		admin := open(t, driver, "")
		acct := table(t, admin, 1)
		var errs []error
		calls := 0
		err := retrysql.Tx(ctxT(t), db, fast, nil, func(ctx context.Context, tx *sql.Tx) error {
			calls++
			if _, err := tx.ExecContext(ctx, "INSERT INTO "+acct+" VALUES (2, 5)"); err != nil {
				return err
			}
			if calls == 1 {
				var pid int
				if err := tx.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
					return err
				}
				mustExec(t, admin, "SELECT pg_terminate_backend($1, 10000)", pid)
			}
			_, err := tx.ExecContext(ctx, "UPDATE "+acct+" SET balance = balance + 1 WHERE id = 2")
			return err
		}, retry.OnRetry(func(a retry.Attempt) { errs = append(errs, a.Err) }))
		if err != nil {
			t.Fatal(err)
		}
		if calls != 2 {
			t.Errorf("calls = %d, want 2 (retried after %v)", calls, errs)
		}
		t.Logf("retried after: %v", errs)
		if got := scalar(t, admin, "SELECT count(*) FROM "+acct+" WHERE id = 2 AND balance = 6"); got != 1 {
			t.Errorf("%d rows written, want 1", got)
		}
	})
}

// TestCommitLostIsUnknown: a proxy drops the connection right after
// forwarding COMMIT. The server committed; the client cannot know it. The
// runner reports ErrCommitUnknown with the driver's error inside, and never
// runs the transaction again.
func TestCommitLostIsUnknown(t *testing.T) {
	eachDriver(t, func(t *testing.T, driver string) {
		proxy, err := pgtest.NewProxy(pgtest.Need(t).Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer proxy.Close()
		db := open(t, driver, proxy.Addr())
		admin := open(t, driver, "")
		acct := table(t, admin, 1)
		calls := 0
		err = retrysql.Tx(ctxT(t), db, fast, nil, func(ctx context.Context, tx *sql.Tx) error {
			calls++
			proxy.DropNextCommit()
			_, err := tx.ExecContext(ctx, "UPDATE "+acct+" SET balance = balance + 1 WHERE id = 1")
			return err
		})
		if !errors.Is(err, retrysql.ErrCommitUnknown) {
			t.Fatalf("err = %v, want ErrCommitUnknown", err)
		}
		if inner, ok := err.(interface{ Unwrap() []error }); !ok || len(inner.Unwrap()) != 2 || inner.Unwrap()[1] == nil {
			t.Errorf("err = %q: want the driver's error inside", err)
		}
		var re *retry.Error
		if errors.As(err, &re) {
			t.Errorf("err is a *retry.Error (%v): an unknown commit is not retried, it ends the call as it is", re)
		}
		if calls != 1 || proxy.Dropped.Load() != 1 {
			t.Errorf("calls = %d, dropped = %d; want 1 and 1", calls, proxy.Dropped.Load())
		}
		t.Logf("err: %v", err)
		// The server did commit, once.
		select {
		case <-proxy.Answered:
		case <-time.After(10 * time.Second):
			t.Fatal("the server never answered the COMMIT")
		}
		if got := scalar(t, admin, "SELECT balance FROM "+acct+" WHERE id = 1"); got != 101 {
			t.Errorf("balance = %d, want 101", got)
		}
	})
}
