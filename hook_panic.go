package retry

import "time"

// An OnRetry hook runs after the retry it announces has been paid for (a
// Budget token withdrawn, a Throttle or Breaker pass taken) and before it is
// made. A hook that panics (or calls runtime.Goexit) stops the call there:
// the retry is never made, so what it took goes back, as when the call's
// context ends at the same point. The general loop's pass is given back by
// its own deferred abort; the token, and a hedge's pass, here.

// refundUnless gives back the token of the call's Budget among opts, if
// any, unless *returned: deferred by runner.notify.
func refundUnless(returned *bool, opts []Option) {
	if *returned {
		return
	}
	var budget *Budget
	for i := range opts {
		if opts[i].kind == budgetOption {
			budget = opts[i].ref.(*Budget) // the last one counts, as in the loops
		}
	}
	if budget != nil {
		budget.refund()
	}
}

// notify runs the OnRetry hooks (and logs, for WithLogger) before the hedge that trigger (nil: the
// delay d) starts, on Hedge's goroutine. If one panics, the hedge's pass p
// and Budget token are given back before the panic goes on.
func (h *hedge[T]) notify(trigger error, d time.Duration, p *pass) {
	returned := false
	defer func() {
		if !returned {
			h.gate.abort(p)
			if h.cfg.budget != nil {
				h.cfg.budget.refund()
			}
		}
	}()
	a := Attempt{Number: h.started, Err: trigger, Delay: d, Elapsed: h.cfg.now().Sub(h.x.start)}
	for _, o := range h.x.opts {
		if o.kind == onRetryOption {
			o.ref.(func(Attempt))(a)
		} else if f := logOf(o); f != nil {
			f(logEvent{kind: logHedgeEvent, attempt: a})
		}
	}
	returned = true
}
