package txrun

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"

	"github.com/seed-b8c8f69d/retry"
)

// SQLSTATE codes the runner acts on.
const (
	SerializationFailure       = "40001"
	DeadlockDetected           = "40P01"
	StatementCompletionUnknown = "40003"
)

// SQLState returns the SQLSTATE of the first error in err's tree that has
// one (an SQLState() string method: pgx's *pgconn.PgError, lib/pq's
// *pq.Error), or "".
func SQLState(err error) string {
	var s interface{ SQLState() string }
	if errors.As(err, &s) {
		return s.SQLState()
	}
	return ""
}

// ConnectionLost reports whether code says the server closed the session:
// class 08 (connection exception) or 57P01..57P03 (admin_shutdown,
// crash_shutdown, cannot_connect_now).
func ConnectionLost(code string) bool {
	if len(code) == 5 && code[:2] == "08" {
		return true
	}
	return code == "57P01" || code == "57P02" || code == "57P03"
}

// ConnectionFailure reports whether err, an error without SQLSTATE, is a
// failure of the connection rather than of the transaction's statements.
func ConnectionFailure(err error) bool {
	return safeToRetry(err) ||
		errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.EOF) ||
		errors.Is(err, net.ErrClosed) ||
		retry.IsTransient(err)
}

// safeToRetry reports whether the driver says err happened before anything
// was sent to the server (pgx's SafeToRetry method).
func safeToRetry(err error) bool {
	var s interface{ SafeToRetry() bool }
	return errors.As(err, &s) && s.SafeToRetry()
}
