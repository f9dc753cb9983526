package retry

import "time"

// HedgeResult tells how the attempts of one Hedge call ended, beyond what
// Outcome says; OnHedgeDone hooks receive it. The attempts that are neither
// the winner nor Failed, Outcome.Attempts - Failed less one if Winner is
// set, were abandoned: Hedge returned before it handled what they returned.
type HedgeResult struct {
	// Winner is the 1-based number of the attempt whose success Hedge
	// returned, or 0 if none did. The first attempt is number 1; every
	// attempt with a higher number is a hedge. Numbers are given in the
	// order the attempts' goroutines started, which is the order Hedge
	// launched them except when two start at nearly the same instant.
	Winner int
	// Failed is the number of failed attempts Hedge handled: the retryable
	// failures it went on after, and the failure that ended the call, if
	// one did.
	Failed int
}

// OnHedgeDone returns an Option that makes Hedge call f once when the call
// ends, as OnDone does (at the same moment, on Hedge's goroutine, with the
// same Outcome, after the OnDone hooks), and with which attempt won and how
// many failed. Use it to count the hedges that won, or the attempts that
// Hedge abandoned. Retry and Do panic if given it. Several OnHedgeDone hooks
// all run, in the order given. Like OnDone, it allocates nothing more than
// the same call without it.
//
// OnHedgeDone panics if f is nil.
func OnHedgeDone(f func(Outcome, HedgeResult)) Option {
	if f == nil {
		panic("retry: OnHedgeDone: nil function")
	}
	return Option{kind: hedgeDoneOption, ref: f}
}

// hedgeDoneOption is OnHedgeDone's kind. It is declared here rather than
// among the others so that this hook stays in one file; config.fold ignores
// it, and Hedge looks for it with hedgeReports.
const hedgeDoneOption optionKind = 128

// hedgeReports reports whether opts hold an OnHedgeDone.
func hedgeReports(opts []Option) bool {
	for _, o := range opts {
		if o.kind == hedgeDoneOption {
			return true
		}
	}
	return false
}

// report calls the OnHedgeDone hooks of opts, as done calls OnDone's.
func (c *config) report(opts []Option, start time.Time, attempts int, err, reason error, r HedgeResult) {
	o := Outcome{Attempts: attempts, Err: err, Reason: reason}
	if attempts > 0 {
		o.Elapsed = c.now().Sub(start)
	}
	for _, opt := range opts {
		if opt.kind == hedgeDoneOption {
			opt.ref.(func(Outcome, HedgeResult))(o, r)
		}
	}
}
