package retryhttp

import "net/http"

// RaceEnabled reports whether the race detector is on, for the external
// test package (retryhttp_test).
const RaceEnabled = raceEnabled

// TransportWithBase returns the zero Transport but for its base.
func TransportWithBase(base http.RoundTripper) *Transport { return &Transport{base: base} }
