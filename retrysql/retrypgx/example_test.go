package retrypgx_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrysql"
	"github.com/seed-b8c8f69d/retry/retrysql/internal/pgtest"
	"github.com/seed-b8c8f69d/retry/retrysql/retrypgx"
)

// A transfer between two accounts in a SERIALIZABLE transaction on a pgx
// pool, retried on 40001 and 40P01 with full jitter, and with a budget that
// caps the retries of every transaction on this database to 20% of them.
func ExampleTx() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.Running().DSN())
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	for _, q := range []string{
		"DROP TABLE IF EXISTS account",
		"CREATE TABLE account (id int PRIMARY KEY, balance int NOT NULL)",
		"INSERT INTO account VALUES (1, 100), (2, 100)",
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			panic(err)
		}
	}

	policy := retry.Exponential(time.Millisecond).Cap(250 * time.Millisecond).FullJitter(nil).Take(10)
	budget := retry.NewBudget(0.2, 10) // one per database, shared by every call
	err = retrypgx.Tx(ctx, pool, policy, pgx.TxOptions{IsoLevel: pgx.Serializable},
		func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "UPDATE account SET balance = balance - 10 WHERE id = 1"); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "UPDATE account SET balance = balance + 10 WHERE id = 2")
			return err
		}, retry.WithBudget(budget))
	switch {
	case errors.Is(err, retrysql.ErrCommitUnknown):
		fmt.Println("COMMIT sent, answer lost: check before doing it again")
	case err != nil:
		fmt.Println(err)
	default:
		var a, b int
		_ = pool.QueryRow(ctx, "SELECT (SELECT balance FROM account WHERE id = 1), (SELECT balance FROM account WHERE id = 2)").Scan(&a, &b)
		fmt.Println("committed:", a, b)
	}
	// Output:
	// committed: 90 110
}
