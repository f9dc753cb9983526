// Package retrypgx runs pgx v5 transactions that are retried the right way:
// the runner of package retrysql for pgx.Tx. What is retried, and how
// contexts, panics and connections are handled, is in retrysql's package doc;
// it applies here with pgx.ErrTxClosed in place of sql.ErrTxDone.
package retrypgx

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrysql"
	"github.com/seed-b8c8f69d/retry/retrysql/internal/txrun"
)

// DB begins transactions: *pgxpool.Pool and *pgx.Conn are DBs.
type DB interface {
	BeginTx(ctx context.Context, txOptions pgx.TxOptions) (pgx.Tx, error)
}

// Tx runs fn in a transaction begun on db with txOpts and commits it, trying
// again with a fresh transaction, on the schedule s and the options opts, each
// time retrysql's table says the failure is retried. fn must not commit or
// roll back the transaction itself: Tx does, and reports a transaction fn
// ended as an error that matches pgx.ErrTxClosed. fn must not keep tx past its
// return. A *pgx.Conn whose transaction's context ended mid-statement is
// closed by pgx; use a pool to get a fresh connection for the next attempt.
//
// Tx returns nil once a COMMIT succeeded, an error matching
// retrysql.ErrCommitUnknown when the outcome of a COMMIT is unknown, fn's error
// (or pgx's) as it is when it is not retried (pgx.ErrTxCommitRollback when fn
// swallowed an error and the server rolled back), and a *retry.Error when it
// gives up.
//
// opts mean what they mean to retry.Do, one transaction being one attempt.
// Tx panics if db, s or fn is nil, before anything else, and, as Do does, if
// given an IfValue. It is safe for concurrent use as far as db is (a
// *pgxpool.Pool is, a *pgx.Conn is not).
func Tx(ctx context.Context, db DB, s retry.Schedule, txOpts pgx.TxOptions, fn func(context.Context, pgx.Tx) error, opts ...retry.Option) error {
	if txrun.IsNil(db) {
		panic("retrypgx: Tx: nil db")
	}
	if s == nil {
		panic("retrypgx: Tx: nil Schedule")
	}
	if fn == nil {
		panic("retrypgx: Tx: nil fn")
	}
	ops := &txrun.Ops[pgx.Tx]{
		Begin: func(ctx context.Context) (pgx.Tx, error) {
			return db.BeginTx(ctx, txOpts)
		},
		Commit:        func(ctx context.Context, tx pgx.Tx) error { return tx.Commit(ctx) },
		Rollback:      func(ctx context.Context, tx pgx.Tx) error { return tx.Rollback(ctx) },
		Ended:         func(err error) bool { return errors.Is(err, pgx.ErrTxClosed) },
		RolledBack:    func(err error) bool { return errors.Is(err, pgx.ErrTxCommitRollback) },
		CommitUnknown: retrysql.ErrCommitUnknown,
	}
	return txrun.Run(ctx, s, ops, fn, opts)
}
