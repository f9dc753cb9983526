// Package k8s holds the migration guide's examples for
// k8s.io/apimachinery's wait.Backoff, and the tests of what the guide says
// about it (see docs/MIGRATING.md).
//
// It is a module of its own, apart from the comparison benchmarks in the
// parent directory, because k8s.io/apimachinery v0.37 requires Go 1.26 and
// brings klog, logr and k8s.io/utils with it: the benchmarks' module stays
// at Go 1.25 and keeps its dependencies to the libraries it compares.
package k8s
