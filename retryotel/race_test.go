//go:build race

package retryotel_test

const raceEnabled = true
