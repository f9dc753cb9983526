// Package retrysql runs database transactions that are retried the right way:
// each attempt is a fresh transaction, driven by a retry.Schedule and the retry
// package's options, and a transaction whose COMMIT may have been applied is
// never tried again.
//
//	err := retrysql.Tx(ctx, db, policy, &sql.TxOptions{Isolation: sql.LevelSerializable},
//		func(ctx context.Context, tx *sql.Tx) error {
//			_, err := tx.ExecContext(ctx, "UPDATE account SET balance = balance - 10 WHERE id = 1")
//			return err
//		})
//
// Package retrypgx is the same runner for pgx v5.
//
// # What is retried
//
// An attempt that fails is tried again, on the schedule, only when its
// transaction certainly did not commit and the failure is one that heals:
//
//	failure                                                        retried  returned as
//	40001 serialization_failure (in fn or answering COMMIT)        yes      the driver's error
//	40P01 deadlock_detected (in fn or answering COMMIT)            yes      the driver's error
//	connection lost before COMMIT was sent (class 08, 57P01-57P03,  yes      the driver's error
//	  EOF, driver.ErrBadConn, net.ErrClosed, pgx's SafeToRetry
//	  errors, and what retry.IsTransient recognises: resets, timeouts)
//	connection lost after COMMIT was sent, no answer               never    ErrCommitUnknown
//	40003 statement_completion_unknown answering COMMIT            never    ErrCommitUnknown
//	fn committed or rolled back the transaction itself              never    wraps sql.ErrTxDone
//	anything else (constraint violations, 40003 in fn, fn's own     never    the error as it is
//	  errors, retry.Permanent, an *retry.Error from a nested runner)
//
// The SQLSTATE is read from any error in the tree with an SQLState() string
// method (pgx's *pgconn.PgError, lib/pq's *pq.Error): see SQLState. A COMMIT
// error the runner cannot place (no SQLSTATE, and the driver does not
// guarantee that nothing was sent) is reported as ErrCommitUnknown: the runner
// never guesses that a commit did not happen. lib/pq reports a connection lost
// after COMMIT as driver.ErrBadConn, so driver.ErrBadConn counts as lost
// before COMMIT only when fn or BeginTx returned it.
//
// When retries run out, the budget refuses one, or the caller's context ends,
// the call returns a *retry.Error as retry.Do does, matching both the reason
// and the last attempt's error with errors.Is. Options such as retry.If narrow
// what is retried further; they never widen it. A Budget, Throttle or Breaker
// counts a 40001 or 40P01 as a failed attempt like any other it retries, so
// under heavy contention they refuse transactions that backoff alone would
// have committed (docs/SQL.md measures a budget): size them for outages.
//
// # Contexts, panics and connections
//
// fn runs with the attempt's context, which is the context the transaction
// was begun with. Once it is done the runner does not send COMMIT: it rolls
// back and reports the context's cause, and the retry package decides (the
// call ends when the caller's context ended; an attempt that only exceeded
// retry.AttemptTimeout is tried again, since it did not commit). A panic or
// runtime.Goexit in fn rolls the transaction back and continues. Every
// attempt's connection is back in the pool (or closed) when Tx returns.
package retrysql
