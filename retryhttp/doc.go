// Package retryhttp is an http.RoundTripper that retries failed HTTP requests
// safely, on top of package retry.
//
// A Transport retries only what can be sent twice without harm: requests
// with an idempotent method (GET, HEAD, OPTIONS, TRACE, PUT, DELETE) or an
// Idempotency-Key header, and only when their body can be rewound. It retries
// the transport errors that retry.IsTransient accepts and the statuses 408,
// 429, 500, 502, 503 and 504, honours Retry-After on 429 and 503 through the
// core's pushback rules (bounded by retry.MaxPushback, never past the
// context's deadline), drains and closes the response of every failed
// attempt so that keep-alive connections are reused, and hands the caller
// the last response exactly as a client without retries would have seen it.
//
// The simplest use is a client:
//
//	client := retryhttp.NewClient(nil) // the default schedule: 4 retries with jittered backoff
//	resp, err := client.Get(url)
//
// Every retry.Option but IfValue works: WithClock, If, OnRetry, OnDone,
// WithBudget, MaxPushback, MaxElapsed, MaxRetriesIf, Observe and
// AttemptTimeout (ShouldRetry, not IfValue, judges responses). Under a Transport, AttemptTimeout bounds each attempt
// up to the arrival of the response headers; the body of the response
// returned to the caller lives under the caller's context alone.
//
// A Transport's fields hook into each request: ShouldRetry decides what to
// retry from the whole response (PeekBody lets it read the start of the body
// and leave it whole for the caller), PrepareRetry changes each retry's
// headers, OnAttempt sees every attempt, and BufferBody makes bodies without
// GetBody retryable. A base RoundTripper reads the number of the attempt it
// sends with AttemptNumber.
package retryhttp
