// Package budgetinfo lets the adapters built on package retry (retryaws)
// drive a retry.Budget from a retry loop that is not retry.Retry's: the AWS
// SDK's retry middleware asks for a token per retry and tells the start of
// each call, and the adapter turns that into the Budget's own deposits and
// withdrawals, with the Budget's rules unchanged.
package budgetinfo

// Credit deposits one call's share into b, a *retry.Budget passed as an any
// to avoid an import cycle, as retry.Retry does when a call starts.
// Withdraw takes one token for a retry and reports false, taking nothing,
// when less than one token is left. Package retry sets both when it is
// initialized, so they are set before any package that imports retry runs.
var (
	Credit   func(b any)
	Withdraw func(b any) bool
)
