package scope

import (
	"runtime/debug"
	"testing"
)

func TestVersionIn(t *testing.T) {
	for _, tt := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"a dependency", debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "(devel)"},
			Deps: []*debug.Module{{Path: "example.com/other", Version: "v1.0.0"}, {Path: modulePath, Version: "v0.2.0"}}}, "v0.2.0"},
		{"replaced: the required version", debug.BuildInfo{Main: debug.Module{Path: "example.com/app"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v0.2.1", Replace: &debug.Module{Path: "../retryotel"}}}}, "v0.2.1"},
		{"the main module, in development", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}}, ""},
		{"the main module, installed", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v0.3.0"}}, "v0.3.0"},
		{"absent", debug.BuildInfo{Main: debug.Module{Path: "example.com/app"}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionIn(&tt.info); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestVersionHere checks what a test of this module sees: the module is
// the main one, in development, so the scope has no version.
func TestVersionHere(t *testing.T) {
	if got := Version(); got != "" {
		t.Errorf("Version() = %q in the module's own tests, want \"\"", got)
	}
	if got := MeterOptions(); got != nil {
		t.Errorf("MeterOptions() = %v, want none", got)
	}
}
