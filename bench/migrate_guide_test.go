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

// update rewrites the guide's snippets from their examples:
// go test -run TestMigrationGuide -update
var update = flag.Bool("update", false, "rewrite docs/MIGRATING.md's snippets from the examples")

// guidePath is the migration guide, from this directory.
const guidePath = "../docs/MIGRATING.md"

// snippetRE matches a snippet in the guide: a comment naming the example,
// then a Go code block holding its body.
var snippetRE = regexp.MustCompile("(?s)<!-- snippet: (\\w+) -->\n```go\n(.*?)```\n")

// examples returns the body of every Example function in the guide's
// source files, keyed by name, as the guide shows it: without the braces,
// one tab of indentation less.
func examples(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("migrate_*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "k8s/migrate_k8s_test.go")
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
	guide, err := os.ReadFile(guidePath)
	if err != nil {
		t.Fatal(err)
	}
	bodies := examples(t)
	if *update {
		out := snippetRE.ReplaceAllStringFunc(string(guide), func(m string) string {
			name := snippetRE.FindStringSubmatch(m)[1]
			body, ok := bodies[name]
			if !ok {
				t.Errorf("the guide shows %s, which is not an example", name)
				return m
			}
			return "<!-- snippet: " + name + " -->\n```go\n" + body + "```\n"
		})
		if err := os.WriteFile(guidePath, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		guide = []byte(out)
	}
	if n, m := strings.Count(string(guide), "<!-- snippet:"), len(snippetRE.FindAllIndex(guide, -1)); n != m {
		t.Errorf("%d snippet comments, but only %d are followed by a Go code block", n, m)
	}
	var shown []string
	for _, m := range snippetRE.FindAllStringSubmatch(string(guide), -1) {
		name, code := m[1], m[2]
		shown = append(shown, name)
		body, ok := bodies[name]
		switch {
		case !ok:
			t.Errorf("the guide shows %s, which is not an example", name)
		case code != body:
			t.Errorf("the guide's %s differs from its source (go test -run TestMigrationGuide -update rewrites it):\nguide:\n%s\nsource:\n%s", name, code, body)
		}
	}
	for name := range bodies {
		if n := slices.Index(shown, name); n < 0 {
			t.Errorf("%s is not in the guide", name)
		} else if slices.Index(shown[n+1:], name) >= 0 {
			t.Errorf("%s is in the guide twice", name)
		}
	}
}
