package retry

import "testing"

// TestFoldNothing: folding no options gives defaultConfig, the config that
// the calls without options use, so the two statements of the defaults
// (fold's and defaultConfig's) cannot drift apart.
func TestFoldNothing(t *testing.T) {
	var c config
	c.fold(nil)
	if c != defaultConfig {
		t.Errorf("fold(nil) = %+v, want defaultConfig, %+v", c, defaultConfig)
	}
}
