package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// A strategy names a family of retry schedules that herd and occ compare.
// Every one is built with the retry package's own constructors, so the
// simulations exercise exactly the code a caller would run.
type strategy string

const (
	none         strategy = "none"         // retry at once: Constant(0)
	constant     strategy = "constant"     // Constant(base)
	exponential  strategy = "exponential"  // Exponential(base).Cap(cap), no jitter
	full         strategy = "full"         // Exponential(base).Cap(cap).FullJitter(src)
	equal        strategy = "equal"        // Exponential(base).Cap(cap).EqualJitter(src)
	decorrelated strategy = "decorrelated" // DecorrelatedJitter(base, cap, src)
	smooth       strategy = "smooth"       // SmoothJitter(base, src).Cap(cap)
	fullBudget   strategy = "full+budget"  // full, with a retry.Budget shared by all clients
	proportional strategy = "proportional" // Exponential(base).Cap(cap).Jitter(0.2, src): gRPC's ±20%
)

// strategyDocs describes each strategy for -h, in the words of its flags.
var strategyDocs = map[strategy]string{
	none:         "Constant(0)",
	constant:     "Constant(-constant)",
	exponential:  "Exponential(-base).Cap(-cap)",
	full:         "Exponential(-base).Cap(-cap).FullJitter",
	equal:        "Exponential(-base).Cap(-cap).EqualJitter",
	decorrelated: "DecorrelatedJitter(-base, -cap)",
	smooth:       "SmoothJitter(-base).Cap(-cap)",
	fullBudget:   "full, with one NewBudget(-budget-ratio, -budget-reserve) shared by all",
	proportional: "Exponential(-base).Cap(-cap).Jitter(0.2), gRPC's ±20%",
}

// strategyTable describes the default strategies sts, then the extra ones,
// one per line, for a command's -h.
func strategyTable(sts []strategy) string {
	var b strings.Builder
	for _, st := range sts {
		fmt.Fprintf(&b, "  %-13s %s\n", st, strategyDocs[st])
	}
	for _, st := range extraStrategies {
		fmt.Fprintf(&b, "  %-13s %s;\n  %-13s only when -strategies names it\n", st, strategyDocs[st], "")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// extraStrategies can be asked for with -strategies but are not in the
// default comparisons, whose JSON shape is fixed.
var extraStrategies = []strategy{proportional}

// schedule returns the infinite schedule of st with the given base delay and
// cap, drawing its jitter from src. Cap comes before the jitter everywhere,
// so jittered delays are spread below the cap instead of piling up at it;
// SmoothJitter is the exception because its recurrence has no cap of its
// own, so the cap bounds its rare long delays afterwards. constant ignores
// limit; none ignores both.
func (st strategy) schedule(base, limit time.Duration, src rand.Source) retry.Schedule {
	switch st {
	case none:
		return retry.Constant(0)
	case constant:
		return retry.Constant(base)
	case exponential:
		return retry.Exponential(base).Cap(limit)
	case full, fullBudget:
		return retry.Exponential(base).Cap(limit).FullJitter(src)
	case equal:
		return retry.Exponential(base).Cap(limit).EqualJitter(src)
	case decorrelated:
		return retry.DecorrelatedJitter(base, limit, src)
	case smooth:
		return retry.SmoothJitter(base, src).Cap(limit)
	case proportional:
		return retry.Exponential(base).Cap(limit).Jitter(0.2, src)
	}
	panic("retrysim: unknown strategy " + string(st))
}

// allStrategies fixes the number of each strategy, which selects its random
// sequence: a strategy draws the same numbers whichever others it is
// compared with. New strategies go at the end, so that the others keep
// their numbers and their results.
var allStrategies = []strategy{none, constant, exponential, full, equal, decorrelated, smooth, proportional}

// id returns the number of st in allStrategies. full+budget shares full's,
// so that the two differ only by the Budget.
func (st strategy) id() uint64 {
	if st == fullBudget {
		st = full
	}
	return uint64(slices.Index(allStrategies, st))
}

// pcg returns a seeded source for the stream-th independent random sequence
// of a run with the given seed.
func pcg(seed, stream uint64) *rand.PCG {
	return rand.NewPCG(seed, stream)
}
