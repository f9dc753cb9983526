package retrygrpc

import (
	"math"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
)

func TestParsePushback(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"1", time.Millisecond},
		{"1500", 1500 * time.Millisecond},
		{"007", 7 * time.Millisecond},
		{"9223372036854", 9223372036854 * time.Millisecond},
		{"9223372036855", math.MaxInt64},
		{"99999999999999999999999999", math.MaxInt64},
		{"", -1},
		{"-1", -1},
		{"-0", -1},
		{"+5", -1},
		{" 5", -1},
		{"5 ", -1},
		{"1.5", -1},
		{"1e3", -1},
		{"0x10", -1},
		{"５", -1},
		{"\xff", -1},
	} {
		if got := parsePushback(tc.in); got != tc.want {
			t.Errorf("parsePushback(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestPushbackTrailer(t *testing.T) {
	for name, tc := range map[string]struct {
		md   metadata.MD
		want time.Duration
		ok   bool
	}{
		"nil":        {nil, 0, false},
		"absent":     {metadata.Pairs("other", "1"), 0, false},
		"one":        {metadata.Pairs(PushbackKey, "20"), 20 * time.Millisecond, true},
		"several":    {metadata.Pairs(PushbackKey, "20", PushbackKey, "20"), -1, true},
		"empty list": {metadata.MD{PushbackKey: {}}, 0, false},
	} {
		d, ok := pushback(tc.md)
		if d != tc.want || ok != tc.ok {
			t.Errorf("%s: got %v, %v; want %v, %v", name, d, ok, tc.want, tc.ok)
		}
	}
}

// FuzzPushback checks that no trailer value panics, that every value is
// either a refusal (-1) or a non-negative wait, and that a wait is exactly
// what strconv reads from digits, saturated.
func FuzzPushback(f *testing.F) {
	for _, s := range []string{"0", "1500", "-1", "abc", "99999999999999999999", "", " 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := parsePushback(s)
		if d < -1 {
			t.Fatalf("parsePushback(%q) = %v", s, d)
		}
		digits := s != ""
		for _, c := range []byte(s) {
			digits = digits && c >= '0' && c <= '9'
		}
		if !digits {
			if d != -1 {
				t.Fatalf("parsePushback(%q) = %v, want -1", s, d)
			}
			return
		}
		ms, err := strconv.ParseInt(s, 10, 64)
		want := time.Duration(math.MaxInt64)
		if err == nil && ms <= math.MaxInt64/int64(time.Millisecond) {
			want = time.Duration(ms) * time.Millisecond
		}
		if d != want {
			t.Fatalf("parsePushback(%q) = %v, want %v", s, d, want)
		}
	})
}
