package bench_test

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// update rewrites the guides' snippets from their examples:
// go test -run 'TestMigrationGuide|TestOverloadPeersGuide' -update
var update = flag.Bool("update", false, "rewrite the snippets of docs/MIGRATING.md and docs/OVERLOAD_PEERS.md from the examples")

// guidePath is the migration guide, from this directory.
const guidePath = "../docs/MIGRATING.md"

// snippetRE matches a snippet in the guide: a comment naming the example,
// then a Go code block holding its body.
var snippetRE = regexp.MustCompile("(?s)<!-- snippet: (\\w+) -->\n```go\n(.*?)```\n")

// examples returns the body of every Example function in files, keyed by
// name, as a guide shows it: without the braces, one tab of indentation
// less.
func examples(t *testing.T, files []string) map[string]string {
	t.Helper()
	bodies := map[string]string{}
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !strings.HasPrefix(fn.Name.Name, "Example") {
				continue
			}
			body := string(src[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset])
			lines := strings.Split(strings.TrimPrefix(body, "\n"), "\n")
			for i, l := range lines {
				lines[i] = strings.TrimPrefix(l, "\t")
			}
			bodies[fn.Name.Name] = strings.Join(lines, "\n")
		}
	}
	return bodies
}

// TestMigrationGuide checks that every snippet of docs/MIGRATING.md is the
// body of the example it names, character for character, and that every
// example of the guide's source files is in the guide once, so that the
// guide shows only code that compiles and prints what it says.
func TestMigrationGuide(t *testing.T) {
	files, err := filepath.Glob("migrate_*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	checkGuide(t, guidePath, append(files, "k8s/migrate_k8s_test.go"))
}

// checkGuide checks that every snippet of the guide at path is the body of
// the example it names, found in files, and that every example of files is
// in the guide once; with -update it first rewrites the snippets.
func checkGuide(t *testing.T, path string, files []string) {
	t.Helper()
	guide, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bodies := examples(t, files)
	if *update {
		out := snippetRE.ReplaceAllStringFunc(string(guide), func(m string) string {
			name := snippetRE.FindStringSubmatch(m)[1]
			body, ok := bodies[name]
			if !ok {
				t.Errorf("%s shows %s, which is not an example", path, name)
				return m
			}
			return "<!-- snippet: " + name + " -->\n```go\n" + body + "```\n"
		})
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		guide = []byte(out)
	}
	if n, m := strings.Count(string(guide), "<!-- snippet:"), len(snippetRE.FindAllIndex(guide, -1)); n != m {
		t.Errorf("%s: %d snippet comments, but only %d are followed by a Go code block", path, n, m)
	}
	var shown []string
	for _, m := range snippetRE.FindAllStringSubmatch(string(guide), -1) {
		name, code := m[1], m[2]
		shown = append(shown, name)
		body, ok := bodies[name]
		switch {
		case !ok:
			t.Errorf("%s shows %s, which is not an example", path, name)
		case code != body:
			t.Errorf("%s: %s differs from its source (go test -run Guide -update rewrites it):\nguide:\n%s\nsource:\n%s", path, name, code, body)
		}
	}
	for name := range bodies {
		if n := slices.Index(shown, name); n < 0 {
			t.Errorf("%s is not in %s", name, path)
		} else if slices.Index(shown[n+1:], name) >= 0 {
			t.Errorf("%s is in %s twice", name, path)
		}
	}
}
