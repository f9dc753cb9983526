// Package retryhttp is an http.RoundTripper that retries failed HTTP requests
// safely, on top of package retry.
//
// A Transport retries only what can be sent twice without harm: requests
// with an idempotent method (GET, HEAD, OPTIONS, TRACE, PUT, DELETE) or an
// Idempotency-Key header, and only when their body can be rewound. It retries
// the transport errors that retry.IsTransient accepts and the statuses 408,
// 429, 500, 502, 503 and 504, honours the rate-limit headers of a 429 or 503
// (Retry-After, retry-after-ms, the IETF RateLimit fields and
// X-RateLimit-Reset) through the core's pushback rules: a wait longer than
// retry.MaxPushback, or past the context's deadline, ends the retries at
// once with retry.ErrPushbackTooLong as the reason. It drains and closes
// the response of every failed attempt so that keep-alive connections are
// reused, and hands the caller the last response exactly as a client
// without retries would have seen it.
//
// The simplest use is a client:
//
//	client := retryhttp.NewClient(nil) // the default schedule: 4 retries with jittered backoff
//	resp, err := client.Get(url)
//
// NewTransport and NewClient take the retry.Options that the retry
// package's table "Options and entry points" lists for them, and panic on
// IfValue (ShouldRetry, not IfValue, judges responses), OnDiscard and
// OnHedgeDone. Under a Transport, AttemptTimeout bounds each attempt up to
// the arrival of the response headers; the body of the response returned to
// the caller lives under the caller's context alone.
//
// A Transport's fields hook into each request: ShouldRetry decides what to
// retry from the whole response (PeekBody lets it read the start of the body
// and leave it whole for the caller), PrepareRetry changes each retry's
// headers, OnAttempt sees every attempt, and BufferBody makes bodies without
// GetBody retryable. A base RoundTripper reads the number of the attempt it
// sends with AttemptNumber.
//
// The server's half: NewHandler admits a handler's requests through a
// retryserver.Shedder, which sheds retries (PreviousAttemptsHeader, which a
// Transport sends) first and answers a refusal with the Retry-After that a
// Transport honours (docs/SERVER.md).
//
// NewHedgingTransport makes a Transport that hedges instead of retrying,
// with retry.Hedge: under the same rule of what may be sent twice, it sends
// a request again each time a delay passes without an answer, returns the
// first success, and cancels the other copies and closes their responses.
// Stack a retrying Transport on it to retry the races that failed:
//
//	lat := retry.NewLatency()
//	hedging := retryhttp.NewHedgingTransport(nil,
//		lat.Quantile(0.95).AtLeast(5*time.Millisecond).Cap(time.Second).Take(1),
//		retry.WithLatency(lat), retry.WithBudget(retry.NewBudget(0.05, 10)))
//	client := &http.Client{Transport: retryhttp.NewTransport(hedging, nil)}
package retryhttp
