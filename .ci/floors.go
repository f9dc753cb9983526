//go:build ignore

// floors measures how a package's files are layered: go run .ci/floors.go [dir]
// (the root package by default). It prints each file's floor, then every
// upward reference, as docs/DESIGN.md's appendix describes:
//
//  1. A file uses another when its code names an object declared there: a
//     package-level type, function, variable or constant, a method, or a
//     struct field (resolved with go/types, so x.f counts for f's file).
//     Uses inside one file are not counted.
//  2. The files are put in one order, bottom first, that leaves as few uses
//     pointing up as a greedy heuristic finds (Eades, Lin and Smyth: take
//     files that use nothing left as the bottom, files nothing left uses as
//     the top, else the file with the most outgoing minus incoming uses
//     next from the top; ties by name, so the result is deterministic).
//  3. Uses that point down in that order make a DAG; a file's floor is the
//     length of its longest downward path (0: uses no other file).
//  4. Every use of a file on the same floor or a higher one is an upward
//     reference: a lower file naming a higher one (the order's backward
//     uses, and the forward ones that its longest paths leave level). They
//     are counted per place (each use site), and listed per pair of files.
package main

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	ctx := build.Default
	ctx.GOOS, ctx.GOARCH = "linux", "amd64"
	pkg, err := ctx.ImportDir(dir, 0)
	if err != nil {
		fail(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range pkg.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			fail(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	tpkg, err := conf.Check(pkg.ImportPath, fset, files, info)
	if err != nil {
		fail(err)
	}
	base := func(p token.Pos) string { return filepath.Base(fset.Position(p).Filename) }

	// 1. uses[a][b] lists the places in a that name an object of b.
	uses := map[string]map[string][]string{}
	names := pkg.GoFiles
	for _, n := range names {
		uses[n] = map[string][]string{}
	}
	for id, obj := range info.Uses {
		if obj == nil || obj.Pkg() != tpkg || !obj.Pos().IsValid() {
			continue
		}
		if v, ok := obj.(*types.Var); ok && !v.IsField() && obj.Parent() != tpkg.Scope() {
			continue // a local variable or parameter
		}
		if _, ok := obj.(*types.Label); ok {
			continue
		}
		if obj.Parent() != nil && obj.Parent() != tpkg.Scope() && obj.Parent() != types.Universe {
			if _, ok := obj.(*types.TypeName); ok {
				continue // a type parameter or local type
			}
			if _, ok := obj.(*types.Const); ok {
				continue
			}
		}
		from, to := base(id.Pos()), base(obj.Pos())
		if from == to {
			continue
		}
		pos := fset.Position(id.Pos())
		uses[from][to] = append(uses[from][to], fmt.Sprintf("%s:%d %s", from, pos.Line, id.Name))
	}

	// 2. An order, bottom first (Eades–Lin–Smyth).
	left := slices.Clone(names)
	slices.Sort(left)
	var bottom, top []string
	remove := func(f string) { left = slices.DeleteFunc(left, func(g string) bool { return g == f }) }
	for len(left) > 0 {
		progress := true
		for progress {
			progress = false
			for _, f := range slices.Clone(left) {
				if sites(uses, f, left, true) == 0 { // uses nothing left: bottom
					bottom = append(bottom, f)
					remove(f)
					progress = true
				} else if sites(uses, f, left, false) == 0 { // nothing left uses it: top
					top = append([]string{f}, top...)
					remove(f)
					progress = true
				}
			}
		}
		if len(left) == 0 {
			break
		}
		best := slices.MaxFunc(left, func(a, b string) int {
			da := sites(uses, a, left, true) - sites(uses, a, left, false)
			db := sites(uses, b, left, true) - sites(uses, b, left, false)
			return cmp.Compare(da, db) // ties: the first by name, as left is sorted
		})
		// The file with the most uses out minus uses in goes on top of
		// what is left: it is the likeliest user of the others.
		top = append([]string{best}, top...)
		remove(best)
	}
	order := append(bottom, top...)
	rank := map[string]int{}
	for i, f := range order {
		rank[f] = i
	}

	// 3. Floors from the downward uses.
	floor := map[string]int{}
	for _, f := range order {
		for g := range uses[f] {
			if rank[g] < rank[f] {
				floor[f] = max(floor[f], floor[g]+1)
			}
		}
	}
	maxFloor := 0
	for _, f := range order {
		maxFloor = max(maxFloor, floor[f])
	}
	fmt.Printf("%d files on %d floors\n", len(order), maxFloor+1)
	for fl := maxFloor; fl >= 0; fl-- {
		var on []string
		for _, f := range order {
			if floor[f] == fl {
				on = append(on, f)
			}
		}
		fmt.Printf("floor %2d: %s\n", fl, strings.Join(on, " "))
	}

	// 4. Upward references.
	type pair struct {
		from, to string
		places   []string
	}
	var up []pair
	total := 0
	for _, f := range order {
		for g, ps := range uses[f] {
			if floor[g] >= floor[f] {
				slices.Sort(ps)
				up = append(up, pair{f, g, ps})
				total += len(ps)
			}
		}
	}
	slices.SortFunc(up, func(a, b pair) int {
		return cmp.Or(cmp.Compare(floor[a.from], floor[b.from]), strings.Compare(a.from, b.from), strings.Compare(a.to, b.to))
	})
	fmt.Printf("\n%d upward references (places), between %d pairs of files:\n", total, len(up))
	for _, p := range up {
		var ids []string
		for _, s := range p.places {
			ids = append(ids, s[strings.LastIndex(s, " ")+1:])
		}
		slices.Sort(ids)
		fmt.Printf("%s (floor %d) -> %s (floor %d): %d: %s\n", p.from, floor[p.from], p.to, floor[p.to], len(p.places), strings.Join(slices.Compact(ids), ", "))
	}
}

// sites counts f's uses of the files in left (out) or theirs of f (in).
func sites(uses map[string]map[string][]string, f string, left []string, out bool) int {
	n := 0
	for _, g := range left {
		if g == f {
			continue
		}
		if out {
			n += len(uses[f][g])
		} else {
			n += len(uses[g][f])
		}
	}
	return n
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "floors:", err)
	os.Exit(1)
}
