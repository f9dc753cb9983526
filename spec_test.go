package retry

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

func TestSpecZero(t *testing.T) {
	var s Spec
	assert.Equal(t, "delays()", s.String())
	text, err := s.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, "delays()", string(text))
	require.NotNil(t, s.Schedule())
	assert.Empty(t, first(s.Schedule(), 10))

	calls := 0
	err = Do(t.Context(), s.Schedule(), func(ctx context.Context) error { calls++; return errBoom })
	assert.ErrorIs(t, err, ErrExhausted)
	assert.Equal(t, 1, calls, "the zero Spec makes a single attempt")

	var back Spec
	require.NoError(t, back.UnmarshalText(text))
	assert.Equal(t, "delays()", back.String())
	assert.Empty(t, first(back.Schedule(), 10), "the zero Spec's text reads back as the empty schedule")
}

func TestSpecSet(t *testing.T) {
	var s Spec
	require.NoError(t, s.Set(" Exponential(100ms) .Cap(250ms).take(3)\n"))
	assert.Equal(t, " Exponential(100ms) .Cap(250ms).take(3)\n", s.String(), "the text as given, not a canonical form")
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 250 * time.Millisecond}
	assert.Equal(t, want, first(s.Schedule(), 10))
	assert.Equal(t, want, first(s.Schedule(), 10), "a second range starts afresh")

	t.Run("bad text leaves the Spec as it was", func(t *testing.T) {
		for _, bad := range []string{"", "constant(1s).cpa", "constant(-1s)", "take(3)", "\xff", strings.Repeat("(", 1<<16)} {
			err := s.Set(bad)
			require.Error(t, err, "%q", bad)
			assert.True(t, strings.HasPrefix(err.Error(), "retry: parse "), err.Error())
			assert.Less(t, len(err.Error()), 1024)
			assert.Equal(t, err.Error(), s.UnmarshalText([]byte(bad)).Error())
			assert.Equal(t, " Exponential(100ms) .Cap(250ms).take(3)\n", s.String())
			assert.Equal(t, want, first(s.Schedule(), 10))
		}
	})
	t.Run("UnmarshalText keeps a copy of the text", func(t *testing.T) {
		var s Spec
		buf := []byte("constant(1s).take(1)")
		require.NoError(t, s.UnmarshalText(buf))
		copy(buf, "xxxxxxxx")
		assert.Equal(t, "constant(1s).take(1)", s.String())
	})
}

func TestMustSpec(t *testing.T) {
	s := MustSpec("constant(1s).take(2)")
	assert.Equal(t, "constant(1s).take(2)", s.String())
	assert.Equal(t, []time.Duration{time.Second, time.Second}, first(s.Schedule(), 10))
	assert.PanicsWithValue(t, `retry: MustSpec: parse "constant(1s).cpa": column 14: unknown combinator "cpa"`,
		func() { MustSpec("constant(1s).cpa") })
}

func TestSpecFlag(t *testing.T) {
	newFlags := func() (*flag.FlagSet, *Spec) {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		s := new(Spec)
		fs.TextVar(s, "backoff", MustSpec("constant(1s).take(2)"), "retry `schedule`")
		return fs, s
	}
	t.Run("default", func(t *testing.T) {
		fs, s := newFlags()
		require.NoError(t, fs.Parse(nil))
		assert.Equal(t, "constant(1s).take(2)", s.String())
		assert.Equal(t, "constant(1s).take(2)", fs.Lookup("backoff").DefValue)
		var usage strings.Builder
		fs.SetOutput(&usage)
		fs.PrintDefaults()
		assert.Equal(t, "  -backoff schedule\n    \tretry schedule (default constant(1s).take(2))\n", usage.String())
	})
	t.Run("set and printed back", func(t *testing.T) {
		fs, s := newFlags()
		require.NoError(t, fs.Parse([]string{"-backoff", "delays(1ms, 2ms)"}))
		assert.Equal(t, []time.Duration{time.Millisecond, 2 * time.Millisecond}, first(s.Schedule(), 10))
		assert.Equal(t, "delays(1ms, 2ms)", fs.Lookup("backoff").Value.String())
	})
	t.Run("bad text", func(t *testing.T) {
		fs, s := newFlags()
		err := fs.Parse([]string{"-backoff=constant(1s).take(+2)"})
		assert.EqualError(t, err, `invalid value "constant(1s).take(+2)" for flag -backoff: `+
			`retry: parse "constant(1s).take(+2)": column 19: invalid count "+2"`)
		assert.Equal(t, "constant(1s).take(2)", s.String(), "the default stays")
	})
	t.Run("flag.Var", func(t *testing.T) {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		var s Spec
		fs.Var(&s, "backoff", "retry schedule")
		require.NoError(t, fs.Parse([]string{"-backoff=constant(5ms).take(1)"}))
		assert.Equal(t, []time.Duration{5 * time.Millisecond}, first(s.Schedule(), 10))
	})
}

// fileConfig is a configuration file's shape with a schedule in it.
type fileConfig struct {
	Name    string `json:"name" yaml:"name"`
	Backoff Spec   `json:"backoff" yaml:"backoff"`
}

func TestSpecJSON(t *testing.T) {
	t.Run("round trip", func(t *testing.T) {
		var c fileConfig
		require.NoError(t, json.Unmarshal([]byte(`{"name": "users", "backoff": "exponential(1s).Take(2)"}`), &c))
		assert.Equal(t, []time.Duration{time.Second, 2 * time.Second}, first(c.Backoff.Schedule(), 10))
		out, err := json.Marshal(c)
		require.NoError(t, err)
		assert.Equal(t, `{"name":"users","backoff":"exponential(1s).Take(2)"}`, string(out))
	})
	t.Run("absent keeps the default", func(t *testing.T) {
		c := fileConfig{Backoff: MustSpec("constant(1s).take(1)")}
		require.NoError(t, json.Unmarshal([]byte(`{"name": "users"}`), &c))
		assert.Equal(t, "constant(1s).take(1)", c.Backoff.String())
	})
	t.Run("zero marshals and reads back", func(t *testing.T) {
		out, err := json.Marshal(fileConfig{})
		require.NoError(t, err)
		assert.Equal(t, `{"name":"","backoff":"delays()"}`, string(out))
		var c fileConfig
		require.NoError(t, json.Unmarshal(out, &c))
		assert.Empty(t, first(c.Backoff.Schedule(), 10))
	})
	t.Run("bad text", func(t *testing.T) {
		var c fileConfig
		err := json.Unmarshal([]byte(`{"backoff": "constant(1s).cap(1y)"}`), &c)
		assert.ErrorContains(t, err, `retry: parse "constant(1s).cap(1y)": column 18: invalid duration "1y"`)
	})
	t.Run("not a string", func(t *testing.T) {
		var c fileConfig
		assert.Error(t, json.Unmarshal([]byte(`{"backoff": 3}`), &c))
	})
}

func TestSpecYAML(t *testing.T) {
	var c fileConfig
	require.NoError(t, yaml.Unmarshal([]byte("name: users\nbackoff: exponential(100ms).cap(2s).fulljitter.take(5)\n"), &c))
	assert.Len(t, first(c.Backoff.Schedule(), 10), 5)
	out, err := yaml.Marshal(c)
	require.NoError(t, err)
	assert.Equal(t, "name: users\nbackoff: exponential(100ms).cap(2s).fulljitter.take(5)\n", string(out))

	err = yaml.Unmarshal([]byte("backoff: constant(1s).take(\n"), &c)
	assert.ErrorContains(t, err, `retry: parse "constant(1s).take(": column 18: unclosed "("`)
}

// TestSpecConcurrentReads reads one Spec and ranges its Schedule from many
// goroutines; run with -race.
func TestSpecConcurrentReads(t *testing.T) {
	s := MustSpec("exponential(1ms).cap(1s).fulljitter.take(20)")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				assert.Len(t, first(s.Schedule(), 100), 20)
				assert.Equal(t, "exponential(1ms).cap(1s).fulljitter.take(20)", s.String())
				text, _ := s.MarshalText()
				assert.Equal(t, "exponential(1ms).cap(1s).fulljitter.take(20)", string(text))
			}
		})
	}
	wg.Wait()
}

// TestSpecRoundTrips: every spec Parse accepts goes through a flag, JSON,
// YAML and MarshalText/UnmarshalText and comes back as the same text with
// the same delays; every spec it rejects is refused by each of them with
// Parse's error, never a panic, leaving the value as it was.
func TestSpecRoundTrips(t *testing.T) {
	type config struct {
		Backoff Spec `json:"backoff" yaml:"backoff"`
	}
	// Odd spacing and case, kept as written.
	texts := []string{" Exponential( 100ms ).CAP(2s) .fullJitter().take(5)\n", "delays", "delays()", "\tsmooth(1ms)\r\n.within(1s)"}
	for _, tc := range parseExact {
		texts = append(texts, tc.spec)
	}
	for _, text := range texts {
		t.Run(text, func(t *testing.T) {
			want := MustSpec(text)
			wantDelays := first(want.Schedule(), 20)
			check := func(how string, got Spec) {
				t.Helper()
				assert.Equal(t, text, got.String(), how)
				if !strings.Contains(strings.ToLower(text), "jitter") && !strings.Contains(strings.ToLower(text), "smooth") &&
					!strings.Contains(strings.ToLower(text), "decorrelated") {
					assert.Equal(t, wantDelays, first(got.Schedule(), 20), how)
				}
			}

			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			var fromFlag Spec
			fs.TextVar(&fromFlag, "backoff", Spec{}, "")
			require.NoError(t, fs.Parse([]string{"-backoff", text}))
			check("flag", fromFlag)

			js, err := json.Marshal(config{want})
			require.NoError(t, err)
			var fromJSON config
			require.NoError(t, json.Unmarshal(js, &fromJSON))
			check("JSON", fromJSON.Backoff)

			ym, err := yaml.Marshal(config{want})
			require.NoError(t, err)
			var fromYAML config
			require.NoError(t, yaml.Unmarshal(ym, &fromYAML), string(ym))
			check("YAML", fromYAML.Backoff)

			raw, err := want.MarshalText()
			require.NoError(t, err)
			var fromText Spec
			require.NoError(t, fromText.UnmarshalText(raw))
			check("text", fromText)
		})
	}
	for _, tc := range parseErrors {
		t.Run("bad "+tc.name, func(t *testing.T) {
			_, perr := Parse(tc.spec)
			require.Error(t, perr)
			keep := MustSpec("constant(1s).take(1)")

			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			fromFlag := keep
			fs.TextVar(&fromFlag, "backoff", keep, "")
			err := fs.Parse([]string{"-backoff", tc.spec})
			require.Error(t, err)
			assert.Contains(t, err.Error(), perr.Error())
			assert.Equal(t, keep.String(), fromFlag.String())

			js, _ := json.Marshal(map[string]string{"backoff": tc.spec})
			fromJSON := config{keep}
			require.Error(t, json.Unmarshal(js, &fromJSON))
			assert.Equal(t, keep.String(), fromJSON.Backoff.String())

			fromText := keep
			assert.Equal(t, perr, fromText.UnmarshalText([]byte(tc.spec)))
			assert.Equal(t, keep.String(), fromText.String())
		})
	}
}
