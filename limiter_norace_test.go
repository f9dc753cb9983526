//go:build !race

package retry_test

const raceDetector = false
