package retry

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Parse returns the Schedule that spec describes, for flags, environment
// variables and configuration files. spec is a chain written like the Go
// calls that build a Schedule: a source, then any number of combinators, each
// after a dot:
//
//	exponential(100ms).cap(2s).fulljitter.take(5)
//	constant(1s).take(3)
//	decorrelated(10ms, 1s).take(8)
//	smooth(100ms).within(30s)
//	delays(1ms, 2ms).then(constant(1s).take(3))
//
// # Grammar
//
// Spaces, tabs and newlines are allowed between any two tokens:
//
//	schedule   = source { "." combinator } .
//	source     = "constant" "(" duration ")"
//	           | "linear" "(" duration ")"
//	           | "exponential" "(" duration ")"
//	           | "exponentialfactor" "(" duration "," number ")"
//	           | "fibonacci" "(" duration ")"
//	           | "delays" [ "(" [ duration { "," duration } ] ")" ]
//	           | ( "decorrelated" | "decorrelatedjitter" ) "(" duration "," duration ")"
//	           | ( "smooth" | "smoothjitter" ) "(" duration ")" .
//	combinator = "take" "(" count ")"
//	           | "cap" "(" duration ")"
//	           | "atleast" "(" duration ")"
//	           | ( "fulljitter" | "equaljitter" ) [ "(" ")" ]
//	           | "jitter" "(" number ")"
//	           | "then" "(" schedule ")"
//	           | "within" "(" duration ")" .
//
// Each name stands for the function or method of this package with the same
// name (decorrelated is DecorrelatedJitter, smooth is SmoothJitter) and is
// matched without regard to case, so "Exponential(1s).Cap(1m)" is valid too.
// A name that takes no arguments may omit its parentheses. A duration is
// anything time.ParseDuration accepts ("1.5s", "1m30s", "0"). A number is
// anything strconv.ParseFloat accepts, "inf" and "nan" included, and one too
// large for a float64 is infinite, as ParseFloat rounds it: "1e400" is the
// same as "inf", so exponentialfactor(1s, 1e400) is exponentialfactor(1s,
// inf), and jitter(1e400) is an error only because the factor is outside
// [0, 1]. A count is a decimal integer without a sign ("0", "5", "007"). All
// the randomness (fulljitter, equaljitter, jitter, decorrelated, smooth)
// comes from math/rand/v2's goroutine-safe generator, so the Schedule may be
// ranged by any number of goroutines at once, like any other (ParseWithSource
// takes a seeded source instead). Parse itself is safe for concurrent use.
//
// # Untrusted input and errors
//
// Parse is safe for untrusted input: it never panics, and every value that
// would make the Go API panic (a negative duration, a factor below 1 or NaN
// for exponentialfactor, a jitter factor outside [0, 1], a negative take
// count, a decorrelated limit below its base, and so on) is an error. To keep
// hostile input from exhausting the stack, then may nest at most 100 levels
// deep and a spec may hold at most 1000 sources and combinators in all.
//
// The error says where and what, with a 1-based byte column:
//
//	retry: parse "exponential(100ms).cpa(2s)": column 20: unknown combinator "cpa"
//
// It quotes a spec of up to 64 bytes whole; of a longer one, only the 64
// bytes around the column, with "…" outside the quotes for each end cut off.
// A token it quotes is cut after 32 bytes in the same way. So an error stays
// short whatever the input, and its column is still counted from the start of
// the whole spec. Its text is meant for people; on error, the Schedule is
// nil.
//
// To take a schedule from a flag or a configuration file, see Spec, which
// calls Parse.
func Parse(spec string) (Schedule, error) {
	return parse(spec, nil)
}

// ParseWithSource is Parse with every jitter of the schedule drawing from src
// instead of the goroutine-safe generator, so that a seeded source gives the
// same delays every time the program runs: for simulations, tests and
// reproducible plans. The source keeps its place between ranges, so two
// ranges over the Schedule draw different delays; parse again with a fresh
// source to replay them. Draws from src are serialized as described at
// FullJitter; a nil src is the same as Parse.
func ParseWithSource(spec string, src rand.Source) (Schedule, error) {
	return parse(spec, src)
}

// Limits that keep hostile input from exhausting the stack, in the parser
// (which recurses once per then) and when ranging (each step nests one
// iterator inside the next).
const (
	maxParseDepth = 100  // then(...) nesting
	maxParseSteps = 1000 // sources and combinators in one spec
)

// parse is Parse with the jitter drawn from src.
func parse(spec string, src rand.Source) (Schedule, error) {
	p := &parser{spec: spec, src: src}
	s, err := p.chain(0)
	if err != nil {
		return nil, err
	}
	if p.skipSpace(); p.pos < len(p.spec) {
		if p.spec[p.pos] == ')' {
			return nil, p.fail(p.pos, `unexpected ")"`)
		}
		return nil, p.fail(p.pos, `expected "." or end of input, found `+p.found())
	}
	return s, nil
}

// parseError is the error of Parse.
type parseError struct {
	spec string
	pos  int // 0-based byte offset
	msg  string
}

func (e *parseError) Error() string {
	return "retry: parse " + excerpt(e.spec, e.pos) + ": column " + strconv.Itoa(e.pos+1) + ": " + e.msg
}

// Error messages quote at most specWindow bytes of a spec, around the
// column, and at most tokenQuote bytes of any one token in it, so that an
// error about hostile input (a megabyte of 0xff) stays a few hundred bytes.
const (
	specWindow = 64
	tokenQuote = 32
)

// excerpt quotes spec whole if it is short, or else the specWindow bytes
// around pos (fewer before it near the start, fewer after it near the end),
// with "…" outside the quotes for each end that was cut off.
func excerpt(spec string, pos int) string {
	if len(spec) <= specWindow {
		return strconv.Quote(spec)
	}
	start := max(0, min(pos-specWindow/2, len(spec)-specWindow))
	end := start + specWindow
	start = runeStart(spec, start)
	end = runeStart(spec, end)
	q := strconv.Quote(spec[start:end])
	if start > 0 {
		q = "…" + q
	}
	if end < len(spec) {
		q += "…"
	}
	return q
}

// quote quotes text, a token of the spec, for an error message; text longer
// than tokenQuote bytes is cut, with "…" after the quotes.
func quote(text string) string {
	if len(text) <= tokenQuote {
		return strconv.Quote(text)
	}
	return strconv.Quote(text[:runeStart(text, tokenQuote)]) + "…"
}

// clip is quote for text written into a message as it is (a number or a
// duration that parsed).
func clip(text string) string {
	if len(text) <= tokenQuote {
		return text
	}
	return text[:runeStart(text, tokenQuote)] + "…"
}

// runeStart moves i, an index into s, back to the start of the UTF-8
// sequence it falls in, so that a cut does not split a character. It moves
// at most 3 bytes, so it stays short on invalid UTF-8 too.
func runeStart(s string, i int) int {
	for j := i; j >= 0 && j > i-utf8.UTFMax; j-- {
		if j == 0 || j == len(s) || utf8.RuneStart(s[j]) {
			return j
		}
	}
	return i
}

// parser reads a spec from left to right; pos is the next byte to read.
type parser struct {
	spec  string
	pos   int
	steps int
	src   rand.Source
}

// arg is an argument as written, other than the schedule of then.
type arg struct {
	text string
	pos  int
}

func (p *parser) fail(pos int, msg string) error {
	return &parseError{spec: p.spec, pos: pos, msg: msg}
}

func (p *parser) skipSpace() {
	for p.pos < len(p.spec) && isSpace(p.spec[p.pos]) {
		p.pos++
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// isDelim reports whether c ends an argument.
func isDelim(c byte) bool {
	return isSpace(c) || c == '(' || c == ')' || c == ','
}

// peek reports whether the next byte is c.
func (p *parser) peek(c byte) bool {
	return p.pos < len(p.spec) && p.spec[p.pos] == c
}

// found describes the token at pos for an error message.
func (p *parser) found() string {
	if p.pos == len(p.spec) {
		return "end of input"
	}
	end := p.pos + 1
	if c := p.spec[p.pos]; !isDelim(c) && c != '.' {
		for end < len(p.spec) && !isDelim(p.spec[end]) && p.spec[end] != '.' {
			end++
		}
	}
	return quote(p.spec[p.pos:end])
}

// name reads the name of a source or combinator (what describes it for an
// error) and returns it as written and its position.
func (p *parser) name(what string) (string, int, error) {
	p.skipSpace()
	start := p.pos
	for p.pos < len(p.spec) && isNameByte(p.spec[p.pos], p.pos > start) {
		p.pos++
	}
	if p.pos == start {
		return "", start, p.fail(start, "expected "+what+", found "+p.found())
	}
	if p.steps++; p.steps > maxParseSteps {
		return "", start, p.fail(start, "more than "+strconv.Itoa(maxParseSteps)+" sources and combinators")
	}
	return p.spec[start:p.pos], start, nil
}

func isNameByte(c byte, inside bool) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || inside && (c == '_' || '0' <= c && c <= '9')
}

// chain reads a schedule: a source and its combinators, up to the first
// token that does not continue it.
func (p *parser) chain(depth int) (Schedule, error) {
	name, pos, err := p.name("a source")
	if err != nil {
		return nil, err
	}
	s, err := p.source(name, pos)
	if err != nil {
		return nil, err
	}
	for {
		if p.skipSpace(); !p.peek('.') {
			return s, nil
		}
		p.pos++
		if name, pos, err = p.name("a combinator"); err != nil {
			return nil, err
		}
		if s, err = p.combinator(s, name, pos, depth); err != nil {
			return nil, err
		}
	}
}

// source reads the arguments of the source name, at pos, and returns it.
func (p *parser) source(name string, pos int) (Schedule, error) {
	lower := strings.ToLower(name)
	switch lower {
	case "constant", "linear", "exponential", "exponentialfactor", "fibonacci", "delays",
		"decorrelated", "decorrelatedjitter", "smooth", "smoothjitter":
	case "take", "cap", "atleast", "fulljitter", "equaljitter", "jitter", "then", "within":
		return nil, p.fail(pos, quote(name)+" is a combinator, not a source")
	default:
		return nil, p.fail(pos, "unknown source "+quote(name))
	}
	args, err := p.args()
	if err != nil {
		return nil, err
	}
	if lower == "delays" {
		ds := make([]time.Duration, len(args))
		for i, a := range args {
			if ds[i], err = p.duration(a); err != nil {
				return nil, err
			}
		}
		return Delays(ds...), nil
	}
	want := 1
	switch lower {
	case "exponentialfactor", "decorrelated", "decorrelatedjitter":
		want = 2
	}
	if err := p.arity(lower, pos, len(args), want); err != nil {
		return nil, err
	}
	d, err := p.duration(args[0])
	if err != nil {
		return nil, err
	}
	switch lower {
	case "constant":
		return Constant(d), nil
	case "linear":
		return Linear(d), nil
	case "exponential":
		return Exponential(d), nil
	case "fibonacci":
		return Fibonacci(d), nil
	case "smooth", "smoothjitter":
		return SmoothJitter(d, p.src), nil
	case "exponentialfactor":
		f, err := p.number(args[1])
		if err != nil {
			return nil, err
		}
		if !(f >= 1) {
			return nil, p.fail(args[1].pos, "factor "+clip(args[1].text)+" is not at least 1")
		}
		return ExponentialFactor(d, f), nil
	}
	// decorrelated, decorrelatedjitter
	limit, err := p.duration(args[1])
	if err != nil {
		return nil, err
	}
	if d == 0 {
		return nil, p.fail(args[0].pos, "base "+clip(args[0].text)+" is not positive")
	}
	if limit < d {
		return nil, p.fail(args[1].pos, "limit "+clip(args[1].text)+" is less than base "+clip(args[0].text))
	}
	return DecorrelatedJitter(d, limit, p.src), nil
}

// combinator reads the arguments of the combinator name, at pos, and
// returns it applied to s. depth is the then nesting of s.
func (p *parser) combinator(s Schedule, name string, pos, depth int) (Schedule, error) {
	lower := strings.ToLower(name)
	switch lower {
	case "take", "cap", "atleast", "fulljitter", "equaljitter", "jitter", "within":
	case "then":
		return p.then(s, pos, depth)
	case "constant", "linear", "exponential", "exponentialfactor", "fibonacci", "delays",
		"decorrelated", "decorrelatedjitter", "smooth", "smoothjitter":
		return nil, p.fail(pos, quote(name)+" is a source, not a combinator")
	default:
		return nil, p.fail(pos, "unknown combinator "+quote(name))
	}
	args, err := p.args()
	if err != nil {
		return nil, err
	}
	switch lower {
	case "fulljitter", "equaljitter":
		if err := p.arity(lower, pos, len(args), 0); err != nil {
			return nil, err
		}
		if lower == "fulljitter" {
			return s.FullJitter(p.src), nil
		}
		return s.EqualJitter(p.src), nil
	}
	if err := p.arity(lower, pos, len(args), 1); err != nil {
		return nil, err
	}
	a := args[0]
	switch lower {
	case "take":
		n, err := strconv.Atoi(a.text)
		switch {
		case errors.Is(err, strconv.ErrRange):
			return nil, p.fail(a.pos, "count "+quote(a.text)+" out of range")
		case err != nil:
			return nil, p.fail(a.pos, "invalid count "+quote(a.text))
		case n < 0:
			return nil, p.fail(a.pos, "negative count "+clip(a.text))
		case a.text[0] == '+' || a.text[0] == '-': // Atoi takes a sign; a count has none
			return nil, p.fail(a.pos, "invalid count "+quote(a.text))
		}
		return s.Take(n), nil
	case "jitter":
		f, err := p.number(a)
		if err != nil {
			return nil, err
		}
		if !(f >= 0 && f <= 1) {
			return nil, p.fail(a.pos, "factor "+clip(a.text)+" is outside [0, 1]")
		}
		return s.Jitter(f, p.src), nil
	}
	d, err := p.duration(a)
	if err != nil {
		return nil, err
	}
	switch lower {
	case "cap":
		return s.Cap(d), nil
	case "atleast":
		return s.AtLeast(d), nil
	}
	return s.Within(d), nil
}

// then reads the parenthesized schedule of a then at pos and returns s
// followed by it.
func (p *parser) then(s Schedule, pos, depth int) (Schedule, error) {
	if p.skipSpace(); !p.peek('(') {
		return nil, p.arity("then", pos, 0, 1)
	}
	if depth == maxParseDepth {
		return nil, p.fail(pos, "then nested more than "+strconv.Itoa(maxParseDepth)+" deep")
	}
	open := p.pos
	p.pos++
	if p.skipSpace(); p.peek(')') {
		return nil, p.arity("then", pos, 0, 1)
	}
	next, err := p.chain(depth + 1)
	if err != nil {
		return nil, err
	}
	switch p.skipSpace(); {
	case p.pos == len(p.spec):
		return nil, p.fail(open, `unclosed "("`)
	case !p.peek(')'):
		return nil, p.fail(p.pos, `expected "." or ")", found `+p.found())
	}
	p.pos++
	return s.Then(next), nil
}

// args reads the optional parenthesized arguments after a name.
func (p *parser) args() ([]arg, error) {
	if p.skipSpace(); !p.peek('(') {
		return nil, nil
	}
	open := p.pos
	p.pos++
	if p.skipSpace(); p.peek(')') {
		p.pos++
		return nil, nil
	}
	var args []arg
	for {
		p.skipSpace()
		start := p.pos
		for p.pos < len(p.spec) && !isDelim(p.spec[p.pos]) {
			p.pos++
		}
		switch {
		case p.pos == len(p.spec) && p.pos == start:
			return nil, p.fail(open, `unclosed "("`)
		case p.pos == start && p.spec[p.pos] != '(':
			return nil, p.fail(p.pos, "missing argument")
		case p.pos == start:
			return nil, p.fail(p.pos, `unexpected "("`)
		}
		args = append(args, arg{text: p.spec[start:p.pos], pos: start})
		p.skipSpace()
		switch {
		case p.pos == len(p.spec):
			return nil, p.fail(open, `unclosed "("`)
		case p.peek(','):
			p.pos++
		case p.peek(')'):
			p.pos++
			return args, nil
		default:
			return nil, p.fail(p.pos, `expected "," or ")", found `+p.found())
		}
	}
}

// arity checks that name, at pos, got the number of arguments it takes.
func (p *parser) arity(name string, pos, got, want int) error {
	if got == want {
		return nil
	}
	takes := "1 argument"
	switch want {
	case 0:
		takes = "no arguments"
	case 2:
		takes = "2 arguments"
	}
	return p.fail(pos, name+" takes "+takes+", got "+strconv.Itoa(got))
}

// duration parses a, which must not be negative.
func (p *parser) duration(a arg) (time.Duration, error) {
	d, err := time.ParseDuration(a.text)
	if err != nil {
		if _, serr := time.ParseDuration(a.text + "s"); serr == nil {
			return 0, p.fail(a.pos, "missing unit in duration "+quote(a.text))
		}
		return 0, p.fail(a.pos, "invalid duration "+quote(a.text))
	}
	if d < 0 {
		return 0, p.fail(a.pos, "negative duration "+clip(a.text))
	}
	return d, nil
}

// number parses a as a float64; the caller checks its range. A number too
// large for a float64 is ±Inf, as ParseFloat rounds it, just as "inf" is:
// ParseFloat's range error is no error here.
func (p *parser) number(a arg) (float64, error) {
	f, err := strconv.ParseFloat(a.text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, p.fail(a.pos, "invalid number "+quote(a.text))
	}
	return f, nil
}
