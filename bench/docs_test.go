package bench_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The Go snippets of README.md and docs/*.md compile. Each ```go block is
// one of three kinds, told apart by the line before it:
//
//   - <!-- snippet: ExampleName --> : the body of an Example function of
//     this module, checked character for character by checkGuide (in
//     guideDocs only: TestMigrationGuide for docs/MIGRATING.md,
//     TestOverloadPeersGuide for docs/OVERLOAD_PEERS.md), so it compiles
//     and runs.
//   - <!-- fragment: why --> : intentionally partial (a list of
//     expressions, a struct literal's lines, …). It must parse as Go
//     statements or declarations; it is not type-checked. Say why in the
//     comment.
//   - anything else: compiled, by TestDocSnippets, against the packages it
//     names and the names that testdata/snippets/prelude.go declares (ctx,
//     fetch, policy, …; add a name there rather than a line to the doc).
//
// A compiled block is either declarations only (a file without its package
// clause) or the body of a function: statements and declarations in any
// order. Its import lines are honoured; a package it uses without importing
// is imported when its name is one of snippetImports. Variables it declares
// at its top level and never uses are fine, as they are in prose.
//
// TestDocSnippets builds them all in one package of a scratch module made of
// this module's go.mod, so that errors point at the Markdown file and line.

// docFiles are the Markdown files whose Go blocks are checked, from here.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../README.md"}, files...)
}

// snippetImports are the packages a snippet may use without importing
// them, by the name it uses.
var snippetImports = map[string]string{
	"bytes":     "bytes",
	"context":   "context",
	"errors":    "errors",
	"flag":      "flag",
	"fmt":       "fmt",
	"grpc":      "google.golang.org/grpc",
	"http":      "net/http",
	"io":        "io",
	"iter":      "iter",
	"json":      "encoding/json",
	"log":       "log",
	"rand":      "math/rand/v2",
	"retry":     "github.com/seed-b8c8f69d/retry",
	"retrygrpc": "github.com/seed-b8c8f69d/retry/retrygrpc",
	"retryhttp": "github.com/seed-b8c8f69d/retry/retryhttp",
	"retrysql":  "github.com/seed-b8c8f69d/retry/retrysql",
	"slices":    "slices",
	"sql":       "database/sql",
	"strings":   "strings",
	"synctest":  "testing/synctest",
	"testing":   "testing",
	"time":      "time",
}

// A docBlock is one ```go block of a Markdown file.
type docBlock struct {
	file string // as the errors name it: relative to the repository
	line int    // of the block's first line of code
	kind string // "snippet", "fragment" or "" (compiled)
	code string
}

var fenceRE = regexp.MustCompile("^```(\\S*)")

// goBlocks returns the ```go blocks of the Markdown file at path.
func goBlocks(t *testing.T, path string) []docBlock {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(filepath.ToSlash(path), "../")
	lines := strings.Split(string(src), "\n")
	var blocks []docBlock
	for i := 0; i < len(lines); i++ {
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		end := i + 1
		for end < len(lines) && !strings.HasPrefix(lines[end], "```") {
			end++
		}
		if end == len(lines) {
			t.Errorf("%s:%d: a code block that never ends", name, i+1)
			return blocks
		}
		if m[1] == "go" {
			b := docBlock{file: name, line: i + 2, code: strings.Join(lines[i+1:end], "\n") + "\n"}
			if i > 0 {
				switch prev := lines[i-1]; {
				case strings.HasPrefix(prev, "<!-- snippet:"):
					b.kind = "snippet"
				case strings.HasPrefix(prev, "<!-- fragment:"):
					b.kind = "fragment"
					if strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(prev, "<!-- fragment:"), "-->")) == "" {
						t.Errorf("%s:%d: a fragment must say why it is partial: <!-- fragment: why -->", name, i)
					}
				}
			}
			blocks = append(blocks, b)
		}
		i = end
	}
	return blocks
}

// importRE matches a snippet's import lines: single imports and the lines of
// a parenthesised list.
var importRE = regexp.MustCompile(`(?m)^import \(\n((?:.*\n)*?)\)\n|^import ("[^"]+")(.*)\n`)

// splitImports removes a block's import declarations, keeping its line count,
// and returns the paths they named.
func splitImports(code string) (string, []string) {
	var paths []string
	code = importRE.ReplaceAllStringFunc(code, func(m string) string {
		for _, q := range regexp.MustCompile(`"[^"]+"`).FindAllString(m, -1) {
			p, _ := strconv.Unquote(q)
			paths = append(paths, p)
		}
		return strings.Repeat("\n", strings.Count(m, "\n"))
	})
	return code, paths
}

// asFile turns a compiled block into a Go file of package snippets, with
// //line comments that point at the Markdown, or reports why it cannot.
func asFile(b docBlock, n int) (string, error) {
	code, paths := splitImports(b.code)
	byName := map[string]string{}
	for _, p := range paths {
		byName[p[strings.LastIndex(p, "/")+1:]] = p
	}
	// Declarations only, or the body of a function.
	fset := token.NewFileSet()
	var (
		root    ast.Node
		decls   bool
		wrapped string
	)
	if f, err := parser.ParseFile(fset, "", "package snippets\n"+code, 0); err == nil {
		root, decls = f, true
	} else {
		wrapped = "package snippets\nfunc _() {\n" + code + "\n}\n"
		f, err := parser.ParseFile(fset, "", wrapped, 0)
		if err != nil {
			return "", fmt.Errorf("neither declarations nor statements: %v", err)
		}
		root = f
	}
	// The packages it uses; the variables to mark as used.
	declared := map[string]bool{}
	used := map[string]bool{}
	var unused []string
	ast.Inspect(root, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, l := range n.Lhs {
					declared[l.(*ast.Ident).Name] = true
				}
			}
		case *ast.ValueSpec:
			for _, id := range n.Names {
				declared[id.Name] = true
			}
		}
		return true
	})
	if !decls {
		body := root.(*ast.File).Decls[0].(*ast.FuncDecl).Body
		for _, s := range body.List {
			switch s := s.(type) {
			case *ast.AssignStmt:
				if s.Tok == token.DEFINE {
					for _, l := range s.Lhs {
						unused = append(unused, l.(*ast.Ident).Name)
					}
				}
			case *ast.DeclStmt:
				if g, ok := s.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
					for _, sp := range g.Specs {
						for _, id := range sp.(*ast.ValueSpec).Names {
							unused = append(unused, id.Name)
						}
					}
				}
			}
		}
	}
	var imports []string
	for name := range used {
		if declared[name] || preludeNames[name] {
			continue
		}
		if p, ok := byName[name]; ok {
			imports = append(imports, p)
		} else if p, ok := snippetImports[name]; ok {
			imports = append(imports, p)
		}
	}
	slices.Sort(imports)
	imports = slices.Compact(imports)

	var out strings.Builder
	out.WriteString("package snippets\n\n")
	for _, p := range imports {
		fmt.Fprintf(&out, "import %q\n", p)
	}
	if decls {
		fmt.Fprintf(&out, "\n//line %s:%d\n%s", b.file, b.line, code)
		return out.String(), nil
	}
	fmt.Fprintf(&out, "\nfunc snippet%d() {\n//line %s:%d\n%s", n, b.file, b.line, code)
	slices.Sort(unused)
	for _, name := range slices.Compact(unused) {
		if name != "_" {
			fmt.Fprintf(&out, "\t_ = %s\n", name)
		}
	}
	out.WriteString("}\n")
	return out.String(), nil
}

// preludeNames are the names testdata/snippets/prelude.go declares.
var preludeNames = func() map[string]bool {
	names := map[string]bool{}
	f, err := parser.ParseFile(token.NewFileSet(), "testdata/snippets/prelude.go", nil, 0)
	if err != nil {
		return names
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			names[d.Name.Name] = true
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.ValueSpec:
					for _, id := range sp.Names {
						names[id.Name] = true
					}
				case *ast.TypeSpec:
					names[sp.Name.Name] = true
				}
			}
		}
	}
	return names
}()

// TestDocSnippets compiles every ```go block of README.md and docs/*.md that
// is neither a snippet of an example nor a fragment (see the top of this
// file), and parses the fragments.
func TestDocSnippets(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a scratch module")
	}
	dir := t.TempDir()
	prelude, err := os.ReadFile("testdata/snippets/prelude.go")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prelude.go"), prelude, 0o644); err != nil {
		t.Fatal(err)
	}
	var compiled, fragments int
	for _, path := range docFiles(t) {
		for _, b := range goBlocks(t, path) {
			switch b.kind {
			case "snippet":
				if !slices.Contains(guideDocs, b.file) {
					// checkGuide checks only the guides' snippets.
					t.Errorf("%s:%d: <!-- snippet: --> blocks are checked only in %v; here, drop the marker", b.file, b.line, guideDocs)
				}
				continue
			case "fragment":
				fragments++
				code, _ := splitImports(b.code)
				_, errDecl := parser.ParseFile(token.NewFileSet(), "", "package p\n"+code, 0)
				_, errStmt := parser.ParseFile(token.NewFileSet(), "", "package p\nfunc _() {\n"+code+"\n}\n", 0)
				if errDecl != nil && errStmt != nil {
					t.Errorf("%s:%d: a fragment must still parse as Go: %v", b.file, b.line, errStmt)
				}
				continue
			}
			compiled++
			src, err := asFile(b, compiled)
			if err != nil {
				t.Errorf("%s:%d: %v", b.file, b.line, err)
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("snippet%03d.go", compiled)), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if compiled == 0 {
		t.Fatal("no Go block found: the test is looking in the wrong place")
	}
	t.Logf("%d blocks compiled, %d fragments parsed", compiled, fragments)
	scratchModule(t, dir)
	cmd := exec.Command("go", "build", "-gcflags=-e", "-o", os.DevNull, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the docs' Go snippets do not compile (%v):\n%s", err, out)
	}
}

// scratchModule writes into dir a go.mod and go.sum that resolve what this
// module does, under another module path.
func scratchModule(t *testing.T, dir string) {
	t.Helper()
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(mod), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "module ") {
			lines[i] = "module snippets"
		}
	}
	// Our modules are required at their released version, which only
	// go.work maps to the tree: outside the workspace, the scratch module
	// requires and replaces each released module as go.work does, so a
	// snippet may import any of them (retrysql, which this module does not
	// require, included).
	work, err := os.ReadFile(filepath.Join(here, "..", "go.work"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(work), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "replace "))
		if len(f) == 4 && f[2] == "=>" && strings.HasPrefix(f[0], "github.com/seed-b8c8f69d/retry") {
			lines = append(lines,
				"require "+f[0]+" "+f[1],
				"replace "+f[0]+" => "+filepath.Join(here, "..", f[3]))
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
}

// pendingDocs are linked from the README but written on other branches; the
// link check accepts them while they are missing, and fails once they exist
// so that this list is emptied after the merge.
var pendingDocs = []string{}

// guideDocs are the pages whose <!-- snippet: --> blocks checkGuide compares
// with Example functions of this module.
var guideDocs = []string{"docs/MIGRATING.md", "docs/OVERLOAD_PEERS.md"}

var (
	linkRE      = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpanRE  = regexp.MustCompile("`[^`]*`")
	headingRE   = regexp.MustCompile(`^#{1,6} +(.*?) *#*$`)
	htmlAnchorR = regexp.MustCompile(`<a (?:name|id)="([^"]+)"`)
)

// anchors returns the fragment identifiers GitHub gives the headings of a
// Markdown file: lower case, punctuation dropped, spaces to hyphens, and -1,
// -2, … after repeats.
func anchors(src string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	inCode := false
	for _, l := range strings.Split(src, "\n") {
		if strings.HasPrefix(l, "```") {
			inCode = !inCode
			continue
		}
		for _, m := range htmlAnchorR.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		m := headingRE.FindStringSubmatch(l)
		if inCode || m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestDocLinks checks every relative link of every Markdown file in the
// repository: the file or directory exists, and a #fragment names a heading
// of the Markdown file it points to.
func TestDocLinks(t *testing.T) {
	root := ".."
	var mds []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			mds = append(mds, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var links int
	for _, md := range mds {
		src, err := os.ReadFile(md)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, md)
		inCode := false
		for i, l := range strings.Split(string(src), "\n") {
			if strings.HasPrefix(l, "```") {
				inCode = !inCode
				continue
			}
			if inCode {
				continue
			}
			for _, m := range linkRE.FindAllStringSubmatch(codeSpanRE.ReplaceAllString(l, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				file, frag, _ := strings.Cut(target, "#")
				path := md
				if file != "" {
					path = filepath.Join(filepath.Dir(md), file)
				}
				rel, _ := filepath.Rel(root, path)
				if _, err := os.Stat(path); err != nil {
					if slices.Contains(pendingDocs, filepath.ToSlash(rel)) {
						continue
					}
					t.Errorf("%s:%d: %s: no such file", name, i+1, target)
					continue
				}
				if frag == "" || !strings.HasSuffix(path, ".md") {
					continue
				}
				dst, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if !anchors(string(dst))[frag] {
					t.Errorf("%s:%d: %s: no heading #%s in %s", name, i+1, target, frag, rel)
				}
			}
		}
	}
	for _, p := range pendingDocs {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			t.Errorf("%s exists now: remove it from pendingDocs in docs_test.go", p)
		}
	}
	if links < 50 {
		t.Errorf("only %d relative links found in %d files: the test is looking in the wrong place", links, len(mds))
	}
}

// TestAnchors pins the anchor rules on headings of the guides.
func TestAnchors(t *testing.T) {
	a := anchors("# How it compares\n## hashicorp/go-retryablehttp\n```\n# not a heading\n```\n## Which jitter?\n## Which jitter?\n")
	want := []string{"how-it-compares", "hashicorpgo-retryablehttp", "which-jitter", "which-jitter-1"}
	for _, w := range want {
		if !a[w] {
			t.Errorf("no anchor %q in %v", w, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("a line in a code block made an anchor")
	}
	if len(a) != len(want) {
		t.Errorf("%d anchors, want 4: %v", len(a), a)
	}
}

// TestDesignNamesTests checks that every test, fuzz target and benchmark
// that docs/DESIGN.md names as a rule's guard exists in some module of the
// repository.
func TestDesignNamesTests(t *testing.T) {
	design, err := os.ReadFile("../docs/DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	funcRE := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark)\w+)\(`)
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != ".." && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range funcRE.FindAllStringSubmatch(string(src), -1) {
				declared[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile("`((?:Test|Fuzz|Benchmark)[A-Z]\\w*)`").FindAllStringSubmatch(string(design), -1)
	if len(named) < 20 {
		t.Fatalf("docs/DESIGN.md names only %d tests: the test is reading the wrong file", len(named))
	}
	for _, m := range named {
		if !declared[m[1]] {
			t.Errorf("docs/DESIGN.md names %s, which no *_test.go declares", m[1])
		}
	}
}
