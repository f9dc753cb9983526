//go:build !plan9

package retry

import (
	"errors"
	"syscall"
)

// isConnectionError reports whether err's chain holds an error number for a
// refused, reset or aborted connection or a broken pipe.
func isConnectionError(err error) bool {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE:
		return true
	}
	return false
}
