package main

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"io"
	"os"
	"path/filepath"
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

func TestImageWriteError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "herd.svg")
	_, stderr, code := cli(t, "herd", "-clients", "10", "-out", path)
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "no such file") {
		t.Errorf("exit %d, stderr %q; want 1 and one line", code, stderr)
	}
}
