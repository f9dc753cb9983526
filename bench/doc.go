// Package bench compares the cost of retrying with
// github.com/seed-b8c8f69d/retry against the Go retry libraries people use
// and against a hand-written retry loop, the floor that no library can beat.
//
// It lives in its own module so that the libraries it compares never enter
// the retry module's dependency graph. All the code is in tests: the
// benchmarks (see README.md for the scenarios, the policy each library is
// given and the latest results, and run ./run to measure again), and the
// migration guide's examples and the tests of what it says about each
// library (migrate_*_test.go; see docs/MIGRATING.md).
package bench
