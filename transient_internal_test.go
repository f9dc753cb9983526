package retry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestIsTransientTrees: IsTransient on trees a careful caller would not
// build: deep chains, wide and shared joins, markers in odd places, and
// nil entries.
func TestIsTransientTrees(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	notFound := errors.New("not found")
	deep := func(err error, n int) error {
		for i := range n {
			err = fmt.Errorf("layer %d: %w", i, err)
		}
		return err
	}
	// shared is a join whose two halves are the same error, n levels deep:
	// a DAG of 2ⁿ paths to reset.
	shared := func(err error, n int) error {
		for range n {
			err = errors.Join(err, err)
		}
		return err
	}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"a reset 1000 layers down", deep(reset, 1000), true},
		{"an unknown error 1000 layers down", deep(notFound, 1000), false},
		{"a reset behind 14 levels of shared joins", shared(reset, 14), true},
		{"the last of 10 000 joined errors is a reset", errors.Join(append(repeat(notFound, 9_999), reset)...), true},
		{"Permanent deep inside a join", errors.Join(reset, deep(Permanent(notFound), 100)), false},
		{"Permanent around a pushback", Permanent(RetryAfter(reset, time.Second)), false},
		{"a pushback around a reset", RetryAfter(reset, time.Second), true},
		{"a refusing pushback around a reset", RetryAfter(reset, -1), true},
		{"an *Error deep inside a join", errors.Join(reset, deep(newError(1, reset, ErrExhausted), 100)), false},
		{"canceled far from a timeout", errors.Join(deep(context.DeadlineExceeded, 50), deep(context.Canceled, 50)), false},
		{"a nil in a hand-made join", joinWithNil{[]error{nil, reset, nil}}, true},
		{"only nils in a hand-made join", joinWithNil{[]error{nil, nil}}, false},
		{"a chain that ends in nil", chainToNil{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, IsTransient(tt.err))
		})
	}
}

// joinWithNil is an error whose Unwrap returns a slice with nil entries,
// which errors.Join never makes but a hand-written type may.
type joinWithNil struct{ errs []error }

func (e joinWithNil) Error() string { return "join with nil" }

func (e joinWithNil) Unwrap() []error { return e.errs }

// chainToNil is an error whose Unwrap returns nil.
type chainToNil struct{}

func (chainToNil) Error() string { return "chain to nil" }

func (chainToNil) Unwrap() error { return nil }
