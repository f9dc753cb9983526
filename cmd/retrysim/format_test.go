package main

import (
	"testing"
	"time"
)

func TestHuman(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {-time.Second, "0s"}, {1234, "1.23µs"}, {100 * time.Millisecond, "100ms"},
		{1600 * time.Millisecond, "1.6s"}, {1234567890, "1.23s"}, {90 * time.Minute, "1h30m0s"},
		{36 * time.Hour, "1.5 days"}, {12 * time.Hour, "12 hours"},
		{time.Duration(1<<29) * 100 * time.Millisecond, "1.7 years"},
	} {
		if got := human(c.d); got != c.want {
			t.Errorf("human(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestOrdinal(t *testing.T) {
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 30: "30th", 112: "112th"} {
		if got := ordinal(n); got != want {
			t.Errorf("ordinal(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestLevelAndBar(t *testing.T) {
	if level(0, 100) != 0 || level(1, 100) != 1 || level(100, 100) != 8 || level(5, 1) != 8 {
		t.Errorf("level: 0→%d 1→%d top→%d, want 0, 1, 8", level(0, 100), level(1, 100), level(100, 100))
	}
	if got := bar(1, 1, 4); got != "████" {
		t.Errorf("full bar = %q", got)
	}
	if got := bar(1, 2, 4); got != "██" {
		t.Errorf("half bar = %q", got)
	}
	if got := bar(1, 16, 2); got != "▏" {
		t.Errorf("an eighth = %q", got)
	}
	if bar(0, 1, 4) != "" || bar(1, 0, 4) != "" {
		t.Error("empty bars are not empty")
	}
}
