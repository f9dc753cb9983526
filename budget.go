package retry

import (
	"math"
	"strconv"
	"sync/atomic"
)

// tokenScale is the number of balance units per token: the balance is kept in
// billionths of a token so that it fits one atomic integer.
const tokenScale = 1_000_000_000

// maxReserve bounds the reserve so that balance arithmetic cannot overflow.
const maxReserve = math.MaxInt64 / 2 / tokenScale

// minRatio is the smallest positive ratio NewBudget accepts: its deposit is
// 1000 balance units, so rounding a ratio to whole units changes it by at
// most 0.05%. Below it the rounding would grow without bound (4e-10 would
// round to nothing, 1.5e-9 to 133% of itself).
const minRatio = 1e-6

// A Budget caps the retries sent to one dependency, so that retries cannot
// multiply the load on a service that is already failing (a retry storm).
// Share one Budget among all the calls to that dependency with WithBudget.
//
// It is a token bucket filled by requests: every Retry or Do call that uses it
// deposits ratio tokens when it starts, and every retry (not the first
// attempt) withdraws one token. The balance starts at reserve and never
// exceeds it. A retry that finds less than one token is not made: Retry
// returns at once with an *Error that matches both ErrBudgetExhausted and the
// last error. So, whatever the failure rate, the calls that reach the
// dependency are at most requests·(1+ratio) + reserve, while a healthy
// service whose transient failures stay below ratio never has a retry
// refused.
//
// The SRE rule of thumb "retries at most 10% of requests" is NewBudget(0.1,
// 10): during a total outage the dependency sees at most 10% more calls than
// there are requests (plus a burst of 10), instead of the 3× or 5× that
// attempt-count limits alone allow. A reserve of 0 never allows a retry.
// Tokens reads the balance for metrics, and String (so %v) shows it with the
// reserve and the ratio. How a Budget compares with gRPC's and the AWS SDKs'
// token buckets is in docs/OPTIONS.md ("Retry budgets").
//
// A Budget is safe for concurrent use by any number of goroutines and Retry
// calls; it is lock-free and allocates nothing per call.
type Budget struct {
	balance atomic.Int64 // in 1/tokenScale tokens
	deposit int64        // ratio, in the same units
	limit   int64        // reserve, in the same units
	ratio   float64      // as given to NewBudget, for String
}

// NewBudget returns a Budget that allows ratio retries per call over time, on
// top of a reserve of reserve tokens for bursts; its balance starts full.
//
// The ratio is kept to within 0.05% (in billionths of a token), so the
// smallest ratio other than 0 is 1e-6, one retry per million calls; a ratio
// of 0 never refills the reserve. A ratio of +Inf refills the reserve on every
// call, so it only bounds bursts. Reserves above about 4.6 billion tokens are
// treated as that many.
//
// NewBudget panics if ratio is negative, NaN, or above 0 but below 1e-6, or if
// reserve is negative.
func NewBudget(ratio float64, reserve int) *Budget {
	if !(ratio >= 0) {
		panic("retry: NewBudget: ratio " + strconv.FormatFloat(ratio, 'g', -1, 64) + " is negative or NaN")
	}
	if ratio > 0 && ratio < minRatio {
		panic("retry: NewBudget: ratio " + strconv.FormatFloat(ratio, 'g', -1, 64) +
			" is below " + strconv.FormatFloat(minRatio, 'g', -1, 64) + ", the smallest supported other than 0")
	}
	if reserve < 0 {
		panic("retry: NewBudget: negative reserve " + strconv.Itoa(reserve))
	}
	limit := min(int64(reserve), maxReserve) * tokenScale
	b := &Budget{limit: limit, ratio: ratio}
	if dep := ratio * tokenScale; dep >= float64(limit) {
		b.deposit = limit
	} else {
		b.deposit = int64(math.Round(dep))
	}
	b.balance.Store(limit)
	return b
}

// WithBudget returns an Option that makes every retry of the call withdraw a
// token from b, and the call itself deposit into it (see Budget). A later
// WithBudget replaces an earlier one.
//
// WithBudget panics if b is nil.
func WithBudget(b *Budget) Option {
	if b == nil {
		panic("retry: WithBudget: nil Budget")
	}
	return Option{kind: budgetOption, ref: b}
}

// Tokens returns b's balance in tokens: a number between 0 and the reserve,
// whose whole part is the number of retries b would allow now if no call
// deposited in between. It is exact to a billionth of a token. It reads one
// atomic value and allocates nothing, so a metrics gauge may call it as often
// as it likes; with calls in flight the balance may change as soon as it is
// read.
func (b *Budget) Tokens() float64 {
	return float64(b.balance.Load()) / tokenScale
}

// String returns b's state for logs and debugging, in a form that stays
// stable: "retry.Budget{tokens: 7.5/10, ratio: 0.1}" for a balance of 7.5
// tokens out of a reserve of 10, and a ratio as given to NewBudget. A nil b
// gives "<nil>".
func (b *Budget) String() string {
	if b == nil {
		return "<nil>"
	}
	return "retry.Budget{tokens: " + strconv.FormatFloat(b.Tokens(), 'g', -1, 64) + "/" +
		strconv.FormatInt(b.limit/tokenScale, 10) + ", ratio: " + strconv.FormatFloat(b.ratio, 'g', -1, 64) + "}"
}

// credit deposits one call's share into the balance, up to the limit. In the
// healthy steady state the balance is full and this is a single load.
func (b *Budget) credit() {
	for {
		old := b.balance.Load()
		if old >= b.limit {
			return
		}
		if b.balance.CompareAndSwap(old, min(old+b.deposit, b.limit)) {
			return
		}
	}
}

// withdraw takes one token for a retry, and reports false, taking nothing,
// when less than one token is left.
func (b *Budget) withdraw() bool {
	for {
		old := b.balance.Load()
		if old < tokenScale {
			return false
		}
		if b.balance.CompareAndSwap(old, old-tokenScale) {
			return true
		}
	}
}

// refund gives back the token withdrawn for a retry that was not made (the
// call ended during its wait), up to the limit.
func (b *Budget) refund() {
	for {
		old := b.balance.Load()
		if b.balance.CompareAndSwap(old, min(old+tokenScale, b.limit)) {
			return
		}
	}
}
