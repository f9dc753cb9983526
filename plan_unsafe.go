//go:build gc && !purego

// This file is built only with the gc toolchain, and not with -tags purego;
// plan_purego.go takes every other case (!gc || purego): gccgo, TinyGo and
// the purego build have no fusion. The layout it reads below is gc's. On
// another toolchain a func value may not point to a closure at all
// (TinyGo's is two words) or to one laid out otherwise, and reading it as a
// planClosure, even in the start-up check, could read past the end of the
// object: that check cannot be trusted to fail safely there, so the file
// is not compiled.
//
// CI (.ci/run) runs the root module's tests with
// go test -race -gcflags=-d=checkptr ./..., so that the runtime checks the
// unsafe.Pointer conversions made here on every path the tests exercise:
// closureOf converts the closure's own address, so checkptr verifies that
// the object it points to holds a whole planClosure. (-race alone implies
// -d=checkptr today; the flag keeps it on whatever that default becomes.)

package retry

import (
	"reflect"
	"unsafe"
)

// planOf needs the plan a built-in Schedule was made from, and a func value
// has no identity in Go: it can only be called (reflect's Pointer gives the
// code pointer, shared by every closure of one function literal). The ways
// to get the plan without unsafe all cost the retrying call a global
// synchronization: calling the Schedule with a probe while holding a
// package-wide lock, so that it can leave its plan in a shared variable, or
// looking its plan up in a registry keyed by an id it yields, with weak
// pointers so that plans can be collected. Both put a contended lock or map
// on the path of every call that retries, which the targets of issue 10 do
// not leave room for, so this file reads the closure instead.
//
// What it relies on, and checks: with the gc toolchain a func value points to
// a closure object whose first word is the function's code pointer and whose
// next words are the variables it captured; a method value p.iterate is such
// a closure, whose code is the compiler's one wrapper for (*plan).iterate and
// whose one captured word is the receiver p. planOf compares the first word
// with that wrapper's code pointer and reads the second only if they match,
// so the word it reads is always the *plan of a method value p.iterate. The
// check at start-up verifies that layout on two method values, against
// reflect's code pointer; if it ever differs, fusion is off and every chain
// is built with relays, exactly as the purego build does (plan_purego.go).

// planClosure is the layout of a method value p.iterate.
type planClosure struct {
	code uintptr
	p    *plan
}

// planCode is the code pointer of the method values p.iterate, or 0 if the
// layout check failed.
var planCode = checkPlanLayout()

// closureOf returns the closure object that s points to, as a planClosure.
// It converts the closure's own address (a func value is a pointer to its
// closure), so that under -d=checkptr, which -race implies, the runtime
// checks that the object holds the two words of a planClosure: a heap
// closure always does with gc, a captured variable taking at least one
// word; a static closure, which captures nothing, lies outside the heap
// and is not checked, and planOf reads only its first word.
func closureOf(s Schedule) *planClosure {
	obj := *(*unsafe.Pointer)(unsafe.Pointer(&s))
	return (*planClosure)(obj)
}

// checkPlanLayout returns the code pointer of the method values p.iterate
// after checking that they are laid out as planClosure says, and 0 if they
// are not.
func checkPlanLayout() uintptr {
	p1, p2 := &plan{}, &plan{}
	s1, s2 := planSchedule(p1), planSchedule(p2)
	code := uintptr(reflect.ValueOf(s1).Pointer())
	c1, c2 := closureOf(s1), closureOf(s2)
	if code == 0 || c1 == c2 || c1.code != code || c2.code != code || c1.p != p1 || c2.p != p2 {
		return 0
	}
	return code
}

// planOf returns the plan that s was made from, or nil if s is not a plan's
// Schedule (or fusion is off).
func planOf(s Schedule) *plan {
	if s == nil || planCode == 0 {
		return nil
	}
	if c := closureOf(s); c.code == planCode {
		return c.p
	}
	return nil
}
