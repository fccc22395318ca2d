// Command housemetrics prints the size of a servegate checkout's public
// surface, its comments and its commit subjects. It reads source files
// only, so it measures any revision:
//
//	mkdir /tmp/before && git archive a55975a | tar -x -C /tmp/before
//	go run ./tools/housemetrics -repo . -rev a55975a /tmp/before
//	go run ./tools/housemetrics -since a55975a .
//	go run ./tools/housemetrics -packages -duplicates /tmp/before
//
// Counts cover non-test Go files of the root module. Nested modules,
// testdata and hidden directories are left out. A package is importable
// when it is not a command and no path element is "internal". Exported
// names are top-level functions, types, variables and constants; "with
// methods" adds the exported methods of exported types.
//
// With -duplicates it also counts the pairs that the duplicates command
// finds among the files outside tests.
//
// A comment sentence ends at ".", "!" or "?" before a space or the end.
// Code lines in comments (indented) are left out. Its marks are the
// brackets, colons and semicolons it holds.
package main

import (
	"bufio"
	"bytes"
	"flag"
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
	"sort"
	"strings"
	"unicode"

	"github.com/servegate/servegate/internal/stats"
)

func main() {
	since := flag.String("since", "", "also measure the subjects of the commits after this `rev`")
	repo := flag.String("repo", "", "the git `checkout` whose subjects to read (default: the directory measured)")
	rev := flag.String("rev", "HEAD", "the `revision` whose commit subjects to read")
	perPkg := flag.Bool("packages", false, "print each package's exported names and lines")
	dup := flag.Bool("duplicates", false, "count the duplicates command's pairs among the non-test files")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	if *repo == "" {
		*repo = root
	}
	if err := run(os.Stdout, root, *repo, *rev, *since, *perPkg, *dup); err != nil {
		fmt.Fprintln(os.Stderr, "housemetrics:", err)
		os.Exit(1)
	}
}

// pkg is what one directory of Go files holds.
type pkg struct {
	rel, name         string
	lines, testLines  int
	top, withMethods  int
	statsFuncs        []string
	sentences, words  int
	marks             int
	importable, isCmd bool
}

func run(w *os.File, root, repo, rev, since string, perPkg, dup bool) error {
	pkgs, err := scan(root)
	if err != nil {
		return err
	}
	var all, imp []*pkg
	for _, p := range pkgs {
		all = append(all, p)
		if p.importable {
			imp = append(imp, p)
		}
	}
	sum := func(ps []*pkg, f func(*pkg) int) int {
		n := 0
		for _, p := range ps {
			n += f(p)
		}
		return n
	}
	fmt.Fprintf(w, "packages: %d (importable %d, internal %d, commands %d)\n", len(all), len(imp),
		sum(all, func(p *pkg) int { return b2i(strings.Contains("/"+p.rel+"/", "/internal/")) }),
		sum(all, func(p *pkg) int { return b2i(p.isCmd) }))
	fmt.Fprintf(w, "Go lines: %d non-test, %d test\n", sum(all, func(p *pkg) int { return p.lines }), sum(all, func(p *pkg) int { return p.testLines }))
	fmt.Fprintf(w, "exported names of importable packages: %d top-level, %d with methods\n",
		sum(imp, func(p *pkg) int { return p.top }), sum(imp, func(p *pkg) int { return p.withMethods }))
	for _, p := range all {
		if p.rel == "benchtest" {
			fmt.Fprintf(w, "benchtest exported names: %d top-level, %d with methods\n", p.top, p.withMethods)
		}
	}
	if perPkg {
		fmt.Fprintf(w, "  %-40s %9s %12s %6s %6s\n", "package (* importable)", "top-level", "with methods", "lines", "test")
		for _, p := range all {
			mark := " "
			if p.importable {
				mark = "*"
			}
			fmt.Fprintf(w, "  %-40s %9d %12d %6d %6d\n", p.rel+mark, p.top, p.withMethods, p.lines, p.testLines)
		}
	}
	var stats []string
	for _, p := range all {
		for _, f := range p.statsFuncs {
			stats = append(stats, p.rel+"."+f)
		}
	}
	fmt.Fprintf(w, "functions named quantile, percentile or median: %d %v\n", len(stats), stats)
	s, wd, m := sum(all, func(p *pkg) int { return p.sentences }), sum(all, func(p *pkg) int { return p.words }), sum(all, func(p *pkg) int { return p.marks })
	if s > 0 {
		fmt.Fprintf(w, "comment sentences: %d, %.1f words each, %.2f brackets, colons or semicolons each\n", s, float64(wd)/float64(s), float64(m)/float64(s))
	}
	doc, n, err := largestDoc(root)
	if err != nil {
		return err
	}
	if n > 0 {
		fmt.Fprintf(w, "largest doc: %s, %d lines\n", doc, n)
	}
	if dup {
		if err := duplicatePairs(w, root); err != nil {
			return err
		}
	}
	if err := subjects(w, repo, rev, "all commits to "+rev); err != nil {
		return err
	}
	if since != "" {
		return subjects(w, repo, since+".."+rev, "commits after "+since)
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// scan reads every directory of Go files under root, in the root module.
func scan(root string) ([]*pkg, error) {
	byDir := map[string]*pkg{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			if n := d.Name(); strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		p := byDir[rel]
		if p == nil {
			p = &pkg{rel: rel}
			byDir[rel] = p
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines := bytes.Count(data, []byte("\n"))
		if strings.HasSuffix(path, "_test.go") {
			p.testLines += lines
			return nil
		}
		p.lines += lines
		f, err := parser.ParseFile(fset, path, data, parser.ParseComments)
		if err != nil {
			return err
		}
		p.name = f.Name.Name
		count(p, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []*pkg
	for _, p := range byDir {
		if p.name == "" {
			continue // tests only
		}
		p.isCmd = p.name == "main"
		p.importable = !p.isCmd && !slices.Contains(strings.Split(p.rel, "/"), "internal")
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out, nil
}

var statsName = regexp.MustCompile(`(?i)quantile|percentile|median`)

// count adds a file's exported names and comment sentences to p.
func count(p *pkg, f *ast.File) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if statsName.MatchString(d.Name.Name) && d.Recv == nil {
				p.statsFuncs = append(p.statsFuncs, d.Name.Name)
			}
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				p.top++
				p.withMethods++
			} else if recvExported(d.Recv) {
				p.withMethods++
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						p.top++
						p.withMethods++
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							p.top++
							p.withMethods++
						}
					}
				}
			}
		}
	}
	for _, cg := range f.Comments {
		commentSentences(p, cg)
	}
}

func recvExported(r *ast.FieldList) bool {
	if len(r.List) == 0 {
		return false
	}
	t := r.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.IsExported()
		default:
			return false
		}
	}
}

var sentenceEnd = regexp.MustCompile(`[.!?](\s|$)`)

// commentSentences counts the sentences of a comment's prose.
func commentSentences(p *pkg, cg *ast.CommentGroup) {
	var prose []string
	for _, line := range strings.Split(cg.Text(), "\n") {
		if strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "  ") {
			continue // code or a table
		}
		prose = append(prose, line)
	}
	text := strings.Join(prose, " ")
	for _, s := range sentenceEnd.Split(text, -1) {
		words := 0
		for _, w := range strings.Fields(s) {
			if strings.IndexFunc(w, unicode.IsLetter) >= 0 {
				words++
			}
		}
		if words == 0 {
			continue
		}
		p.sentences++
		p.words += words
		p.marks += strings.Count(s, "(") + strings.Count(s, ":") + strings.Count(s, ";")
	}
}

// largestDoc returns the longest Markdown file of docs/ (not its logs).
func largestDoc(root string) (string, int, error) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return "", 0, err
	}
	best, most := "", 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", 0, err
		}
		if n := bytes.Count(data, []byte("\n")); n > most {
			best, most = filepath.Base(f), n
		}
	}
	return "docs/" + best, most, nil
}

// duplicatePairs prints how many pairs the duplicates command finds
// among root's files outside tests. It copies every file but *_test.go,
// testdata and hidden directories to a scratch directory and runs the
// command there.
func duplicatePairs(w *os.File, root string) error {
	if _, err := exec.LookPath("duplicates"); err != nil {
		fmt.Fprintln(w, "duplicates pairs outside tests: not measured (no duplicates command on PATH)")
		return nil
	}
	tmp, err := os.MkdirTemp("", "housemetrics-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, "_test.go") || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dst := filepath.Join(tmp, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		return err
	}
	cmd := exec.Command("duplicates", "--repo", tmp, "--most", "1", "--seconds", "120")
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("duplicates: %v", err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	pairs := "0"
	if f := strings.Fields(first); len(f) > 0 && f[0] != "no" {
		pairs = f[0]
	}
	fmt.Fprintf(w, "duplicates pairs outside tests: %s (%s)\n", pairs, first)
	return nil
}

// subjects prints the lengths of the commit subjects of a revision range.
func subjects(w *os.File, root, revs, what string) error {
	cmd := exec.Command("git", "log", "--format=%s", revs)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		fmt.Fprintf(w, "commit subjects (%s): none read (git log: %v)\n", what, err)
		return nil
	}
	var lens []float64
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		lens = append(lens, float64(len([]rune(sc.Text()))))
	}
	if len(lens) == 0 {
		return nil
	}
	over72, over200 := 0, 0
	for _, n := range lens {
		if n > 72 {
			over72++
		}
		if n > 200 {
			over200++
		}
	}
	fmt.Fprintf(w, "commit subjects (%s): %d, median %g characters, %d over 72, %d over 200\n",
		what, len(lens), stats.Median(lens), over72, over200)
	return nil
}
