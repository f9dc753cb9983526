package retry

// IfValue returns an Option that makes Retry treat a value for which retry
// returns true as a failed attempt, to be retried like an error although fn
// returned a nil error: a job still "pending", a page not yet ready. It is
// asked only about the values of attempts whose error is nil. With several
// IfValue options, a value is retried if any of them returns true. Without
// IfValue, every value with a nil error is a success.
//
// A rejected value is retried on the schedule like an error, under every
// option that bounds retries (the context, MaxElapsed, WithBudget), but it
// has no error: If predicates and MaxRetriesIf are not asked about it, and
// OnRetry hooks see a nil Attempt.Err. When the call gives up after such an
// attempt, Retry returns that value along with an *Error whose Last is nil,
// which unwraps to the reason only: errors.Is(err, ErrExhausted) when the
// schedule ran out.
//
// retry runs on the goroutine that called Retry, after each attempt that
// returned a nil error.
//
// IfValue panics if retry is nil. Retry panics if T is not the type of its
// function's value, and Do and Hedge panic if given an IfValue.
func IfValue[T any](retry func(T) bool) Option {
	if retry == nil {
		panic("retry: IfValue: nil function")
	}
	return Option{kind: ifValueOption, ref: retry}
}

// JudgesValues reports whether o was made by IfValue: an option about the
// value fn returns, which only Retry has. Adapters that call a function
// without a value of its own (retryhttp, retrygrpc, retryconnect) use it to
// refuse such an option when they are built, rather than when their first
// call panics. It allocates nothing.
func (o Option) JudgesValues() bool { return o.kind == ifValueOption }

// rejects reports whether any of preds returns true for v.
func rejects[T any](preds []func(T) bool, v T) bool {
	for _, p := range preds {
		if p(v) {
			return true
		}
	}
	return false
}
