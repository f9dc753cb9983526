package retry

import "fmt"

// The options an entry point refuses: an Option means something on every
// call that accepts it (see "Options and entry points" in the package
// documentation); the few that mean nothing on an entry point are refused at
// the call with a panic naming both, never silently ignored.

// entry is an entry point that takes Options.
type entry uint8

const (
	entryRetry entry = iota
	entryDo
	entryHedge
)

func (e entry) String() string {
	switch e {
	case entryDo:
		return "Do"
	case entryHedge:
		return "Hedge"
	}
	return "Retry"
}

// checkOptions panics if e does not take one of opts, or if an option about
// fn's value (IfValue, OnDiscard) does not take a T. It runs on every call with
// an option the flat loop does not handle, before the context is looked at,
// so misuse shows on the first call; it allocates nothing unless it panics.
func checkOptions[T any](e entry, opts []Option) {
	for _, o := range opts {
		switch o.kind {
		case ifValueOption:
			if e != entryRetry {
				refuse(e, o)
			}
			if f, ok := o.ref.(func(T) bool); !ok {
				panic(fmt.Sprintf("retry: %v: IfValue's function is a %T, not a %T", e, o.ref, f))
			}
		case discardOption:
			if e == entryDo {
				refuse(e, o)
			}
			if f, ok := o.ref.(func(T)); !ok {
				panic(fmt.Sprintf("retry: %v: OnDiscard's function is a %T, not a %T", e, o.ref, f))
			}
		case hedgeDoneOption:
			if e != entryHedge {
				refuse(e, o)
			}
		}
	}
}

// refuse panics for an option o that entry point e does not take, saying
// what to use instead.
//
//go:noinline
func refuse(e entry, o Option) {
	var why string
	switch o.kind {
	case ifValueOption:
		if e == entryDo {
			why = "IfValue has no value to judge; use it with Retry"
		} else {
			why = "IfValue is not supported; use it with Retry, or return an error for a value to retry"
		}
	case discardOption:
		why = "OnDiscard has no value to discard; use it with Retry or Hedge"
	case hedgeDoneOption:
		why = "OnHedgeDone reports on Hedge calls only; use OnDone"
	}
	panic("retry: " + e.String() + ": " + why)
}

// ReleasesValues reports whether o was made by OnDiscard: an option about the
// values a call drops, which Retry (with IfValue) and Hedge have. Adapters
// whose calls never drop a value use it to refuse such an option when they
// are built. It allocates nothing.
func (o Option) ReleasesValues() bool { return o.kind == discardOption }

// ReportsHedges reports whether o was made by OnHedgeDone, which only Hedge
// takes. Adapters use it to refuse such an option when they are built, or to
// leave it out of the calls they make with Retry or Do. It allocates nothing.
func (o Option) ReportsHedges() bool { return o.kind == hedgeDoneOption }

// BoundsPushback reports whether o was made by MaxPushback. Adapters whose
// calls never wait for a server's pushback (a race that does not honour
// Retry-After) use it to refuse such an option when they are built. It
// allocates nothing.
func (o Option) BoundsPushback() bool { return o.kind == pushbackOption }
