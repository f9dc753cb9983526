// Package scope gives the meters and tracers of retryotel and retryotelgrpc
// their instrumentation scope's version: the release of the retryotel
// module that the program was built with, as gRFC A66 asks of a gRPC
// plugin's meter.
package scope

import (
	"runtime/debug"
	"sync"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// modulePath is the module whose version names the scope.
const modulePath = "github.com/seed-b8c8f69d/retry/retryotel"

// Version returns the version of the retryotel module in the running
// program, such as "v0.2.0", or "" when it has none: a build inside the
// module's own repository ("(devel)"), or a binary without build
// information.
var Version = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return versionIn(info)
})

// versionIn returns the retryotel module's version in info, or "".
func versionIn(info *debug.BuildInfo) string {
	mods := append([]*debug.Module{&info.Main}, info.Deps...)
	for _, m := range mods {
		if m.Path != modulePath {
			continue
		}
		if m.Version == "(devel)" {
			return ""
		}
		return m.Version // the required version, also when replaced
	}
	return ""
}

// MeterOptions returns the options that set a meter's scope version: none
// when Version is "".
func MeterOptions() []metric.MeterOption {
	if v := Version(); v != "" {
		return []metric.MeterOption{metric.WithInstrumentationVersion(v)}
	}
	return nil
}

// TracerOptions is MeterOptions for a tracer.
func TracerOptions() []trace.TracerOption {
	if v := Version(); v != "" {
		return []trace.TracerOption{trace.WithInstrumentationVersion(v)}
	}
	return nil
}
