//go:build ignore

// apigen writes and checks api/, the record of every package's exported API.
// Run it through .ci/api (see there); it needs only Go and git.
//
// Each non-main, non-internal package of every module in .ci/modules with at
// least one exported identifier has a file api/<dir>.txt (the root package's
// is api/retry.txt; a package in a/b is api/a-b.txt). Each line is one
// identifier's declaration without its doc comment or body, parameter names
// dropped, as the Go repository's api/ files are:
//
//	pkg retry, func Constant(time.Duration) Schedule
//	pkg retry, method (Schedule) Cap(time.Duration) Schedule
//	pkg retry, type Error struct, Attempts int
//
// Files are read for GOOS=linux GOARCH=amd64 without build tags, from the
// source alone, so the output is the same on every machine. Doc comments do
// not count: editing one never changes api/.
//
// The check fails when
//
//  1. api/ differs from what the source declares (run .ci/api -w), or
//  2. the newest change to api/ (the working tree's if api/ is modified,
//     else the newest commit that touched api/) did not also add to
//     CHANGELOG.md a line naming each identifier whose line it added,
//     removed or changed (for a new file: naming its package).
//
// Rule 2 needs that commit's parent: on a shallow clone without it, it is
// skipped with a note.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

var write = flag.Bool("w", false, "write api/ instead of checking it")

func main() {
	flag.Parse()
	files, err := generate()
	if err != nil {
		fatal(err)
	}
	if *write {
		if err := writeAll(files); err != nil {
			fatal(err)
		}
		fmt.Printf("api: wrote %d files; say what changed in CHANGELOG.md's [Unreleased] section, naming each identifier\n", len(files))
		return
	}
	if diff := compare(files); diff != "" {
		fatal(fmt.Errorf("the exported API differs from api/:\n%s\nIf the change is meant: run .ci/api -w, and add a line to CHANGELOG.md's [Unreleased] section naming each identifier added, removed or changed; commit both with the code", diff))
	}
	if err := checkChangelog(); err != nil {
		fatal(err)
	}
	fmt.Printf("api: %d files match the source\n", len(files))
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "api:", err)
	os.Exit(1)
}

// modules reads .ci/modules.
func modules() ([]string, error) {
	src, err := os.ReadFile(".ci/modules")
	if err != nil {
		return nil, err
	}
	var mods []string
	for _, l := range strings.Split(string(src), "\n") {
		l, _, _ = strings.Cut(l, "#")
		if l = strings.TrimSpace(l); l != "" {
			mods = append(mods, l)
		}
	}
	return mods, nil
}

// generate returns the contents of api/, by file name.
func generate() (map[string]string, error) {
	mods, err := modules()
	if err != nil {
		return nil, err
	}
	ctx := build.Default
	ctx.GOOS, ctx.GOARCH, ctx.BuildTags, ctx.CgoEnabled = "linux", "amd64", nil, true
	out := map[string]string{}
	for _, mod := range mods {
		if _, err := os.Stat(filepath.Join(mod, "go.mod")); err != nil {
			return nil, fmt.Errorf("%s is listed in .ci/modules but has no go.mod: %w", mod, err)
		}
		err := filepath.WalkDir(mod, func(dir string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			name := d.Name()
			if dir != mod {
				if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "internal" {
					return filepath.SkipDir
				}
				if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
					return filepath.SkipDir // another module, listed on its own
				}
			}
			pkg, err := ctx.ImportDir(dir, 0)
			var noGo *build.NoGoError
			if errors.As(err, &noGo) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: %w", dir, err)
			}
			if pkg.Name == "main" {
				return nil
			}
			lines, err := declarations(dir, pkg)
			if err != nil {
				return err
			}
			if len(lines) == 0 {
				return nil
			}
			file := "retry"
			if rel := filepath.ToSlash(filepath.Clean(dir)); rel != "." {
				file = strings.ReplaceAll(rel, "/", "-")
			}
			out[file+".txt"] = strings.Join(lines, "\n") + "\n"
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// declarations returns the sorted API lines of a package.
func declarations(dir string, pkg *build.Package) ([]string, error) {
	fset := token.NewFileSet()
	var lines []string
	add := func(format string, args ...any) {
		lines = append(lines, fmt.Sprintf("pkg %s, ", pkg.Name)+fmt.Sprintf(format, args...))
	}
	str := func(n ast.Node) string {
		var b bytes.Buffer
		printer.Fprint(&b, fset, n)
		return strings.Join(strings.Fields(b.String()), " ")
	}
	for _, name := range pkg.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					add("func %s%s%s", d.Name.Name, typeParams(str, d.Type.TypeParams), signature(str, d.Type))
					continue
				}
				recv := d.Recv.List[0].Type
				ptr := ""
				if s, ok := recv.(*ast.StarExpr); ok {
					recv, ptr = s.X, "*"
				}
				switch r := recv.(type) {
				case *ast.IndexExpr:
					recv = r.X
				case *ast.IndexListExpr:
					recv = r.X
				}
				if id, ok := recv.(*ast.Ident); ok && id.IsExported() {
					add("method (%s%s) %s%s", ptr, id.Name, d.Name.Name, signature(str, d.Type))
				}
			case *ast.GenDecl:
				var last ast.Expr // a const group's type repeats
				for i, sp := range d.Specs {
					switch sp := sp.(type) {
					case *ast.TypeSpec:
						if sp.Name.IsExported() {
							typeLines(add, str, sp)
						}
					case *ast.ValueSpec:
						if sp.Type != nil || len(sp.Values) > 0 {
							last = sp.Type
						}
						for j, id := range sp.Names {
							if !id.IsExported() {
								continue
							}
							kind := d.Tok.String()
							switch {
							case sp.Type != nil && len(sp.Values) > j && d.Tok == token.CONST:
								add("%s %s %s = %s", kind, id.Name, str(sp.Type), str(sp.Values[j]))
							case sp.Type != nil:
								add("%s %s %s", kind, id.Name, str(sp.Type))
							case len(sp.Values) > j && isErrorsNew(sp.Values[j]):
								add("%s %s error", kind, id.Name)
							case len(sp.Values) > j:
								add("%s %s = %s", kind, id.Name, str(sp.Values[j]))
							case last != nil:
								add("%s %s %s (iota %d)", kind, id.Name, str(last), i)
							default:
								add("%s %s (iota %d)", kind, id.Name, i)
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(lines)
	return slices.Compact(lines), nil
}

func isErrorsNew(e ast.Expr) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	s, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := s.X.(*ast.Ident)
	return ok && x.Name == "errors" && s.Sel.Name == "New"
}

func typeParams(str func(ast.Node) string, l *ast.FieldList) string {
	if l == nil {
		return ""
	}
	var ps []string
	for _, f := range l.List {
		var names []string
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
		ps = append(ps, strings.Join(names, ", ")+" "+str(f.Type))
	}
	return "[" + strings.Join(ps, ", ") + "]"
}

// signature is a function type's parameters and results, without names.
func signature(str func(ast.Node) string, t *ast.FuncType) string {
	list := func(l *ast.FieldList) []string {
		var out []string
		if l == nil {
			return out
		}
		for _, f := range l.List {
			for range max(1, len(f.Names)) {
				out = append(out, str(f.Type))
			}
		}
		return out
	}
	s := "(" + strings.Join(list(t.Params), ", ") + ")"
	switch res := list(t.Results); len(res) {
	case 0:
	case 1:
		s += " " + res[0]
	default:
		s += " (" + strings.Join(res, ", ") + ")"
	}
	return s
}

// typeLines adds a type's lines: the type, then each exported field or
// method of a struct or interface.
func typeLines(add func(string, ...any), str func(ast.Node) string, sp *ast.TypeSpec) {
	name := sp.Name.Name + typeParams(str, sp.TypeParams)
	if sp.Assign.IsValid() {
		add("type %s = %s", name, str(sp.Type))
		return
	}
	switch t := sp.Type.(type) {
	case *ast.StructType:
		add("type %s struct", name)
		for _, f := range t.Fields.List {
			if len(f.Names) == 0 { // embedded
				e := f.Type
				if s, ok := e.(*ast.StarExpr); ok {
					e = s.X
				}
				if sel, ok := e.(*ast.SelectorExpr); ok {
					e = sel.Sel
				}
				if id, ok := e.(*ast.Ident); ok && id.IsExported() {
					add("type %s struct, embedded %s", name, str(f.Type))
				}
				continue
			}
			for _, n := range f.Names {
				if n.IsExported() {
					add("type %s struct, %s %s", name, n.Name, str(f.Type))
				}
			}
		}
	case *ast.InterfaceType:
		add("type %s interface", name)
		for _, m := range t.Methods.List {
			switch {
			case len(m.Names) == 0:
				add("type %s interface, %s", name, str(m.Type))
			case m.Names[0].IsExported():
				add("type %s interface, %s%s", name, m.Names[0].Name, signature(str, m.Type.(*ast.FuncType)))
			default:
				add("type %s interface, unexported methods", name)
			}
		}
	default:
		add("type %s %s", name, str(sp.Type))
	}
}

// compare returns the differences between api/ and files, line by line.
func compare(files map[string]string) string {
	var b strings.Builder
	have, _ := filepath.Glob("api/*.txt")
	for _, p := range have {
		if _, ok := files[filepath.Base(p)]; !ok {
			fmt.Fprintf(&b, "%s: no package declares this API any more\n", p)
		}
	}
	var names []string
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		old, err := os.ReadFile(filepath.Join("api", name))
		if err != nil {
			fmt.Fprintf(&b, "api/%s: missing\n", name)
			continue
		}
		added, removed := lineDiff(string(old), files[name])
		for _, l := range removed {
			fmt.Fprintf(&b, "api/%s: - %s\n", name, l)
		}
		for _, l := range added {
			fmt.Fprintf(&b, "api/%s: + %s\n", name, l)
		}
	}
	return b.String()
}

func lineDiff(old, cur string) (added, removed []string) {
	o, c := strings.Split(strings.TrimSpace(old), "\n"), strings.Split(strings.TrimSpace(cur), "\n")
	for _, l := range c {
		if !slices.Contains(o, l) && l != "" {
			added = append(added, l)
		}
	}
	for _, l := range o {
		if !slices.Contains(c, l) && l != "" {
			removed = append(removed, l)
		}
	}
	return added, removed
}

func writeAll(files map[string]string) error {
	if err := os.MkdirAll("api", 0o755); err != nil {
		return err
	}
	have, _ := filepath.Glob("api/*.txt")
	for _, p := range have {
		if _, ok := files[filepath.Base(p)]; !ok {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	for name, s := range files {
		if err := os.WriteFile(filepath.Join("api", name), []byte(s), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func git(args ...string) (string, error) {
	out, err := exec.Command("git", args...).Output()
	return string(out), err
}

// declRE finds the identifier an API line declares: a func, type, method,
// field, const or var name.
var declRE = regexp.MustCompile(`^pkg (\w+), (?:func (\w+)|method \([^)]*\) (\w+)|type (\w+)[^,]*(?:, (?:embedded )?\*?(?:\w+\.)?(\w+))?|(?:const|var) (\w+))`)

// checkChangelog applies rule 2 of the package comment.
func checkChangelog() error {
	if _, err := git("rev-parse", "--git-dir"); err != nil {
		fmt.Println("api: not a git work tree; the CHANGELOG.md rule is not checked")
		return nil
	}
	var apiDiff, logDiff, where string
	if st, _ := git("status", "--porcelain", "--", "api"); strings.TrimSpace(st) != "" {
		where = "the working tree"
		apiDiff, _ = git("diff", "HEAD", "--", "api")
		for _, l := range strings.Split(st, "\n") {
			if strings.HasPrefix(l, "??") { // a new file: all its lines are added
				p := strings.TrimSpace(l[2:])
				src, _ := os.ReadFile(p)
				apiDiff += "+++ b/" + p + "\n--- /dev/null\n"
				for _, s := range strings.Split(strings.TrimSpace(string(src)), "\n") {
					apiDiff += "+" + s + "\n"
				}
			}
		}
		logDiff, _ = git("diff", "HEAD", "--", "CHANGELOG.md")
	} else {
		c, err := git("log", "-1", "--format=%H", "--", "api")
		c = strings.TrimSpace(c)
		if err != nil || c == "" {
			return nil // no api/ committed yet: rule 1 already ran
		}
		if _, err := git("rev-parse", "--verify", "--quiet", c+"^"); err != nil {
			fmt.Printf("api: %s, the newest change to api/, has no parent here (a shallow clone?); the CHANGELOG.md rule is not checked\n", c[:12])
			return nil
		}
		where = "commit " + c[:12]
		apiDiff, _ = git("diff", c+"^", c, "--", "api")
		logDiff, _ = git("diff", c+"^", c, "--", "CHANGELOG.md")
	}
	var logAdded strings.Builder
	for _, l := range strings.Split(logDiff, "\n") {
		if strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++") {
			logAdded.WriteString(l[1:] + "\n")
		}
	}
	var missing []string
	newFile := false
	sc := bufio.NewScanner(strings.NewReader(apiDiff))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "diff "):
			newFile = false
			continue
		case strings.HasPrefix(l, "---"):
			newFile = l == "--- /dev/null"
			continue
		case strings.HasPrefix(l, "+++"):
			continue
		case !strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "-"):
			continue
		}
		m := declRE.FindStringSubmatch(l[1:])
		if m == nil {
			continue
		}
		name := m[1] // a new file: its package
		if !newFile {
			for _, n := range m[2:] {
				if n != "" {
					name = n
				}
			}
		}
		if !regexp.MustCompile(`\b` + name + `\b`).MatchString(logAdded.String()) {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	if missing = slices.Compact(missing); len(missing) > 0 {
		return fmt.Errorf("%s changed api/ but added no line to CHANGELOG.md naming %s: say what changed in the [Unreleased] section", where, strings.Join(missing, ", "))
	}
	return nil
}
