// Package optinfo tells the packages built on package retry what they need
// to know about a retry.Option that package retry does not export to its
// users.
package optinfo

// IfValue reports whether opt, a retry.Option passed as an any to avoid an
// import cycle, was made by retry.IfValue. Package retry sets it when it is
// initialized, so it is set before any package that imports retry runs.
var IfValue func(opt any) bool
