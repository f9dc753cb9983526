//go:build !plan9

package retry

import (
	"runtime"
	"syscall"
)

// isConnectionError reports whether err itself (not its tree) is the error
// number of a refused, reset or aborted connection or a broken pipe.
func isConnectionError(err error) bool {
	errno, ok := err.(syscall.Errno)
	if !ok {
		return false
	}
	switch errno {
	case syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE:
		return true
	}
	// On Windows the syscall constants above are invented values that no
	// socket returns; sockets report Winsock and Win32 error numbers, which
	// package syscall does not all define.
	if runtime.GOOS == "windows" {
		switch errno {
		case 10053, // WSAECONNABORTED
			10054, // WSAECONNRESET
			10061, // WSAECONNREFUSED
			64,    // ERROR_NETNAME_DELETED: a reset, as overlapped I/O reports it
			1225,  // ERROR_CONNECTION_REFUSED
			1236:  // ERROR_CONNECTION_ABORTED
			return true
		}
	}
	return false
}
