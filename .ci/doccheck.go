//go:build ignore

// doccheck keeps each rule in one place, the doc comment of what it governs
// (house rule 12): go run .ci/doccheck.go [-list] [-words n] [dir ...]
//
// It fails when
//   - the doc comment of an exported declaration (a function, a method of an
//     exported type, a type, a variable or a constant) in a non-test file has
//     more than 25 lines and no "# Heading": a long contract is split into
//     sections, as net/http and x/time/rate do, so that go doc stays readable;
//   - a Markdown page (docs/*.md and each module's README.md) has a section
//     whose title says "in detail": that is a doc comment moved out of go doc;
//   - a page and a doc comment share a run of -words words (25 by default)
//     word for word, ignoring case, punctuation and Markdown links: two copies
//     of one rule, which drift. The page should link to the identifier
//     ("see retry.Budget", `go doc retry.Budget`) and explain or show.
//
// The Go files are those of the given directories and their subdirectories
// (by default those of every module in .ci/modules, testdata and vendor
// excepted). -list prints every exported declaration's doc length, longest
// first, with "#" after those that have headings. -selftest checks each rule
// on a package and a page it writes: that a long doc without headings, an
// "in detail" title and a copied run fail, and that their fixed forms pass.
package main

import (
	"bufio"
	"cmp"
	"flag"
	"fmt"
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// limit is the length above which a doc comment needs headings.
const limit = 25

type doc struct {
	pos      string
	name     string
	lines    int
	headings bool
	text     string
}

func main() {
	list := flag.Bool("list", false, "print every exported declaration's doc length, longest first")
	selftest := flag.Bool("selftest", false, "check that each rule is enforced")
	words := flag.Int("words", 25, "the shortest run of words shared by a page and a doc comment that fails")
	flag.Parse()
	if *selftest {
		os.Exit(selfTest(*words))
	}
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = modules()
	}
	var docs []doc
	var pages []string
	for _, d := range dirs {
		ds, err := scan(d)
		if err != nil {
			fmt.Fprintln(os.Stderr, "doccheck:", err)
			os.Exit(2)
		}
		docs = append(docs, ds...)
		pages = append(pages, filepath.Join(d, "README.md"))
		if d == "." {
			ms, _ := filepath.Glob("docs/*.md")
			pages = append(pages, ms...)
		}
	}
	bad := check(docs, pages, *words, *list, os.Stdout)
	if bad > 0 {
		fmt.Printf("doccheck: %d problems: state each rule once, in the doc comment of what it governs (# Headings when long); pages link to it\n", bad)
		os.Exit(1)
	}
}

// check reports the problems of docs and pages (missing pages are skipped)
// to w and returns their number.
func check(docs []doc, pages []string, words int, list bool, w *os.File) int {
	bad := 0
	slices.SortStableFunc(docs, func(a, b doc) int { return cmp.Compare(b.lines, a.lines) })
	for _, d := range docs {
		long := d.lines > limit && !d.headings
		if long {
			bad++
			fmt.Fprintf(w, "%s: %s: %d lines without a # Heading\n", d.pos, d.name, d.lines)
		} else if list {
			mark := ""
			if d.headings {
				mark = " #"
			}
			fmt.Fprintf(w, "%4d%s %s (%s)\n", d.lines, mark, d.name, d.pos)
		}
	}
	// Every run of words words of every doc comment, to the first doc that has it.
	runs := make(map[string]*doc)
	for i := range docs {
		ws := wordsOf(docs[i].text)
		for j := 0; j+words <= len(ws); j++ {
			k := strings.Join(ws[j:j+words], " ")
			if _, ok := runs[k]; !ok {
				runs[k] = &docs[i]
			}
		}
	}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "#") && strings.Contains(strings.ToLower(line), "in detail") {
				bad++
				fmt.Fprintf(w, "%s:%d: a section %q restates doc comments: move its rules into them and link\n", p, i+1, strings.TrimSpace(line))
			}
		}
		ws := wordsOf(markdownText(string(b)))
		for j := 0; j+words <= len(ws); {
			d, ok := runs[strings.Join(ws[j:j+words], " ")]
			if !ok {
				j++
				continue
			}
			n := words // extend the run as long as it matches the same doc
			for j+n < len(ws) {
				if e, ok := runs[strings.Join(ws[j+n-words+1:j+n+1], " ")]; !ok || e != d {
					break
				}
				n++
			}
			bad++
			fmt.Fprintf(w, "%s: %d words copied from the doc comment of %s (%s): %q…\n", p, n, d.name, d.pos, strings.Join(ws[j:j+12], " "))
			j += n
		}
	}
	return bad
}

var (
	linkTarget = regexp.MustCompile(`\]\([^)]*\)`)
	urlText    = regexp.MustCompile(`https?://\S+`)
)

// markdownText drops what a doc comment cannot share with a page: link
// targets and URLs; and fenced code, which shows how to call and is compiled
// by bench's TestDocSnippets, so a copy of an example cannot drift unseen.
func markdownText(s string) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	s = linkTarget.ReplaceAllString(b.String(), "]")
	return urlText.ReplaceAllString(s, " ")
}

// wordsOf splits s into lower-case words of letters and digits.
func wordsOf(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// modules reads .ci/modules (run from the repository's root).
func modules() []string {
	f, err := os.Open(".ci/modules")
	if err != nil {
		fmt.Fprintln(os.Stderr, "doccheck:", err)
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
			text := cg.Text()
			docs = append(docs, doc{fmt.Sprintf("%s:%d", path, p.Line), f.Name.Name + "." + name, n, hasHeading(text), text})
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

// hasHeading reports whether the doc comment text has a # Heading.
func hasHeading(text string) bool {
	for _, b := range new(comment.Parser).Parse(text).Content {
		if _, ok := b.(*comment.Heading); ok {
			return true
		}
	}
	return false
}

// selfTest writes a package and a page for each rule, one that breaks it and
// one that keeps it, and checks that only the first of each is reported.
func selfTest(words int) int {
	dir, err := os.MkdirTemp("", "doccheck")
	if err != nil {
		fmt.Fprintln(os.Stderr, "doccheck:", err)
		return 2
	}
	defer os.RemoveAll(dir)
	rule := "A call that retries gives up when the schedule has no delay left and returns the last error"
	for len(wordsOf(rule)) < words+5 {
		rule += " and then it also waits for the clock before every attempt"
	}
	var b strings.Builder
	b.WriteString("package p\n\n")
	long := func(name string, heading bool) {
		fmt.Fprintf(&b, "// %s is documented in %d lines.\n", name, limit+1)
		n := limit
		if heading {
			b.WriteString("//\n// # Details\n//\n")
			n -= 3
		}
		for range n {
			b.WriteString("// More.\n")
		}
		fmt.Fprintf(&b, "func %s() {}\n\n", name)
	}
	long("Flat", false)
	long("Sectioned", true)
	fmt.Fprintf(&b, "// Rule states a rule. %s.\nfunc Rule() {}\n", rule)
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "doccheck:", err)
		return 2
	}
	docs, err := scan(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "doccheck:", err)
		return 2
	}
	ws := strings.Fields(rule)
	short := strings.Join(ws[:words/2], " ")
	pages := map[string]string{
		"detail.md": "# P\n\n## Rule in detail\n\nSee p.Rule.\n",
		"copied.md": "# P\n\nThe rule, in full: " + strings.Join(ws[:words/2], " ") + "\n" + strings.Join(ws[words/2:], " ") + ".\n",
		"linked.md": "# P\n\n## Rule\n\nThe rule is on [p.Rule](https://pkg.go.dev/p#Rule): " + short + ", in short.\n",
	}
	var paths []string
	for name, text := range pages {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "doccheck:", err)
			return 2
		}
		paths = append(paths, path)
	}
	slices.Sort(paths)
	out, err := os.CreateTemp(dir, "out")
	if err != nil {
		fmt.Fprintln(os.Stderr, "doccheck:", err)
		return 2
	}
	bad := check(docs, paths, words, false, out)
	out.Close()
	report, _ := os.ReadFile(out.Name())
	got := string(report)
	ok := bad == 3 &&
		strings.Contains(got, "p.Flat: 26 lines without a # Heading") &&
		!strings.Contains(got, "p.Sectioned") &&
		strings.Contains(got, "detail.md:3: a section") &&
		strings.Contains(got, "copied.md: ") && strings.Contains(got, "copied from the doc comment of p.Rule") &&
		!strings.Contains(got, "linked.md")
	if !ok {
		fmt.Printf("doccheck: selftest: %d problems, want 3 (a flat 26-line doc, an \"in detail\" title, a copied rule):\n%s", bad, got)
		return 1
	}
	fmt.Println("doccheck: selftest ok: a 26-line doc fails without a # Heading and passes with one; an \"in detail\" section fails; a rule copied word for word fails, a link with a short summary passes")
	return 0
}
