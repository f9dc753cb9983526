package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestProgressQuietWithoutTerminal(t *testing.T) {
	var errOut bytes.Buffer
	p := newProgress(&output{stderr: &errOut, tty: false}, "herd", 10)
	p.start = time.Now().Add(-time.Hour)
	for range 10 {
		p.add()
	}
	p.finish()
	if errOut.Len() != 0 {
		t.Errorf("drew %q without a terminal", errOut.String())
	}
}

func TestProgressOnTerminal(t *testing.T) {
	var errOut bytes.Buffer
	p := newProgress(&output{stderr: &errOut, tty: true}, "occ", 4)
	p.start = time.Now().Add(-time.Hour) // past the quiet first quarter second
	p.add()
	if got := errOut.String(); !strings.HasPrefix(got, "\rocc [") || !strings.HasSuffix(got, " 25%") {
		t.Errorf("first draw = %q", got)
	}
	for range 3 {
		p.add()
	}
	if !strings.Contains(errOut.String(), "100%") {
		t.Errorf("the last unit did not draw 100%%: %q", errOut.String())
	}
	errOut.Reset()
	p.finish()
	if got := errOut.String(); strings.Trim(got, "\r ") != "" || !strings.HasSuffix(got, "\r") {
		t.Errorf("finish wrote %q, want the line blanked", got)
	}
}

func TestProgressQuietWhenQuick(t *testing.T) {
	var errOut bytes.Buffer
	p := newProgress(&output{stderr: &errOut, tty: true}, "herd", 2)
	p.add()
	p.add()
	p.finish()
	if errOut.Len() != 0 {
		t.Errorf("a run shorter than a quarter second drew %q", errOut.String())
	}
}
