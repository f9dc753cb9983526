package txrun

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/seed-b8c8f69d/retry"
)

// pgErr is an error with an SQLSTATE, as drivers make them.
type pgErr string

func (e pgErr) Error() string    { return "sqlstate " + string(e) }
func (e pgErr) SQLState() string { return string(e) }

// unsent is an error a driver guarantees happened before anything was sent.
type unsent struct{}

func (unsent) Error() string     { return "nothing sent" }
func (unsent) SafeToRetry() bool { return true }

var errEnded = errors.New("tx ended")
var ErrCommitUnknown = errors.New("commit unknown")
var errRolledBack = errors.New("commit rolled back")

// fake is a driver whose first attempts fail as told.
type fake struct {
	inFn, atCommit []error // per attempt; nil past the end
	begun, commits int
	rollbacks      int
}

func (f *fake) ops() *Ops[int] {
	return &Ops[int]{
		Begin: func(context.Context) (int, error) { f.begun++; return f.begun, nil },
		Commit: func(_ context.Context, n int) error {
			if n <= len(f.atCommit) && f.atCommit[n-1] != nil {
				return f.atCommit[n-1]
			}
			f.commits++
			return nil
		},
		Rollback:      func(context.Context, int) error { f.rollbacks++; return nil },
		Ended:         func(err error) bool { return errors.Is(err, errEnded) },
		RolledBack:    func(err error) bool { return errors.Is(err, errRolledBack) },
		CommitUnknown: ErrCommitUnknown,
	}
}

func (f *fake) fn(_ context.Context, n int) error {
	if n <= len(f.inFn) {
		return f.inFn[n-1]
	}
	return nil
}

// TestTable pins the package doc's table: each failure, in fn or answering
// COMMIT, is retried (the second attempt commits) or ends the call.
func TestTable(t *testing.T) {
	wrapped := func(err error) error { return fmt.Errorf("exec: %w", err) }
	for _, c := range []struct {
		name          string
		inFn, commit  error
		retried       bool
		commitUnknown bool
	}{
		{name: "40001 in fn", inFn: pgErr("40001"), retried: true},
		{name: "40001 wrapped in fn", inFn: wrapped(pgErr("40001")), retried: true},
		{name: "40P01 in fn", inFn: pgErr("40P01"), retried: true},
		{name: "40001 at commit", commit: pgErr("40001"), retried: true},
		{name: "40P01 at commit", commit: pgErr("40P01"), retried: true},
		{name: "57P01 in fn", inFn: pgErr("57P01"), retried: true},
		{name: "08006 in fn", inFn: pgErr("08006"), retried: true},
		{name: "EOF in fn", inFn: wrapped(io.ErrUnexpectedEOF), retried: true},
		{name: "bad conn in fn", inFn: driver.ErrBadConn, retried: true},
		{name: "unsent in fn", inFn: unsent{}, retried: true},
		{name: "unsent at commit", commit: unsent{}, retried: true},
		{name: "40003 in fn", inFn: pgErr("40003")},
		{name: "23505 in fn", inFn: pgErr("23505")},
		{name: "fn's error", inFn: errors.New("mine")},
		{name: "nested runner gave up", inFn: &retry.Error{Attempts: 3, Last: pgErr("40001")}},
		{name: "23505 at commit", commit: pgErr("23505")},
		{name: "rolled back at commit", commit: errRolledBack},
		{name: "ended at commit", commit: errEnded},
		{name: "40003 at commit", commit: pgErr("40003"), commitUnknown: true},
		{name: "57P01 at commit", commit: pgErr("57P01"), commitUnknown: true},
		{name: "08006 at commit", commit: pgErr("08006"), commitUnknown: true},
		{name: "EOF at commit", commit: io.ErrUnexpectedEOF, commitUnknown: true},
		{name: "bad conn at commit (lib/pq after a lost COMMIT)", commit: driver.ErrBadConn, commitUnknown: true},
		{name: "unknown error at commit", commit: errors.New("?"), commitUnknown: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fake{inFn: []error{c.inFn}, atCommit: []error{c.commit}}
			err := Run(context.Background(), retry.Constant(0).Take(3), f.ops(), f.fn, nil)
			if c.retried {
				if err != nil || f.begun != 2 || f.commits != 1 {
					t.Errorf("err = %v, %d attempts, %d commits; want nil, 2, 1", err, f.begun, f.commits)
				}
				return
			}
			if err == nil || f.begun != 1 || f.commits != 0 {
				t.Fatalf("err = %v, %d attempts, %d commits; want an error, 1, 0", err, f.begun, f.commits)
			}
			if got := errors.Is(err, ErrCommitUnknown); got != c.commitUnknown {
				t.Errorf("errors.Is(%v, ErrCommitUnknown) = %v", err, got)
			}
			if last := c.inFn; last != nil && !errors.Is(err, last) {
				t.Errorf("err = %v, does not match %v", err, last)
			}
			if last := c.commit; last != nil && !errors.Is(err, last) {
				t.Errorf("err = %v, does not match %v", err, last)
			}
		})
	}
}

// TestIfNarrows: retry.If can refuse what the runner would retry.
func TestIfNarrows(t *testing.T) {
	f := &fake{inFn: []error{pgErr("40001")}}
	err := Run(context.Background(), retry.Constant(0).Take(3), f.ops(), f.fn,
		[]retry.Option{retry.If(func(error) bool { return false })})
	if SQLState(err) != "40001" || f.begun != 1 {
		t.Errorf("err = %v after %d attempts", err, f.begun)
	}
}

// TestExhausted: the schedule runs out: a *retry.Error with the last error.
func TestExhausted(t *testing.T) {
	f := &fake{inFn: []error{pgErr("40001"), pgErr("40001"), pgErr("40001")}}
	err := Run(context.Background(), retry.Constant(0).Take(2), f.ops(), f.fn, nil)
	var re *retry.Error
	if !errors.As(err, &re) || !errors.Is(err, retry.ErrExhausted) || SQLState(err) != "40001" || f.begun != 3 {
		t.Errorf("err = %v after %d attempts", err, f.begun)
	}
	if f.rollbacks != 3 {
		t.Errorf("%d rollbacks, want 3", f.rollbacks)
	}
}

// TestGoexitRollsBack: runtime.Goexit in fn (t.FailNow, say) rolls back.
func TestGoexitRollsBack(t *testing.T) {
	f := &fake{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = Run(context.Background(), retry.Constant(0), f.ops(), func(context.Context, int) error {
			runtime.Goexit()
			return nil
		}, nil)
	}()
	<-done
	if f.rollbacks != 1 || f.commits != 0 {
		t.Errorf("%d rollbacks, %d commits; want 1, 0", f.rollbacks, f.commits)
	}
}
