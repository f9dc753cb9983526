package retry

import (
	"encoding/json"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

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
