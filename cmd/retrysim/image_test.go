package main

import (
	"bytes"
	"encoding/xml"
	"image/color"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestImages writes each chart in both formats and checks that the file is
// well-formed: SVG that parses as XML with an <svg> root, PNG that decodes.
func TestImages(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
	}{
		{"herd.svg", []string{"herd", "-clients", "200", "-capacity", "5"}},
		{"herd.png", []string{"herd", "-clients", "200", "-capacity", "5"}},
		{"occ.svg", []string{"occ", "-clients", "5,10", "-trials", "3"}},
		{"occ.png", []string{"occ", "-clients", "5,10", "-trials", "3"}},
		{"hedge.svg", []string{"hedge", "-requests", "200", "-fanout", "5", "-servers", "5", "-load", "0.2,0.4"}},
		{"hedge_sweep.svg", []string{"hedge", "-requests", "200", "-fanout", "5", "-servers", "5", "-pause-every", "1s", "-strategies", "none,fixed,adaptive", "-sweep-pause", "10ms,100ms"}},
		{"overload.svg", []string{"overload", "-rate", "50", "-capacity", "100", "-warmup", "10s", "-outage", "10s", "-after", "10s"}},
		{"overload.png", []string{"overload", "-rate", "50", "-capacity", "100", "-warmup", "10s", "-outage", "10s", "-after", "10s"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name)
			stdout, stderr, code := cli(t, append(c.args, "-out", path)...)
			if code != 0 || stderr != "" || !strings.Contains(stdout, "wrote "+path) {
				t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(c.name, ".svg") {
				checkSVG(t, b)
			} else {
				img, err := png.Decode(bytes.NewReader(b))
				if err != nil {
					t.Fatalf("not a PNG: %v", err)
				}
				if r := img.Bounds(); r.Dx() < 300 || r.Dy() < 200 {
					t.Errorf("PNG is only %v", r)
				}
			}
		})
	}
}

func checkSVG(t *testing.T, b []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Errorf("root element is %q, want svg", root)
	}
}

// TestImageWithJSON checks that -out still writes the image when -json keeps
// stdout for the document alone.
func TestImageWithJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "herd.svg")
	var v []herdResult
	mustJSON(t, &v, "herd", "-json", "-clients", "100", "-out", path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	checkSVG(t, b)
}

// TestImagePathChecked checks that a bad -out is a usage error, found before
// the simulation runs: one line, exit status 2, nothing on stdout, and no
// file left behind.
func TestImagePathChecked(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "dir.svg"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, out, want string
	}{
		{"missing directory", filepath.Join(dir, "missing", "herd.svg"), "there is no directory " + filepath.Join(dir, "missing")},
		{"parent is a file", filepath.Join(file, "herd.svg"), file + " is not a directory"},
		{"path is a directory", filepath.Join(dir, "dir.svg"), filepath.Join(dir, "dir.svg") + " is a directory"},
	}
	for _, c := range cases {
		for _, cmd := range []string{"herd", "occ", "hedge", "overload"} {
			t.Run(cmd+" "+c.name, func(t *testing.T) {
				stdout, stderr, code := cli(t, cmd, "-out", c.out)
				if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
					t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing, one line saying %q", code, stdout, stderr, c.want)
				}
			})
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 2 {
		t.Errorf("%s holds %v (%v), want only dir.svg and file", dir, entries, err)
	}
}

// TestImageAbsolutePath checks that a relative -out is written relative to
// the working directory and reported with its absolute path, which is where
// go -C cmd/retrysim puts it.
func TestImageAbsolutePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := cli(t, "occ", "-clients", "3", "-trials", "1", "-out", "chart.svg")
	want := "\nwrote " + filepath.Join(wd, "chart.svg") + "\n"
	if code != 0 || stderr != "" || !strings.HasSuffix(stdout, want) {
		t.Errorf("exit %d, stderr %q, stdout ends %q; want it to end %q", code, stderr, stdout[max(0, len(stdout)-80):], want)
	}
	if _, err := os.Stat(filepath.Join(dir, "chart.svg")); err != nil {
		t.Error(err)
	}
}

// TestPaletteComplete checks that every strategy has a color of its own: a
// missing one would draw its line in transparent black.
func TestPaletteComplete(t *testing.T) {
	seen := map[color.RGBA]strategy{}
	for _, st := range append(slices.Clip(allStrategies), fullBudget) {
		c, ok := palette[st]
		if !ok || c.A == 0 {
			t.Errorf("strategy %s has no color", st)
		}
		if other, ok := seen[c]; ok {
			t.Errorf("strategies %s and %s share a color", st, other)
		}
		seen[c] = st
	}
}
