//go:build ignore

// modproxy writes a file-system module proxy (the GOPROXY protocol, served
// from file:// URLs) that holds the repository's released modules at one
// version, each zipped from the files git tracks as the go command would
// download it from a tagged release. Run it through .ci/release:
//
//	go run .ci/modproxy.go -version v0.1.0 -out DIR module-dir...
//
// For each module directory it writes, under DIR/<module path>/@v/,
// the files list, <version>.info, <version>.mod (the module's go.mod) and
// <version>.zip. The zip holds every file git tracks below the directory
// except those of nested modules (a subdirectory with a go.mod of its own)
// and vendor directories, each named <module path>@<version>/<path>, as the
// module zip format requires. It needs only Go and git.
package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	version := flag.String("version", "", "the version to write, such as v0.1.0")
	out := flag.String("out", "", "the proxy's directory")
	flag.Parse()
	if !strings.HasPrefix(*version, "v") || *out == "" || flag.NArg() == 0 {
		fail(fmt.Errorf("usage: go run .ci/modproxy.go -version vX.Y.Z -out DIR module-dir..."))
	}
	when, err := commitTime()
	if err != nil {
		fail(err)
	}
	tracked, err := trackedFiles()
	if err != nil {
		fail(err)
	}
	roots := map[string]bool{} // every module directory, nested ones included
	for _, f := range tracked {
		if path.Base(f) == "go.mod" {
			roots[path.Dir(f)] = true
		}
	}
	for _, dir := range flag.Args() {
		dir = path.Clean(filepath.ToSlash(dir))
		if !roots[dir] {
			fail(fmt.Errorf("%s: no go.mod tracked by git", dir))
		}
		if err := writeModule(*out, dir, *version, when, tracked, roots); err != nil {
			fail(err)
		}
	}
}

// writeModule writes the proxy files of the module in dir.
func writeModule(out, dir, version string, when time.Time, tracked []string, roots map[string]bool) error {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	mod := modulePath(gomod)
	if mod == "" {
		return fmt.Errorf("%s/go.mod: no module line", dir)
	}
	at := filepath.Join(out, filepath.FromSlash(escape(mod)), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	n := 0
	for _, f := range tracked {
		rel, ok := inModule(f, dir, roots)
		if !ok {
			continue
		}
		data, err := os.ReadFile(filepath.FromSlash(f))
		if err != nil {
			return err
		}
		w, err := zw.Create(mod + "@" + version + "/" + rel)
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
		n++
	}
	if err := zw.Close(); err != nil {
		return err
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, when.UTC()})
	for name, data := range map[string][]byte{
		"list":            []byte(version + "\n"),
		version + ".info": info,
		version + ".mod":  gomod,
		version + ".zip":  buf.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("%s@%s: %d files, %d bytes zipped\n", mod, version, n, buf.Len())
	return nil
}

// inModule reports whether the tracked file f belongs to the module rooted
// at dir, and its path inside that module: not when a directory between
// them holds a module of its own, nor inside a vendor directory.
func inModule(f, dir string, roots map[string]bool) (string, bool) {
	rel := f
	if dir != "." {
		if !strings.HasPrefix(f, dir+"/") {
			return "", false
		}
		rel = strings.TrimPrefix(f, dir+"/")
	}
	for d := path.Dir(f); d != dir && d != "."; d = path.Dir(d) {
		if roots[d] || path.Base(d) == "vendor" {
			return "", false
		}
	}
	return rel, true
}

// modulePath returns the path on gomod's module line.
func modulePath(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// escape applies the module proxy protocol's case encoding: each upper-case
// letter becomes '!' and its lower-case form.
func escape(p string) string {
	var b strings.Builder
	for _, r := range p {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func trackedFiles() ([]string, error) {
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			continue
		}
		if st, err := os.Lstat(f); err == nil && st.Mode().IsRegular() {
			files = append(files, f) // a deleted or linked file is not shipped
		}
	}
	return files, nil
}

func commitTime() (time.Time, error) {
	out, err := exec.Command("git", "log", "-1", "--format=%cI").Output()
	if err != nil {
		return time.Time{}, fmt.Errorf("git log: %w", err)
	}
	return time.Parse(time.RFC3339, strings.TrimSpace(string(out)))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "modproxy:", err)
	os.Exit(1)
}
