package retrysql

import (
	"context"
	"database/sql"
	"errors"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrysql/internal/txrun"
)

// DB begins transactions: *sql.DB and *sql.Conn are DBs.
type DB interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// Tx runs fn in a transaction begun on db with txOpts (nil for the driver's
// defaults) and commits it, trying again with a fresh transaction, on the
// schedule s and the options opts, each time the package doc's table says the
// failure is retried. fn must not commit or roll back the transaction itself:
// Tx does, and reports a transaction fn ended as an error that matches
// sql.ErrTxDone. fn must not keep tx, or anything read through it, past its
// return.
//
// Tx returns nil once a COMMIT succeeded, an error matching ErrCommitUnknown
// when the outcome of a COMMIT is unknown, fn's error (or the driver's) as it
// is when it is not retried, and a *retry.Error when it gives up.
//
// opts mean what they mean to retry.Do, one transaction being one attempt.
// Tx panics if db, s or fn is nil, before anything else, and, as Do does, if
// given an IfValue. It is safe for concurrent use as far as db is (a *sql.DB
// is).
func Tx(ctx context.Context, db DB, s retry.Schedule, txOpts *sql.TxOptions, fn func(context.Context, *sql.Tx) error, opts ...retry.Option) error {
	if txrun.IsNil(db) {
		panic("retrysql: Tx: nil db")
	}
	if s == nil {
		panic("retrysql: Tx: nil Schedule")
	}
	if fn == nil {
		panic("retrysql: Tx: nil fn")
	}
	ops := &txrun.Ops[*sql.Tx]{
		Begin: func(ctx context.Context) (*sql.Tx, error) {
			return db.BeginTx(ctx, txOpts)
		},
		Commit:        func(_ context.Context, tx *sql.Tx) error { return tx.Commit() },
		Rollback:      func(_ context.Context, tx *sql.Tx) error { return tx.Rollback() },
		Ended:         func(err error) bool { return errors.Is(err, sql.ErrTxDone) },
		CommitUnknown: ErrCommitUnknown,
	}
	return txrun.Run(ctx, s, ops, fn, opts)
}
