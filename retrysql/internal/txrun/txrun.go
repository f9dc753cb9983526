// Package txrun is the transaction runner shared by retrysql (database/sql)
// and retrypgx (pgx v5): one attempt is one fresh transaction, and the commit
// rule below decides what may be tried again.
package txrun

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/seed-b8c8f69d/retry"
)

// Ops are a driver's transaction operations.
type Ops[T any] struct {
	Begin    func(ctx context.Context) (T, error)
	Commit   func(ctx context.Context, tx T) error
	Rollback func(ctx context.Context, tx T) error
	// Ended reports whether err says the transaction had already ended
	// (sql.ErrTxDone, pgx.ErrTxClosed).
	Ended func(err error) bool
	// RolledBack reports whether a commit error is the server's definite
	// answer that the transaction was rolled back without an SQLSTATE, such
	// as pgx.ErrTxCommitRollback; nil when the driver has none.
	RolledBack func(err error) bool
	// CommitUnknown is the sentinel of a COMMIT whose outcome is unknown
	// (retrysql.ErrCommitUnknown).
	CommitUnknown error
}

// IsNil reports whether db, the DB a caller gave Tx, is nil or a nil pointer
// in an interface.
func IsNil(db any) bool {
	if db == nil {
		return true
	}
	v := reflect.ValueOf(db)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// Run calls fn in a fresh transaction per attempt, on the schedule s and the
// options opts, and commits it.
func Run[T any](ctx context.Context, s retry.Schedule, ops *Ops[T], fn func(context.Context, T) error, opts []retry.Option) error {
	return retry.Do(ctx, s, func(ctx context.Context) error {
		return attempt(ctx, ops, fn)
	}, opts...)
}

// attempt runs one transaction. Its error is plain when trying again is safe
// and worthwhile, Permanent otherwise (so Retry returns it as it is).
func attempt[T any](ctx context.Context, ops *Ops[T], fn func(context.Context, T) error) error {
	tx, err := ops.Begin(ctx)
	if err != nil {
		return beforeCommit(ctx, err)
	}
	// A panic or runtime.Goexit in fn: roll back and let it go on. No recover,
	// so the panic reaches the caller with its own stack.
	settled := false
	defer func() {
		if !settled {
			_ = ops.Rollback(ctx, tx)
		}
	}()
	if err := fn(ctx, tx); err != nil {
		settled = true
		if rerr := ops.Rollback(ctx, tx); ops.Ended(rerr) && ctx.Err() == nil {
			// fn ended the transaction itself, perhaps with a COMMIT whose
			// outcome nobody knows: never try it again.
			return retry.Permanent(fmt.Errorf("retrysql: fn failed after ending the transaction itself: %w", err))
		}
		return beforeCommit(ctx, err)
	}
	settled = true
	if ctx.Err() != nil {
		// The attempt's context ended while fn ran: COMMIT is not sent.
		_ = ops.Rollback(ctx, tx)
		return fmt.Errorf("retrysql: transaction not committed: %w", context.Cause(ctx))
	}
	err = ops.Commit(ctx, tx)
	if err == nil {
		return nil
	}
	return atCommit(err, ops)
}

// beforeCommit classifies a failure that happened before COMMIT was sent: the
// transaction did not commit, so it is tried again when the failure heals.
// Once the attempt's context is done, Retry decides (it stops when the
// caller's context ended; an AttemptTimeout alone is tried again).
func beforeCommit(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	var done *retry.Error
	if errors.As(err, &done) {
		// A runner further down already retried and gave up.
		return retry.Permanent(err)
	}
	switch code := SQLState(err); {
	case code == SerializationFailure, code == DeadlockDetected, ConnectionLost(code):
		return err
	case code == "" && ConnectionFailure(err):
		return err
	}
	return retry.Permanent(err)
}

// atCommit classifies a failed COMMIT. Only a definite "not committed" is
// tried again: the server's serialization or deadlock answer, or a failure
// the driver guarantees happened before any byte was sent. An error the
// runner cannot place is reported as ErrCommitUnknown, never retried.
func atCommit[T any](err error, ops *Ops[T]) error {
	if ops.Ended(err) {
		return retry.Permanent(fmt.Errorf("retrysql: the transaction had ended before the runner's COMMIT (fn committed or rolled back itself, or its context ended): %w", err))
	}
	code := SQLState(err)
	switch {
	case code == SerializationFailure, code == DeadlockDetected:
		return err
	case code != "" && !ConnectionLost(code) && code != StatementCompletionUnknown:
		// The server answered COMMIT with an error: it did not commit.
		return retry.Permanent(err)
	case code == "" && safeToRetry(err):
		return err
	case code == "" && ops.RolledBack != nil && ops.RolledBack(err):
		return retry.Permanent(err)
	}
	return retry.Permanent(fmt.Errorf("%w: %w", ops.CommitUnknown, err))
}
