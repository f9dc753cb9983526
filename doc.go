// Package retry retries flaky calls the right way: composable backoff
// schedules, a generic Retry that honours deadlines, and a fake clock to test
// it all in zero real time.
package retry
