//go:build ignore

// doclen keeps doc comments brief: go run .ci/doclen.go [-list] [dir ...]
// fails when the doc comment of an exported declaration (a function, a
// method of an exported type, a type, a variable or a constant) in any
// non-test file of the given directories and their subdirectories (by
// default those of every module in .ci/modules, testdata and vendor
// excepted) has more than 25 lines. Package docs are exempt: they hold the
// edge cases that doc comments leave out. -list prints every exported
// declaration's count, longest first. -selftest checks that a 25-line doc
// passes and a 26-line one fails.
package main

import (
	"bufio"
	"cmp"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

const limit = 25

type doc struct {
	pos   string
	name  string
	lines int
}

func main() {
	list := flag.Bool("list", false, "print every exported declaration's doc length, longest first")
	selftest := flag.Bool("selftest", false, "check that the limit is enforced")
	flag.Parse()
	if *selftest {
		os.Exit(selfTest())
	}
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = modules()
	}
	var docs []doc
	for _, d := range dirs {
		ds, err := scan(d)
		if err != nil {
			fmt.Fprintln(os.Stderr, "doclen:", err)
			os.Exit(2)
		}
		docs = append(docs, ds...)
	}
	slices.SortStableFunc(docs, func(a, b doc) int { return cmp.Compare(b.lines, a.lines) })
	bad := 0
	for _, d := range docs {
		if d.lines > limit {
			bad++
		}
		if *list || d.lines > limit {
			fmt.Printf("%4d %s (%s)\n", d.lines, d.name, d.pos)
		}
	}
	if bad > 0 {
		fmt.Printf("doclen: %d doc comments longer than %d lines: move their edge cases to the package doc or to docs/\n", bad, limit)
		os.Exit(1)
	}
}

// modules reads .ci/modules (run from the repository's root).
func modules() []string {
	f, err := os.Open(".ci/modules")
	if err != nil {
		fmt.Fprintln(os.Stderr, "doclen:", err)
		os.Exit(2)
	}
	defer f.Close()
	var dirs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line != "" {
			dirs = append(dirs, line)
		}
	}
	return dirs
}

// scan measures the doc comments of the exported declarations of the
// non-test Go files under root, nested modules excepted (each is listed in
// .ci/modules).
func scan(root string) ([]doc, error) {
	var docs []doc
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if n := e.Name(); path != root && (n == "testdata" || n == "vendor" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); path != root && err == nil {
				return filepath.SkipDir // a module of its own: listed in .ci/modules
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		add := func(name string, cg *ast.CommentGroup) {
			if cg == nil || !ast.IsExported(name) {
				return
			}
			p := fset.Position(cg.Pos())
			n := fset.Position(cg.End()).Line - p.Line + 1
			docs = append(docs, doc{fmt.Sprintf("%s:%d", path, p.Line), f.Name.Name + "." + name, n})
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				name := d.Name.Name
				if d.Recv != nil && len(d.Recv.List) == 1 {
					recv := receiver(d.Recv.List[0].Type)
					if !ast.IsExported(recv) {
						continue
					}
					name = recv + "." + name
				}
				add(name, d.Doc)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					cg := d.Doc
					if len(d.Specs) > 1 || d.Lparen.IsValid() {
						cg = nil // a group's doc is about the group
					}
					switch s := s.(type) {
					case *ast.TypeSpec:
						add(s.Name.Name, cmp.Or(s.Doc, cg))
					case *ast.ValueSpec:
						for _, n := range s.Names {
							add(n.Name, cmp.Or(s.Doc, cg))
						}
					}
				}
				if d.Doc != nil && (len(d.Specs) > 1 || d.Lparen.IsValid()) {
					for _, s := range d.Specs {
						if n := specName(s); ast.IsExported(n) {
							add(n+" (group)", d.Doc)
							break
						}
					}
				}
			}
		}
		return nil
	})
	return docs, err
}

func receiver(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

func specName(s ast.Spec) string {
	switch s := s.(type) {
	case *ast.TypeSpec:
		return s.Name.Name
	case *ast.ValueSpec:
		return s.Names[0].Name
	}
	return ""
}

// selfTest writes a package with a 25-line and a 26-line doc comment and
// checks that only the second is reported.
func selfTest() int {
	dir, err := os.MkdirTemp("", "doclen")
	if err != nil {
		fmt.Fprintln(os.Stderr, "doclen:", err)
		return 2
	}
	defer os.RemoveAll(dir)
	var b strings.Builder
	b.WriteString("package p\n\n")
	for _, n := range []int{limit, limit + 1} {
		fmt.Fprintf(&b, "// F%d is documented in %d lines.\n", n, n)
		for range n - 1 {
			b.WriteString("// More.\n")
		}
		fmt.Fprintf(&b, "func F%d() {}\n\n", n)
	}
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "doclen:", err)
		return 2
	}
	docs, err := scan(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "doclen:", err)
		return 2
	}
	var over []string
	for _, d := range docs {
		if d.lines > limit {
			over = append(over, fmt.Sprintf("%s %d", d.name, d.lines))
		}
	}
	if want := fmt.Sprintf("p.F%d %d", limit+1, limit+1); len(docs) != 2 || len(over) != 1 || over[0] != want {
		fmt.Printf("doclen: selftest: found %d docs, over the limit %q; want 2, [%q]\n", len(docs), over, want)
		return 1
	}
	fmt.Println("doclen: selftest ok: a 25-line doc passes, a 26-line one fails")
	return 0
}
