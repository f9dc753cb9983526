package retry

import "strings"

// isConnectionError reports whether err describes a refused or reset
// connection. Plan 9 reports network errors as text, not error numbers.
func isConnectionError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "connection refused") || strings.Contains(msg, "connection reset")
}
