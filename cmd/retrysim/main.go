// Command retrysim shows what a retry or hedging policy does to a fleet of
// clients. It drives the real schedules, Retry, Budget, Throttle, Breaker
// and Latency of github.com/seed-b8c8f69d/retry through discrete-event
// simulations in simulated time, so nothing sleeps and every run is
// deterministic for a given -seed.
//
// Usage:
//
//	retrysim [command] [flags]
//
// The commands are:
//
//	herd     a fleet retrying into an outage: the thundering herd and its cure (the default)
//	occ      optimistic-concurrency contention, as in AWS's "Exponential Backoff And Jitter"
//	plan     the delays, attempts and total wait of a schedule written in retry.Parse's syntax
//	amplify  calls reaching the bottom of a chain of services that each retry
//	hedge    hedging a fan-out against slow servers, as in "The Tail at Scale"
//	overload a fleet calling a dependency whose capacity drops: budget, throttle and breaker
//	metastable a retry storm that keeps a queueing server down after its trigger is gone
//	limiter  an adaptive concurrency limiter against a queueing server, beside static limits
//
// Every command takes -json to print one JSON document on stdout and nothing
// else there. Run "retrysim COMMAND -h" for a command's flags. Bad flags and
// bad schedule text print one line on stderr and exit with status 2.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"
)

func main() {
	tty := term.IsTerminal(int(os.Stderr.Fd()))
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, tty))
}

// command is one subcommand: run parses args and writes its report.
type command struct {
	name    string
	summary string
	run     func(args []string, o *output) error
}

var commands = []command{
	{"herd", "a fleet retrying into an outage: the thundering herd and its cure (the default)", runHerdCmd},
	{"occ", `optimistic-concurrency contention, as in AWS's "Exponential Backoff And Jitter"`, runOccCmd},
	{"plan", "the delays, attempts and total wait of a schedule in retry.Parse's syntax", runPlanCmd},
	{"amplify", "calls reaching the bottom of a chain of services that each retry", runAmplifyCmd},
	{"hedge", "hedging a fan-out against slow servers, as in \"The Tail at Scale\"", runHedgeCmd},
	{"overload", "a fleet calling a dependency whose capacity drops: budget, throttle and breaker", runOverloadCmd},
	{"metastable", "a retry storm that keeps a queueing server down after its trigger is gone", runMetastableCmd},
	{"limiter", "an adaptive concurrency limiter against a queueing server, beside static limits", runLimiterCmd},
}

// output is where a command writes: its report on stdout, progress and
// notices on stderr. tty reports whether stderr is a terminal, the only case
// in which a progress bar is drawn.
type output struct {
	stdout, stderr io.Writer
	tty            bool
}

// usageError is a mistake in the command line or in a schedule: it is
// reported on one line with exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// errHelp reports that the usage was printed on request.
var errHelp = errors.New("help requested")

// run runs the command line args and returns the exit status: 0 on success,
// 1 when the command failed, 2 for a bad command line.
func run(args []string, stdout, stderr io.Writer, tty bool) int {
	name := "herd"
	switch {
	case len(args) > 0 && isHelpFlag(args[0]):
		// "retrysim -h" asks about retrysim, not about its default command.
		printUsage(stdout)
		return 0
	case len(args) > 0 && !strings.HasPrefix(args[0], "-"):
		name, args = args[0], args[1:]
	}
	if name == "help" {
		printUsage(stdout)
		return 0
	}
	for _, c := range commands {
		if c.name != name {
			continue
		}
		err := c.run(args, &output{stdout: stdout, stderr: stderr, tty: tty})
		var ue *usageError
		switch {
		case err == nil, errors.Is(err, errHelp):
			return 0
		case errors.As(err, &ue):
			fmt.Fprintf(stderr, "retrysim %s: %s (run \"retrysim %s -h\" for usage)\n", name, oneLine(ue.msg), name)
			return 2
		default:
			fmt.Fprintf(stderr, "retrysim %s: %s\n", name, oneLine(err.Error()))
			return 1
		}
	}
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	fmt.Fprintf(stderr, "retrysim: unknown command %q (want one of %s; run \"retrysim -h\")\n", name, strings.Join(names, ", "))
	return 2
}

// isHelpFlag reports whether arg asks for help the way package flag
// understands it.
func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "--h", "-help", "--help":
		return true
	}
	return false
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: retrysim [command] [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Without a command, retrysim runs herd. Run "retrysim COMMAND -h" for the flags`)
	fmt.Fprintln(w, "of a command. Every command takes -json.")
}

// minBudgetRatio is the smallest ratio other than 0 that retry.NewBudget
// accepts; it panics on the ones in between.
const minBudgetRatio = 1e-6

// checkBudgetRatio checks a -budget-ratio before it reaches retry.NewBudget,
// which panics on a ratio it cannot represent.
func checkBudgetRatio(r float64) error {
	switch {
	case !finite(r):
		return usagef("-budget-ratio %v is not a finite number", r)
	case r < 0:
		return usagef("-budget-ratio %v is negative", r)
	case r > 0 && r < minBudgetRatio:
		return usagef("-budget-ratio %v is below %v, the smallest a retry.Budget supports other than 0", r, minBudgetRatio)
	}
	return nil
}

// finite reports whether x is neither NaN nor infinite.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// oneLine keeps an error message on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// newFlagSet returns a flag set that reports errors instead of printing them,
// so that run can print exactly one line.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseFlags parses args into fs. On -h it prints usage (the summary line and
// the flags) on o.stdout and returns errHelp; a bad flag, a bad flag value or
// a stray argument is a usageError. Every bad value is reported in one style,
// the flag and the value as given and then what is wrong with it:
//
//	-clients "abc" is not an integer
//	-clients "10,x": "x" is not an integer
func parseFlags(fs *flag.FlagSet, args []string, o *output, summary string) error {
	// Package flag words a bad number as "parse error": wrap every value for
	// the parse to say more, then put the originals back, whose types -h
	// reads to name each flag's kind.
	var bad error
	originals := map[string]flag.Value{}
	fs.VisitAll(func(f *flag.Flag) {
		originals[f.Name] = f.Value
		f.Value = &checkedValue{Value: f.Value, name: f.Name, bad: &bad}
	})
	err := fs.Parse(args)
	fs.VisitAll(func(f *flag.Flag) { f.Value = originals[f.Name] })
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(o.stdout, "Usage: retrysim %s [flags]\n\n%s\n\nFlags:\n", fs.Name(), summary)
		fs.SetOutput(o.stdout)
		fs.PrintDefaults()
		return errHelp
	case bad != nil:
		return bad
	case err != nil:
		// The two other mistakes package flag reports, in the same style.
		// Its wording has not changed since Go 1; an unknown wording is
		// passed on as it is.
		msg := err.Error()
		if f, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
			msg = fmt.Sprintf("%s is not a flag of retrysim %s", f, fs.Name())
		} else if f, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
			msg = f + " needs a value"
		}
		return &usageError{msg}
	case fs.NArg() > 0:
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// checkedValue wraps a flag's value during parsing and records, in bad, the
// first value it refuses, worded by badValue.
type checkedValue struct {
	flag.Value
	name string
	bad  *error
}

// IsBoolFlag lets a wrapped bool flag be given without a value, as -json.
func (v *checkedValue) IsBoolFlag() bool {
	b, ok := v.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func (v *checkedValue) Set(s string) error {
	err := v.Value.Set(s)
	if err != nil && *v.bad == nil {
		*v.bad = badValue(v.name, s, v.Value, err)
	}
	return err
}

// badValue words the error err of setting flag name to s. The standard
// kinds are named by the type of their value; retrysim's own values (lists)
// say what is wrong themselves.
func badValue(name, s string, v flag.Value, err error) error {
	var what string
	var get any
	if g, ok := v.(flag.Getter); ok {
		get = g.Get()
	}
	switch get.(type) {
	case bool:
		what = "is not true or false"
	case int:
		what = "is not an integer"
		if _, err := strconv.ParseInt(s, 0, strconv.IntSize); errors.Is(err, strconv.ErrRange) {
			what = "is out of range"
		}
	case uint64:
		what = "is not an integer of 0 or more"
		if _, err := strconv.ParseUint(s, 0, 64); errors.Is(err, strconv.ErrRange) {
			what = "is out of range"
		}
	case float64:
		what = "is not a number"
		if _, err := strconv.ParseFloat(s, 64); errors.Is(err, strconv.ErrRange) {
			what = "is out of range"
		}
	case time.Duration:
		what = "is not a duration such as 100ms, 2s or 1m30s"
	default:
		return usagef("-%s %q: %v", name, s, err)
	}
	return usagef("-%s %q %s", name, s, what)
}
