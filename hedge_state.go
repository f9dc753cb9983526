package retry

// The state of one Hedge call: what its goroutines share, the states of its
// schedule, an attempt's outcome, and ErrHedgeLost, the cause its losers see.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// The states of a Hedge's run of its schedule, for its yield function.
const (
	hedgeStarting  int32 = iota // the schedule has not been called yet
	hedgeRunning                // the schedule runs and may call yield
	hedgeStepping               // yield is running
	hedgeEnded                  // yield returned false, or the schedule returned
	hedgeAbandoned              // the schedule returned while yield ran on another goroutine: it must stop
)

// hedgeMaxOutstanding bounds the attempts of one Hedge that run at once, so
// that a schedule of zero (or tiny) delays with no end cannot start
// goroutines as fast as Hedge's goroutine can loop.
const hedgeMaxOutstanding = 10

// hedge is the state of one Hedge call. It is made for the call and never
// recycled: its yield function (step) is handed to the caller's schedule,
// and the attempts' goroutines may outlive the call.
type hedge[T any] struct {
	// Set before the first attempt starts, then only read.
	ctx     context.Context // the caller's, kept for the yield function, which has no other way to reach it
	fn      func(context.Context) (T, error)
	release func(T) // OnDiscard's, or nil
	cfg     config
	gate    gate            // WithThrottle's and WithBreaker's
	actx    context.Context // the attempts' context, derived from ctx
	cancel  context.CancelCauseFunc
	wake    chan struct{}   // an attempt delivered an outcome, or the timer fired (capacity 1)
	ctxDone <-chan struct{} // ctx.Done(), nil if ctx never ends
	runFn   func()          // h.run: the attempts' goroutines and the timer run it

	fired   atomic.Uint64 // written by fire: how many times the timer fired
	queued  atomic.Int32  // attempts launched and not yet taken by a goroutine (see run)
	taken   atomic.Int32  // attempts taken by a goroutine
	state   atomic.Int32  // hedgeStarting…hedgeAbandoned, for the yield function
	yielded chan struct{} // made by closeYield before it abandons a running yield, which closes it on return

	// Read and written by Hedge's goroutine only.
	x           *hedgeRare[T] // what only some calls need; nil until then
	timer       *time.Timer   // the real clock's, made by the first wait that needs it; it calls fire
	used        uint64        // the firings accounted for, by a wait they ended or as stale
	started     int           // attempts started
	outstanding int           // attempts started whose outcome was not handled yet
	last        error         // the last failure's error, unmarked
	lastV       T             // and its value
	v           T
	err         error
	sequential  bool  // the clock is a FakeClock: no delay ever elapses
	timerSet    bool  // timer is set for the current wait and its firing not yet taken
	refused     bool  // a Budget refused an attempt
	blocked     error // the reason a Throttle or Breaker did not let an attempt through
	stopped     bool  // a failure asked for no retry (a negative pushback): no attempt starts any more
	expired     bool  // MaxElapsed's limit let no more attempts start
	done        bool  // v and err are the result

	// For OnHedgeDone (hedge_result.go), read and written by Hedge's goroutine only.
	reports bool  // some option is an OnHedgeDone
	winner  int32 // the number of the attempt whose success was handled
	failed  int32 // failures handled

	// Guarded by mu, except that Hedge's goroutine, their only writer once
	// the call is over, reads over, calls and pending from then on
	// without it: no attempt changes them any more.
	mu        sync.Mutex
	over      bool               // Hedge has decided; outcomes from now on are dropped
	calls     int                // calls of fn begun; no more begin once over
	pending   []outcome[T]       // delivered outcomes not handled yet
	inline    [1]outcome[T]      // pending's first array
	passes    []pass             // the gate's passes of the attempts launched and not yet taken
	interrupt context.CancelFunc // ends the current sleep on a custom clock
}

// hedgeRare is the state that only some Hedge calls need: If and OnRetry,
// OnDone, a custom clock, a pushback that asks not to retry. Only Hedge's
// goroutine (or, in its stead, whichever runs the schedule's yield
// function) reads or writes it; rare makes it when first needed.
type hedgeRare[T any] struct {
	opts    []Option  // the If and OnRetry options; nil once Hedge has returned
	start   time.Time // on the clock, when hooks need Elapsed or MaxElapsed its limit
	until   time.Time // on a custom clock, when the current sleep ends
	stopErr error     // the error of the failure that asked not to be retried, unmarked
	stopV   T         // and its value
	reason  error     // why the call gave up, if it did, for OnDone
	limits  []limit   // MaxRetriesIf's, with this call's counts
}

// rare returns h.x, made if need be.
func (h *hedge[T]) rare() *hedgeRare[T] {
	if h.x == nil {
		h.x = new(hedgeRare[T])
	}
	return h.x
}

// outcome is what one attempt returned, or how it ended otherwise.
type outcome[T any] struct {
	v     T
	err   error
	own   bool  // it failed after its own AttemptTimeout expired
	ended int8  // 0: it returned; endPanic or endGoexit: fn panicked or called runtime.Goexit
	n     int32 // the attempt's 1-based number, in the order the goroutines took them
	panic any
	p     pass // from the call's gate, to report the outcome with
}

const (
	endPanic int8 = 1 + iota
	endGoexit
)

// success reports whether o is a value returned with a nil error.
func (o *outcome[T]) success() bool { return o.ended == 0 && o.err == nil }

// ErrHedgeLost is the cause, as context.Cause reports it, of the context of
// every attempt that Hedge abandons: another attempt succeeded first, or one
// failed in a way that ended the call. Hedge cancels the winner's context
// too once it has returned, with the same cause, so a value must not need
// its attempt's context after fn returned. When the caller's context ends,
// the attempts see its cause instead.
var ErrHedgeLost = errors.New("retry: hedge lost")
