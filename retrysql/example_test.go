package retrysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrysql"
	"github.com/seed-b8c8f69d/retry/retrysql/internal/pgtest"
)

// exampleDB opens the tests' throwaway cluster with a table account(id,
// balance) holding one row (1, 100).
func exampleDB() *sql.DB {
	db, err := sql.Open("pgx", pgtest.Running().DSN())
	if err != nil {
		panic(err)
	}
	for _, q := range []string{
		"DROP TABLE IF EXISTS account",
		"CREATE TABLE account (id int PRIMARY KEY, balance int NOT NULL)",
		"INSERT INTO account VALUES (1, 100)",
	} {
		if _, err := db.Exec(q); err != nil {
			panic(err)
		}
	}
	return db
}

// A read-modify-write in a SERIALIZABLE transaction. On the first attempt
// another client changes the row in between, so PostgreSQL refuses the write
// with 40001; Tx rolls back and runs the transaction again, which commits.
func ExampleTx() {
	db := exampleDB()
	defer db.Close()
	ctx := context.Background()

	policy := retry.Exponential(time.Millisecond).Cap(250 * time.Millisecond).FullJitter(nil).Take(10)
	attempt := 0
	err := retrysql.Tx(ctx, db, policy, &sql.TxOptions{Isolation: sql.LevelSerializable},
		func(ctx context.Context, tx *sql.Tx) error {
			attempt++
			var balance int
			if err := tx.QueryRowContext(ctx, "SELECT balance FROM account WHERE id = 1").Scan(&balance); err != nil {
				return err
			}
			if attempt == 1 { // another client deposits 1000 meanwhile
				if _, err := db.ExecContext(ctx, "UPDATE account SET balance = balance + 1000 WHERE id = 1"); err != nil {
					return err
				}
			}
			_, err := tx.ExecContext(ctx, "UPDATE account SET balance = $1 WHERE id = 1", balance+1)
			return err
		}, retry.OnRetry(func(a retry.Attempt) {
			fmt.Printf("attempt %d: SQLSTATE %s, trying again\n", a.Number, retrysql.SQLState(a.Err))
		}))
	if errors.Is(err, retrysql.ErrCommitUnknown) {
		fmt.Println("COMMIT sent, answer lost: check before doing it again")
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	var balance int
	_ = db.QueryRow("SELECT balance FROM account WHERE id = 1").Scan(&balance)
	fmt.Println("committed, balance", balance)
	// Output:
	// attempt 1: SQLSTATE 40001, trying again
	// committed, balance 1101
}

func ExampleSQLState() {
	err := fmt.Errorf("transfer: %w", &pgconn.PgError{Code: "40P01", Message: "deadlock detected"})
	fmt.Println(retrysql.SQLState(err))
	fmt.Println(retrysql.SQLState(errors.New("not from a database")) == "")
	// Output:
	// 40P01
	// true
}
