package retryconnect

import (
	"math"
	"net/http"
	"testing"
	"time"
)

func TestPushbackParsing(t *testing.T) {
	for _, tc := range []struct {
		values []string
		d      time.Duration
		ok     bool
	}{
		{nil, 0, false},
		{[]string{"0"}, 0, true},
		{[]string{"250"}, 250 * time.Millisecond, true},
		{[]string{"-1"}, -1, true},
		{[]string{""}, -1, true},
		{[]string{" 5"}, -1, true},
		{[]string{"1.5"}, -1, true},
		{[]string{"99999999999999999999999"}, math.MaxInt64, true},
		{[]string{"1", "2"}, -1, true},
	} {
		h := http.Header{}
		for _, v := range tc.values {
			h.Add(PushbackKey, v)
		}
		if d, ok := pushback(h); d != tc.d || ok != tc.ok {
			t.Errorf("pushback(%q) = %v, %v; want %v, %v", tc.values, d, ok, tc.d, tc.ok)
		}
	}
}

func FuzzParsePushback(f *testing.F) {
	for _, s := range []string{"0", "250", "-1", "", "9223372036854775807", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d := parsePushback(s); d < -1 {
			t.Errorf("parsePushback(%q) = %v", s, d)
		}
	})
}
