//go:build race

package retry_test

// raceDetector reports whether the tests run under the race detector: the
// Limiter's simulations on a FakeClock, single-goroutine and millions of
// events long, are skipped there (they take minutes and race nothing).
const raceDetector = true
