package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/seed-b8c8f69d/retry"
	"golang.org/x/exp/stats"
)

const planSummary = `Describes a schedule written in retry.Parse's syntax, such as
  exponential(100ms).cap(2s).fulljitter.take(5)
by ranging over the parsed schedule -samples times: the number of attempts, each
retry's delay (min, p50, p99 and max over the samples), the total wait (median,
p99 and worst sample), and warnings in plain words. At most the first 30 delays
are listed. Jitter draws from a PCG seeded with -seed, so a plan is the same on
every run.`

const (
	planShown   = 30    // delays listed at most
	planForever = 10000 // a schedule with this many delays never gives up
	planWork    = 2e7   // delays drawn at most, over all samples
)

// planResult is the JSON document of `plan -json`. Attempts is nil when the
// schedule never ends; its total is then the wait before the last listed
// delay's retry.
type planResult struct {
	Attempts *int         `json:"attempts"`
	Delays   []delayStats `json:"delays"`
	Total    totalStats   `json:"total"`
	Warnings []string     `json:"warnings"`

	spec        string
	samples     int
	minRetries  int  // fewest delays in a sample (jitter with within varies)
	retries     int  // most delays in a sample, or planForever
	infinite    bool // the probe reached planForever delays
	constantRun bool // every sample had the same delays
}

// delayStats describes one retry's delay over the samples, in milliseconds.
type delayStats struct {
	Min float64 `json:"min_ms"`
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

// totalStats describes the total wait over the samples, in milliseconds.
type totalStats struct {
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

// parseSchedule parses spec with its jitter drawn from a PCG seeded with
// seed, so that a plan is reproducible.
func parseSchedule(spec string, seed uint64) (retry.Schedule, error) {
	return retry.ParseWithSource(spec, rand.NewPCG(seed, seed))
}

func runPlanCmd(args []string, o *output) error {
	fs := newFlagSet("plan")
	spec := fs.String("schedule", "exponential(100ms).cap(2s).fulljitter.take(5)", "the schedule, in retry.Parse's syntax")
	samples := fs.Int("samples", 10000, "times to range over the schedule, in [1, 1000000]")
	seed := fs.Uint64("seed", 1, "seed of the random draws of the schedule's jitter")
	asJSON := fs.Bool("json", false, "print the plan as JSON on stdout, and nothing else there")
	if err := parseFlags(fs, args, o, planSummary); err != nil {
		return err
	}
	if *samples < 1 || *samples > 1000000 {
		return usagef("-samples %d is outside [1, 1000000]", *samples)
	}
	s, err := parseSchedule(*spec, *seed)
	if err != nil {
		return &usageError{err.Error()}
	}
	p := plan(*spec, s, *samples)
	if *asJSON {
		return writeJSON(o.stdout, p)
	}
	printPlan(o.stdout, p)
	return nil
}

// plan ranges over s: once up to planForever delays to learn whether it ends,
// then samples times (fewer if the schedule is long) to collect statistics.
func plan(spec string, s retry.Schedule, samples int) *planResult {
	p := &planResult{spec: spec, Warnings: []string{}, Delays: []delayStats{}}
	probe := 0
	for range s {
		if probe++; probe == planForever {
			break
		}
	}
	p.infinite = probe == planForever
	if !p.infinite && probe > 0 {
		samples = max(1, min(samples, int(planWork)/probe))
	}
	p.samples = samples

	// Collect the first planShown delays of each sample, and the total.
	values := make([][]float64, 0, planShown) // [retry][sample], in ns
	totals := make([]float64, samples)
	p.minRetries = math.MaxInt
	for i := range samples {
		var total time.Duration
		n := 0
		for d := range s {
			if n < planShown {
				if n == len(values) {
					values = append(values, make([]float64, 0, samples))
				}
				values[n] = append(values[n], float64(d))
			}
			total = addSat(total, d)
			if n++; p.infinite && n == planShown {
				break
			}
		}
		totals[i] = float64(total)
		p.minRetries, p.retries = min(p.minRetries, n), max(p.retries, n)
	}
	if p.infinite {
		p.retries = planForever
	} else {
		p.Attempts = ptr(p.retries + 1)
	}

	p.constantRun = true
	for _, v := range values {
		q := stats.Quantiles(sorted(v), 0, 0.5, 0.99, 1)
		p.Delays = append(p.Delays, delayStats{Min: nsToMs(q[0]), P50: nsToMs(q[1]), P99: nsToMs(q[2]), Max: nsToMs(q[3])})
		if q[0] != q[3] {
			p.constantRun = false
		}
	}
	q := stats.Quantiles(sorted(totals), 0.5, 0.99, 1)
	p.Total = totalStats{P50: nsToMs(q[0]), P99: nsToMs(q[1]), Max: nsToMs(q[2])}
	p.Warnings = planWarnings(p, values)
	return p
}

// planWarnings looks at the samples for the usual mistakes. Every check is
// behavioural, made on the delays the schedule produced rather than on the
// text of the spec:
//   - no cap: the last listed delay (the 30th at most) is over a minute and
//     more than ten times the first, so the delays are still growing;
//   - no jitter: every sample produced exactly the same delays;
//   - never gives up: ranging once produced planForever delays;
//   - piled up: a quarter or more of the samples of one retry equal its
//     maximum although they vary, the mark of a jitter clamped by a later
//     cap. This one also reads the spec, and warns only if a jitter
//     combinator comes before a cap there: decorrelated(...) piles up at its
//     limit by design.
func planWarnings(p *planResult, values [][]float64) []string {
	w := []string{}
	noCap := false
	if k := len(p.Delays); k > 0 {
		last, first := fromMs(p.Delays[k-1].P50), fromMs(p.Delays[0].P50)
		if noCap = last > time.Minute && last > 10*first; noCap {
			w = append(w, fmt.Sprintf("no cap: the %s delay is %s; bound the delays with .cap(...) before any jitter",
				ordinal(k), human(last)))
		}
	}
	if p.constantRun && len(p.Delays) > 0 && p.samples > 1 {
		advice := "add .fulljitter after that cap"
		if !noCap {
			advice = jitterAdvice(p.spec)
		}
		w = append(w, "no jitter: every client gets the same delays, so clients that fail together retry together, "+
			"in lockstep; "+advice)
	}
	if p.infinite {
		w = append(w, fmt.Sprintf("no take or within: it never gives up (more than %d retries); "+
			"end it with .take(n) or .within(d), or make sure the caller's context has a deadline", planForever))
	}
	for i, v := range values {
		top, at := slices.Max(v), 0
		for _, x := range v {
			if x == top {
				at++
			}
		}
		if slices.Min(v) < top && at*4 >= len(v) && jitterBeforeCap.MatchString(p.spec) {
			w = append(w, fmt.Sprintf("delays pile up at %s: %s of the %s delays are exactly that; "+
				"a jitter placed before a cap is clamped there, so put .cap(...) before the jitter",
				human(time.Duration(top)), percent(float64(at)/float64(len(v))), ordinal(i+1)))
			break
		}
	}
	return w
}

func printPlan(w io.Writer, p *planResult) {
	fmt.Fprintf(w, "plan: %s\n", p.spec)
	switch {
	case p.infinite:
		fmt.Fprintf(w, "never gives up; the first %d delays over %d samples:\n", len(p.Delays), p.samples)
	case p.minRetries != p.retries:
		fmt.Fprintf(w, "%d to %d attempts: the first at once, then a retry after each delay (%d samples)\n",
			p.minRetries+1, p.retries+1, p.samples)
	case p.retries == 0:
		fmt.Fprintln(w, "1 attempt: no retries")
	default:
		fmt.Fprintf(w, "%d attempts: the first at once, then %d retries after these delays (%d samples)\n",
			p.retries+1, p.retries, p.samples)
	}
	if len(p.Delays) > 0 {
		fmt.Fprintln(w)
		if p.constantRun {
			fmt.Fprintf(w, "%5s %10s\n", "retry", "delay")
			for i, d := range p.Delays {
				fmt.Fprintf(w, "%5d %10s\n", i+1, human(fromMs(d.P50)))
			}
		} else {
			fmt.Fprintf(w, "%5s %10s %10s %10s %10s\n", "retry", "min", "p50", "p99", "max")
			for i, d := range p.Delays {
				fmt.Fprintf(w, "%5d %10s %10s %10s %10s\n", i+1,
					human(fromMs(d.Min)), human(fromMs(d.P50)), human(fromMs(d.P99)), human(fromMs(d.Max)))
			}
		}
		if !p.infinite && p.retries > len(p.Delays) {
			fmt.Fprintf(w, "  ... %d more\n", p.retries-len(p.Delays))
		}
	}
	what := "total wait"
	if p.infinite {
		what = fmt.Sprintf("wait over the first %d delays", len(p.Delays))
	}
	fmt.Fprintf(w, "\n%s: median %s, p99 %s, worst %s\n", what,
		human(fromMs(p.Total.P50)), human(fromMs(p.Total.P99)), human(fromMs(p.Total.Max)))
	if len(p.Warnings) > 0 {
		fmt.Fprintln(w, "\nwarnings:")
		for _, m := range p.Warnings {
			fmt.Fprintf(w, "  - %s\n", m)
		}
	}
}

// jitterAdvice tells how to add jitter to spec, a schedule without any, by
// showing spec with .fulljitter where it belongs: after the last cap, so that
// the jitter spreads the capped delays instead of being clamped by the cap;
// without a cap, before the trailing take and within, where it reads best
// (after them it would wait the same). Only the outermost chain is looked
// at: a then(...) is jittered as a whole.
func jitterAdvice(spec string) string {
	spec = strings.TrimSpace(spec)
	type segment struct {
		name     string // lower case, without arguments
		from, to int    // spec[from:to], without the dot before it
	}
	var segs []segment
	depth, from := 0, 0
	for i := 0; i <= len(spec); i++ {
		if i < len(spec) {
			switch spec[i] {
			case '(':
				depth++
				continue
			case ')':
				depth--
				continue
			case '.':
				if depth != 0 {
					continue
				}
			default:
				continue
			}
		}
		name, _, _ := strings.Cut(spec[from:i], "(")
		segs = append(segs, segment{strings.ToLower(strings.TrimSpace(name)), from, i})
		from = i + 1
	}
	at := len(segs) // insert before segs[at]
	for at > 1 && (segs[at-1].name == "take" || segs[at-1].name == "within") {
		at--
	}
	for i, sg := range segs {
		if sg.name == "cap" {
			at = i + 1
		}
	}
	pos := len(spec)
	if at < len(segs) {
		pos = segs[at].from - 1 // the dot before it
	}
	fixed := strings.TrimRightFunc(spec[:pos], unicode.IsSpace) + ".fulljitter" + spec[pos:]
	if _, err := retry.Parse(fixed); err != nil {
		return "add .fulljitter, after the cap if there is one"
	}
	if slices.ContainsFunc(segs, func(sg segment) bool { return sg.name == "cap" }) {
		return "add .fulljitter after the cap: " + fixed
	}
	return "add a jitter, such as " + fixed
}

// jitterBeforeCap matches a spec in which a jitter combinator comes before a
// cap.
var jitterBeforeCap = regexp.MustCompile(`(?i)\.\s*(full|equal)?jitter\b.*\.\s*cap\s*\(`)

// sorted sorts v in place and returns it; Quantiles then needs no copy.
func sorted(v []float64) []float64 {
	slices.Sort(v)
	return v
}

// nsToMs converts nanoseconds to milliseconds, rounded to the nanosecond.
func nsToMs(ns float64) float64 {
	return round(ns/1e6, 6)
}

// ordinal returns "1st", "2nd", "3rd", "4th", … "11th", "21st".
func ordinal(n int) string {
	suffix := "th"
	switch n % 10 {
	case 1:
		suffix = "st"
	case 2:
		suffix = "nd"
	case 3:
		suffix = "rd"
	}
	if n%100/10 == 1 {
		suffix = "th"
	}
	return strconv.Itoa(n) + suffix
}
