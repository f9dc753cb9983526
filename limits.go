package retry

// The limits of a call that Retry's general loop and Hedge share:
// MaxRetriesIf's counts, and MaxElapsed's limit on Hedge.

import "time"

// limitsOf returns the MaxRetriesIf options of opts with counts of zero,
// for one call; nil if there are none.
func limitsOf(opts []Option) []limit {
	var limits []limit
	for _, o := range opts {
		if o.kind == maxRetriesIfOption {
			limits = append(limits, limit{match: o.ref.(func(error) bool), retries: o.n})
		}
	}
	return limits
}

// countLimits counts err against limits and reports whether one of them has
// no retry left for it.
func countLimits(limits []limit, err error) bool {
	for i := range limits {
		lim := &limits[i]
		if lim.match(err) {
			if lim.seen++; lim.seen > lim.retries {
				return true
			}
		}
	}
	return false
}

// beyond reports whether a wait of d that starts now would end past the
// MaxElapsed limit of the Hedge call h, as it would for Retry (see
// loop.wait): no attempt may start after that.
func (h *hedge[T]) beyond(d time.Duration) bool {
	return h.cfg.maxElapsed > 0 && d > h.cfg.maxElapsed-max(h.cfg.now().Sub(h.x.start), 0)
}
