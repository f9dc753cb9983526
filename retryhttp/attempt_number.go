package retryhttp

import "context"

// attemptKey is the context key of the number of the attempt a request
// belongs to, set by a Transport on the requests it sends.
type attemptKey struct{}

// AttemptNumber returns the 1-based number of the attempt whose request
// carries ctx: a Transport sends its first attempt of a request as number 1,
// its first retry as 2, and so on. A base RoundTripper (or middleware around
// it) reads it from req.Context(), for instance to record OpenTelemetry's
// http.request.resend_count, which is AttemptNumber(ctx)-1 and is recorded
// only when it is above 0.
//
// A context that carries no number gives 1, since every request is at least
// its own first attempt: that of a request that never went through a
// Transport, and that of a first attempt, which a Transport sends under the
// caller's own context to allocate nothing (unless that context carries the
// number of another Transport's attempt, which the first attempt then
// replaces with 1).
func AttemptNumber(ctx context.Context) int {
	if n, ok := ctx.Value(attemptKey{}).(int); ok {
		return n
	}
	return 1
}
