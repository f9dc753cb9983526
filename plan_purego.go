//go:build !gc || purego

package retry

// This file is the twin of plan_unsafe.go for every build that file is not
// in: -tags purego, and any toolchain other than gc (gccgo, TinyGo), whose
// closure layout plan_unsafe.go does not know.

// planOf never recognises a plan in the purego build: no chain is fused, and
// every combinator relays (see plan_unsafe.go for why recognising one needs
// unsafe). Built-in Schedules are still plans, ranged by their own iterator.
func planOf(Schedule) *plan { return nil }

// planCode is 0 in the purego build: fusion is off.
const planCode uintptr = 0
