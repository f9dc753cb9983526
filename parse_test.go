package retry

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseExact lists specs of deterministic schedules with all their delays (or
// the first 20 for infinite ones).
var parseExact = []struct {
	name, spec string
	want       []time.Duration
}{
	{"constant", "constant(1s).take(3)", []time.Duration{time.Second, time.Second, time.Second}},
	{"constant zero", "constant(0).take(2)", []time.Duration{0, 0}},
	{"linear", "linear(10ms).take(4)", []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond, 40 * time.Millisecond}},
	{"linear saturates", "linear(9223372036854775807ns).take(2)", []time.Duration{maxDuration, maxDuration}},
	{"exponential cap take", "exponential(100ms).cap(2s).take(6)",
		[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond, 2 * time.Second}},
	{"exponentialfactor", "exponentialfactor(100ms, 1.5).take(4)",
		[]time.Duration{100 * time.Millisecond, 150 * time.Millisecond, 225 * time.Millisecond, 337500 * time.Microsecond}},
	{"exponentialfactor inf", "exponentialfactor(1s, +Inf).take(3)", []time.Duration{time.Second, maxDuration, maxDuration}},
	{"exponentialfactor overflow is inf", "exponentialfactor(1s, 1e400).take(3)", []time.Duration{time.Second, maxDuration, maxDuration}},
	{"jitter underflow is zero", "constant(1s).jitter(1e-400).take(2)", []time.Duration{time.Second, time.Second}},
	{"fibonacci", "fibonacci(1ms).take(6)", []time.Duration{1 * time.Millisecond, 1 * time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 5 * time.Millisecond, 8 * time.Millisecond}},
	{"delays", "delays(1ms, 2ms, 1m30s)", []time.Duration{1 * time.Millisecond, 2 * time.Millisecond, 90 * time.Second}},
	{"delays micro sign", "delays(5µs, 5us)", []time.Duration{5 * time.Microsecond, 5 * time.Microsecond}},
	{"delays empty", "delays()", nil},
	{"delays without parentheses", "delays", nil},
	{"delays empty with spaces", "DELAYS ( )", nil},
	{"decorrelated without room", "decorrelated(10ms, 10ms).take(3)", []time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond}},
	{"smooth zero", "smooth(0).take(2)", []time.Duration{0, 0}},
	{"smoothjitter zero", "smoothjitter(0s).take(2)", []time.Duration{0, 0}},
	{"take zero", "exponential(100ms).take(0)", nil},
	{"take leading zeros", "constant(1ms).take(002)", []time.Duration{1 * time.Millisecond, 1 * time.Millisecond}},
	{"cap", "exponential(1s).cap(3s).take(4)", []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}},
	{"atleast", "exponential(1s).atleast(3s).take(3)", []time.Duration{3 * time.Second, 3 * time.Second, 4 * time.Second}},
	{"within", "constant(1s).within(3500ms)", []time.Duration{time.Second, time.Second, time.Second}},
	{"within zero", "constant(0).within(0).take(2)", []time.Duration{0, 0}},
	{"jitter zero", "constant(1s).jitter(0).take(2)", []time.Duration{time.Second, time.Second}},
	{"fulljitter of zero", "constant(0).fulljitter.take(2)", []time.Duration{0, 0}},
	{"equaljitter of zero", "constant(0).equaljitter().take(2)", []time.Duration{0, 0}},
	{"then", "delays(1ms, 2ms).then(constant(1s).take(3))",
		[]time.Duration{1 * time.Millisecond, 2 * time.Millisecond, time.Second, time.Second, time.Second}},
	{"then nested", "delays(1ms).then(delays(2ms).then(delays(3ms))).then(delays(4ms))",
		[]time.Duration{1 * time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 4 * time.Millisecond}},
	{"then after infinite", "constant(1ms).then(delays(1s)).take(2)", []time.Duration{1 * time.Millisecond, 1 * time.Millisecond}},
	{"then empty", "delays().then(delays())", nil},
	{"whitespace", " \texponential ( 100ms ) . cap ( 150ms )\n.take(\r\n3 ) ", []time.Duration{100 * time.Millisecond, 150 * time.Millisecond, 150 * time.Millisecond}},
	{"mixed case", "Exponential(100ms).CAP(150ms).Take(2)", []time.Duration{100 * time.Millisecond, 150 * time.Millisecond}},
	{"infinite", "constant(7ms)", []time.Duration{
		7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond,
		7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond}},
}

func TestParseExact(t *testing.T) {
	t.Parallel()
	for _, tc := range parseExact {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tc.spec)
			require.NoError(t, err)
			got := first(s, 20)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, got, first(s, 20), "a second range starts afresh")
		})
	}
}

func TestParseJitterBounds(t *testing.T) {
	t.Parallel()
	const n = 200
	tests := []struct {
		name   string
		spec   string
		count  int                       // delays expected
		lo, hi func(i int) time.Duration // bounds of the i-th delay
	}{
		{"fulljitter below cap", "exponential(100ms).cap(2s).fulljitter.take(8)", 8,
			func(int) time.Duration { return 0 },
			func(i int) time.Duration { return min(100*time.Millisecond<<i, 2*time.Second) }},
		{"fulljitter then cap", "constant(1s).fulljitter().cap(500ms).take(200)", n,
			func(int) time.Duration { return 0 },
			func(int) time.Duration { return 500 * time.Millisecond }},
		{"equaljitter", "constant(1s).equaljitter.take(200)", n,
			func(int) time.Duration { return 500 * time.Millisecond },
			func(int) time.Duration { return time.Second }},
		{"jitter", "constant(1s).jitter(0.2).take(200)", n,
			func(int) time.Duration { return 800 * time.Millisecond },
			func(int) time.Duration { return 1200 * time.Millisecond }},
		{"jitter one", "constant(1s).jitter(1)", n,
			func(int) time.Duration { return 0 },
			func(int) time.Duration { return 2 * time.Second }},
		{"decorrelated", "decorrelated(10ms, 1s)", n,
			func(int) time.Duration { return 10 * time.Millisecond },
			func(int) time.Duration { return time.Second }},
		{"decorrelatedjitter", "DecorrelatedJitter(10ms, 1s).take(200)", n,
			func(int) time.Duration { return 10 * time.Millisecond },
			func(int) time.Duration { return time.Second }},
		{"smooth", "smooth(100ms).take(10)", 10,
			func(int) time.Duration { return 0 },
			// Each delay is below the bound on the sum up to it.
			func(i int) time.Duration { return 100 * time.Millisecond << (i + 1) * 10 / 14 }},
		{"smoothjitter within", "smoothjitter(100ms).within(30s)", -1,
			func(int) time.Duration { return 0 },
			func(int) time.Duration { return 30 * time.Second }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tc.spec)
			require.NoError(t, err)
			for run := range 20 {
				got := first(s, n)
				if tc.count >= 0 {
					require.Len(t, got, tc.count, "run %d", run)
				}
				var sum time.Duration
				for i, d := range got {
					require.GreaterOrEqual(t, d, tc.lo(i), "run %d, delay %d", run, i)
					require.LessOrEqual(t, d, tc.hi(i), "run %d, delay %d", run, i)
					sum += d
				}
				if tc.count < 0 {
					require.LessOrEqual(t, sum, 30*time.Second)
				}
			}
		})
	}
}

// TestParseEquivalence checks that a parsed Schedule gives exactly the delays
// of the same chain built in Go, jitter included when both draw from the same
// seeded source.
func TestParseEquivalence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec  string
		build func(src rand.Source) Schedule
	}{
		{"exponential(100ms).cap(2s).fulljitter.take(5)", func(src rand.Source) Schedule {
			return Exponential(100 * time.Millisecond).Cap(2 * time.Second).FullJitter(src).Take(5)
		}},
		{"constant(1s).take(3)", func(rand.Source) Schedule { return Constant(time.Second).Take(3) }},
		{"decorrelated(10ms, 1s).take(8)", func(src rand.Source) Schedule {
			return DecorrelatedJitter(10*time.Millisecond, time.Second, src).Take(8)
		}},
		{"smooth(100ms).within(30s)", func(src rand.Source) Schedule {
			return SmoothJitter(100*time.Millisecond, src).Within(30 * time.Second)
		}},
		{"delays(1ms, 2ms).then(constant(1s).take(3))", func(rand.Source) Schedule {
			return Delays(1*time.Millisecond, 2*time.Millisecond).Then(Constant(time.Second).Take(3))
		}},
		{"exponentialfactor(50ms, 1.6).jitter(0.2).cap(120s).atleast(20ms)", func(src rand.Source) Schedule {
			return ExponentialFactor(50*time.Millisecond, 1.6).Jitter(0.2, src).Cap(120 * time.Second).AtLeast(20 * time.Millisecond)
		}},
		{"linear(1s).equaljitter.then(fibonacci(1ms).fulljitter.take(3)).take(60)", func(src rand.Source) Schedule {
			return Linear(time.Second).EqualJitter(src).Then(Fibonacci(time.Millisecond).FullJitter(src).Take(3)).Take(60)
		}},
		{"delays(3s, 1s).fulljitter.then(smoothjitter(1s).take(4)).then(decorrelatedjitter(1s, 1m))", func(src rand.Source) Schedule {
			return Delays(3*time.Second, time.Second).FullJitter(src).
				Then(SmoothJitter(time.Second, src).Take(4)).
				Then(DecorrelatedJitter(time.Second, time.Minute, src))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			t.Parallel()
			s, err := parse(tc.spec, rand.NewPCG(1, 2))
			require.NoError(t, err)
			want := first(tc.build(rand.NewPCG(1, 2)), 50)
			require.NotEmpty(t, want)
			assert.Equal(t, want, first(s, 50))
		})
	}
}

// parseErrors lists bad specs with the column and message of their error.
var parseErrors = []struct {
	name, spec string
	col        int
	msg        string
}{
	{"empty", "", 1, "expected a source, found end of input"},
	{"blank", "  \t", 4, "expected a source, found end of input"},
	{"unknown combinator", "exponential(100ms).cpa(2s)", 20, `unknown combinator "cpa"`},
	{"unknown source", "expo(1s)", 1, `unknown source "expo"`},
	{"combinator as source", "take(3)", 1, `"take" is a combinator, not a source`},
	{"then as source", "then(constant(1s))", 1, `"then" is a combinator, not a source`},
	{"source as combinator", "constant(1s).Linear(1s)", 14, `"Linear" is a source, not a combinator`},
	{"not a name", "1s", 1, `expected a source, found "1s"`},
	{"underscore first", "_x", 1, `expected a source, found "_x"`},
	{"negative duration", "constant(-1s)", 10, "negative duration -1s"},
	{"missing unit", "constant(1)", 10, `missing unit in duration "1"`},
	{"missing unit, fraction", "constant(.5)", 10, `missing unit in duration ".5"`},
	{"exponent is no duration", "constant(1e3)", 10, `invalid duration "1e3"`},
	{"overflow is no duration", "constant(1e400)", 10, `invalid duration "1e400"`},
	{"invalid duration", "constant(abc)", 10, `invalid duration "abc"`},
	{"unknown unit", "constant(1s).within(1y)", 21, `invalid duration "1y"`},
	{"overflowing duration", "constant(10000000000h)", 10, `invalid duration "10000000000h"`},
	{"infinite duration", "constant(inf)", 10, `invalid duration "inf"`},
	{"quoted duration", `exponential("1s")`, 13, `invalid duration "\"1s\""`},
	{"invalid UTF-8", "constant(\xff)", 10, `invalid duration "\xff"`},
	{"too many arguments", "constant(1s, 2s)", 1, "constant takes 1 argument, got 2"},
	{"no parentheses", "constant", 1, "constant takes 1 argument, got 0"},
	{"no arguments", "constant()", 1, "constant takes 1 argument, got 0"},
	{"exponentialfactor one argument", "exponentialfactor(1s)", 1, "exponentialfactor takes 2 arguments, got 1"},
	{"factor below 1", "exponentialfactor(1s, 0.5)", 23, "factor 0.5 is not at least 1"},
	{"factor NaN", "exponentialfactor(1s, NaN)", 23, "factor NaN is not at least 1"},
	{"factor -Inf", "exponentialfactor(1s, -Inf)", 23, "factor -Inf is not at least 1"},
	{"factor overflow below 1", "exponentialfactor(1s, -1e999)", 23, "factor -1e999 is not at least 1"},
	{"factor invalid", "exponentialfactor(1s, x)", 23, `invalid number "x"`},
	{"jitter above 1", "constant(1s).jitter(1.5)", 21, "factor 1.5 is outside [0, 1]"},
	{"jitter negative", "constant(1s).jitter(-0.1)", 21, "factor -0.1 is outside [0, 1]"},
	{"jitter NaN", "constant(1s).jitter(nan)", 21, "factor nan is outside [0, 1]"},
	{"jitter inf", "constant(1s).jitter(inf)", 21, "factor inf is outside [0, 1]"},
	{"jitter overflow", "constant(1s).jitter(1e400)", 21, "factor 1e400 is outside [0, 1]"},
	{"jitter without factor", "constant(1s).jitter", 14, "jitter takes 1 argument, got 0"},
	{"negative take", "constant(1s).take(-1)", 19, "negative count -1"},
	{"take plus sign", "constant(1ms).take(+2)", 20, `invalid count "+2"`},
	{"take minus zero", "constant(1ms).take(-0)", 20, `invalid count "-0"`},
	{"overflowing take", "constant(1s).take(99999999999999999999)", 19, `count "99999999999999999999" out of range`},
	{"fractional take", "constant(1s).take(1.5)", 19, `invalid count "1.5"`},
	{"take without count", "constant(1s).fulljitter.take", 25, "take takes 1 argument, got 0"},
	{"cap without limit", "fibonacci(1ms).take(2).Cap", 24, "cap takes 1 argument, got 0"},
	{"negative cap", "constant(1s).cap(-5ms)", 18, "negative duration -5ms"},
	{"negative atleast", "constant(1s).atleast(-1ns)", 22, "negative duration -1ns"},
	{"negative within", "constant(1s).within(-1h)", 21, "negative duration -1h"},
	{"decorrelated limit below base", "decorrelated(1s, 10ms)", 18, "limit 10ms is less than base 1s"},
	{"decorrelated zero base", "decorrelatedjitter(0, 0).take(2)", 20, "base 0 is not positive"},
	{"decorrelated one argument", "decorrelated(1s)", 1, "decorrelated takes 2 arguments, got 1"},
	{"smooth negative", "smooth(-1ms)", 8, "negative duration -1ms"},
	{"fulljitter with argument", "constant(1s).fulljitter(0.5)", 14, "fulljitter takes no arguments, got 1"},
	{"equaljitter with argument", "constant(1s).EqualJitter(1s)", 14, "equaljitter takes no arguments, got 1"},
	{"unclosed", "constant(1s", 9, `unclosed "("`},
	{"unclosed after argument", "constant(1s).atleast(1h).take(2", 30, `unclosed "("`},
	{"unclosed empty", "delays(", 7, `unclosed "("`},
	{"extra parenthesis", "constant(1s))", 13, `unexpected ")"`},
	{"nested parenthesis", "constant((1s))", 10, `unexpected "("`},
	{"parenthesis after argument", "constant(1s(2))", 12, `expected "," or ")", found "("`},
	{"trailing garbage", "constant(1s).take(3) x", 22, `expected "." or end of input, found "x"`},
	{"missing dot", "constant(1s) take(3)", 14, `expected "." or end of input, found "take"`},
	{"trailing comma", "constant(1s),", 13, `expected "." or end of input, found ","`},
	{"trailing dot", "constant(1s).", 14, "expected a combinator, found end of input"},
	{"double dot", "constant(1s)..take(1)", 14, `expected a combinator, found "."`},
	{"empty argument", "delays(1ms,,2ms)", 12, "missing argument"},
	{"trailing comma in arguments", "delays(1ms,)", 12, "missing argument"},
	{"only comma", "delays(,)", 8, "missing argument"},
	{"missing comma", "delays(1ms 2ms)", 12, `expected "," or ")", found "2ms"`},
	{"then without schedule", "constant(1s).then", 14, "then takes 1 argument, got 0"},
	{"then empty", "constant(1s).then( )", 14, "then takes 1 argument, got 0"},
	{"then of combinator", "constant(1s).then(take(1))", 19, `"take" is a combinator, not a source`},
	{"then unclosed", "constant(1s).then(constant(2s)", 18, `unclosed "("`},
	{"then two schedules", "constant(1s).then(constant(2s), constant(3s))", 31, `expected "." or ")", found ","`},
	{"then inner error", "delays(1ms).then(delays(2ms).cpa)", 30, `unknown combinator "cpa"`},
	{"newline counts as one byte", "constant(1s)\n.cpa", 15, `unknown combinator "cpa"`},
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range parseErrors {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tc.spec)
			require.Error(t, err)
			assert.Nil(t, s)
			want := "retry: parse " + strconv.Quote(tc.spec) + ": column " + strconv.Itoa(tc.col) + ": " + tc.msg
			assert.Equal(t, want, err.Error())
		})
	}
}

func TestParseErrorFormat(t *testing.T) {
	t.Parallel()
	_, err := Parse("exponential(100ms).cpa(2s)")
	require.EqualError(t, err, `retry: parse "exponential(100ms).cpa(2s)": column 20: unknown combinator "cpa"`)
}

// TestParseErrorWindow checks that an error quotes at most 64 bytes of the
// spec around the column and 32 bytes of a token, whatever the input, and
// still counts the column from the start of the whole spec.
func TestParseErrorWindow(t *testing.T) {
	t.Parallel()
	ff := strings.Repeat("\xff", 1<<20)
	long := strings.Repeat("x", 1000)
	// 30 three-byte runes: a cut at 32 bytes, or at 64 after 8 bytes of
	// ASCII, falls inside one.
	runes := strings.Repeat("€", 30)
	tests := []struct {
		name, spec, want string
	}{
		{"a megabyte of 0xff", ff,
			`retry: parse "` + strings.Repeat(`\xff`, 64) + `"…: column 1: expected a source, found "` +
				strings.Repeat(`\xff`, 32) + `"…`},
		{"64 bytes are quoted whole", "constant(1s).take(3)" + strings.Repeat(" ", 41) + "cpa",
			`retry: parse "constant(1s).take(3)` + strings.Repeat(" ", 41) + `cpa": column 62: expected "." or end of input, found "cpa"`},
		{"65 bytes are not", "constant(1s).take(3)" + strings.Repeat(" ", 42) + "cpa",
			`retry: parse …"onstant(1s).take(3)` + strings.Repeat(" ", 42) + `cpa": column 63: expected "." or end of input, found "cpa"`},
		{"near the end of a long spec", "delays(" + strings.Repeat("1ms, ", 1000) + "1ms,, 2ms)",
			`retry: parse …"ms, 1ms, 1ms, 1ms, 1ms, 1ms, 1ms, 1ms, 1ms, 1ms, 1ms, 1ms,, 2ms)": column 5012: missing argument`},
		{"in the middle of a long spec", "constant(1ms)" + strings.Repeat(".take(5)", 200) + ".cpa" + strings.Repeat(".take(5)", 200),
			`retry: parse …"take(5).take(5).take(5).take(5).cpa.take(5).take(5).take(5).take"…: column 1615: unknown combinator "cpa"`},
		{"a long name", long + "(1s)",
			`retry: parse "` + strings.Repeat("x", 64) + `"…: column 1: unknown source "` + strings.Repeat("x", 32) + `"…`},
		{"a long duration", "constant(1s).cap(-" + strings.Repeat("0", 100) + "1s)",
			`retry: parse "constant(1s).cap(-` + strings.Repeat("0", 46) + `"…: column 18: negative duration -` + strings.Repeat("0", 31) + "…"},
		{"a long factor", "constant(1s).jitter(1." + long + ")",
			`retry: parse "constant(1s).jitter(1.` + strings.Repeat("x", 42) + `"…: column 21: invalid number "1.` + strings.Repeat("x", 30) + `"…`},
		{"cuts at the end fall between runes", "delays( " + runes + ")",
			`retry: parse "delays( ` + strings.Repeat("€", 18) + `"…: column 9: invalid duration "` + strings.Repeat("€", 10) + `"…`},
		// The window would start on the second byte of a µ: it starts on the first.
		{"a cut at the start falls between runes", "delays(" + strings.Repeat("1µs, ", 20) + "x    )",
			`retry: parse …"µs, ` + strings.Repeat("1µs, ", 9) + `x    )": column 128: invalid duration "x"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tc.spec)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			assert.Less(t, len(err.Error()), 1024)
		})
	}
}

func TestParseLimits(t *testing.T) {
	t.Parallel()
	// nest returns a spec whose then calls nest depth levels deep.
	nest := func(depth int) string {
		return "delays(1ms)" + strings.Repeat(".then(delays(1ms)", depth) + strings.Repeat(")", depth)
	}
	t.Run("then nesting at the limit", func(t *testing.T) {
		t.Parallel()
		s, err := Parse(nest(maxParseDepth))
		require.NoError(t, err)
		assert.Len(t, first(s, 1000), maxParseDepth+1)
	})
	t.Run("then nesting above the limit", func(t *testing.T) {
		t.Parallel()
		spec := nest(maxParseDepth + 1)
		_, err := Parse(spec)
		col := len("delays(1ms)")*(maxParseDepth+1) + len(".then(")*maxParseDepth + 2
		window := spec[col-1-32 : col-1+32] // the 64 bytes around the column
		require.EqualError(t, err, "retry: parse …"+strconv.Quote(window)+"…: column "+strconv.Itoa(col)+": then nested more than 100 deep")
	})
	t.Run("hostile nesting", func(t *testing.T) {
		t.Parallel()
		spec := "delays(1ms)" + strings.Repeat(".then(delays(1ms)", 100_000)
		_, err := Parse(spec)
		require.ErrorContains(t, err, "then nested more than 100 deep")
	})
	t.Run("steps at the limit", func(t *testing.T) {
		t.Parallel()
		s, err := Parse("constant(1ms)" + strings.Repeat(".take(5)", maxParseSteps-1))
		require.NoError(t, err)
		assert.Len(t, first(s, 10), 5)
	})
	t.Run("steps above the limit", func(t *testing.T) {
		t.Parallel()
		spec := "constant(1ms)" + strings.Repeat(".take(5)", maxParseSteps)
		_, err := Parse(spec)
		col := len("constant(1ms)") + len(".take(5)")*(maxParseSteps-1) + 2
		window := spec[len(spec)-64:] // the column is 7 bytes from the end
		require.EqualError(t, err, "retry: parse …"+strconv.Quote(window)+": column "+strconv.Itoa(col)+": more than 1000 sources and combinators")
	})
	t.Run("steps count inside then", func(t *testing.T) {
		t.Parallel()
		spec := "delays()" + strings.Repeat(".then(delays().take(1))", maxParseSteps/3) + ".take(1)"
		_, err := Parse(spec)
		require.ErrorContains(t, err, "more than 1000 sources and combinators")
	})
}

// TestParseEarlyBreak stops ranging after every possible number of delays,
// which would panic if a combinator called yield after it returned false.
func TestParseEarlyBreak(t *testing.T) {
	t.Parallel()
	specs := []string{
		"delays(1ms, 2ms).then(constant(1s).fulljitter.take(3)).then(smooth(1ms).take(2))",
		"decorrelated(1ms, 1s).equaljitter.jitter(0.5).atleast(1ms).cap(1s).within(1m).take(6)",
		"exponentialfactor(1ms, 3).then(delays(1s))",
	}
	for _, spec := range specs {
		t.Run(spec, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(spec)
			require.NoError(t, err)
			for stop := range 8 {
				n := 0
				for range s {
					if n == stop {
						break
					}
					n++
				}
				assert.LessOrEqual(t, n, stop)
			}
		})
	}
}

// TestParseConcurrent ranges one parsed Schedule from many goroutines; run
// with -race.
func TestParseConcurrent(t *testing.T) {
	t.Parallel()
	s, err := Parse("exponential(1ms).cap(1s).fulljitter.then(decorrelated(1ms, 1s).take(5)).take(20)")
	require.NoError(t, err)
	done := make(chan int)
	for range 8 {
		go func() { done <- len(first(s, 100)) }()
	}
	for range 8 {
		assert.Equal(t, 20, <-done)
	}
}

func FuzzParse(f *testing.F) {
	for _, tc := range parseExact {
		f.Add(tc.spec)
	}
	for _, tc := range parseErrors {
		f.Add(tc.spec)
	}
	for _, spec := range []string{
		"exponential(100ms).cap(2s).fulljitter.take(5)",
		"decorrelated(10ms, 1s).take(8)",
		"smooth(100ms).within(30s)",
		"exponentialfactor(1ns, 1e300).jitter(1).equaljitter.atleast(1h)",
		"linear(2562047h47m16.854775807s).jitter(1).cap(1ns)",
	} {
		f.Add(spec)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := Parse(spec)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "retry: parse ") {
				t.Fatalf("Parse(%q): error %q lacks the prefix", spec, err)
			}
			var pe *parseError
			if !errors.As(err, &pe) || pe.pos < 0 || pe.pos > len(spec) {
				t.Fatalf("Parse(%q): error %q has no valid column", spec, err)
			}
			if s != nil {
				t.Fatalf("Parse(%q): non-nil Schedule with error %q", spec, err)
			}
			// It quotes a window of the spec and cuts long tokens, so its
			// length does not grow with the input's.
			if n := len(err.Error()); n > 1024 {
				t.Fatalf("Parse(%q): error of %d bytes: %q", spec, n, err)
			}
			return
		}
		for i, d := range first(s, 50) {
			if d < 0 {
				t.Fatalf("Parse(%q): delay %d is %v", spec, i, d)
			}
		}
		// Any chain that parses can be capped, and the cap then holds.
		capped, err := Parse(spec + ".cap(1s)")
		if err != nil {
			if strings.Contains(err.Error(), "more than 1000 sources and combinators") {
				return
			}
			t.Fatalf("Parse(%q) succeeded but not with a cap: %v", spec, err)
		}
		for i, d := range first(capped, 50) {
			if d < 0 || d > time.Second {
				t.Fatalf("Parse(%q.cap(1s)): delay %d is %v", spec, i, d)
			}
		}
	})
}
