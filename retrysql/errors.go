package retrysql

import (
	"errors"

	"github.com/seed-b8c8f69d/retry/retrysql/internal/txrun"
)

// ErrCommitUnknown is matched (errors.Is) by the error Tx returns when COMMIT
// was sent and no answer came: the connection was lost, the context ended
// while COMMIT was in flight, the server answered 40003
// (statement_completion_unknown), or the driver's error does not say that
// nothing was sent. The transaction may or may not have been applied, so it
// is never tried again; check the database before doing it again (or make the
// transaction idempotent). The same error also matches the COMMIT's own error
// (errors.Is, errors.As).
var ErrCommitUnknown = errors.New("retrysql: commit outcome unknown")

// SQLState returns the SQLSTATE code of the first error in err's tree (see
// errors.As) that has a method SQLState() string, such as pgx's
// *pgconn.PgError and lib/pq's *pq.Error, or "" if none has. SQLState(nil)
// is "".
func SQLState(err error) string {
	return txrun.SQLState(err)
}
