// Command crosscheck type-checks the module, tests included, for other
// systems than the one it runs on: a CI guard against code that builds only
// on Linux (a Linux-only syscall field, a /proc-only helper without its
// counterpart). It does what the compiler's type checker does, from source
// and without compiling: the module's packages are checked whole, their
// dependencies (the standard library included) only down to their
// declarations, which is all the module's code sees of them. That costs
// seconds where GOOS=darwin go vet ./... compiles every dependency again
// for that system (minutes on a cold cache). It checks types, no more:
// what only the linker or cgo would find, and go vet's analyses, are left
// to a build on the system itself.
//
//	go run ./internal/crosscheck darwin/arm64 windows/amd64
package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"golang.org/x/tools/go/packages"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crosscheck GOOS/GOARCH...")
		os.Exit(2)
	}
	failed := false
	for _, target := range os.Args[1:] {
		goos, goarch, ok := strings.Cut(target, "/")
		if !ok {
			fmt.Fprintf(os.Stderr, "crosscheck: %q is not GOOS/GOARCH\n", target)
			os.Exit(2)
		}
		n, err := check("", goos, goarch, "./...")
		if err != nil {
			fmt.Fprintf(os.Stderr, "crosscheck %s: %v\n", target, err)
			failed = true
			continue
		}
		fmt.Printf("crosscheck %s: %d packages and their tests type-check\n", target, n)
	}
	if failed {
		os.Exit(1)
	}
}

// check type-checks the packages that patterns match in dir (the current
// directory when empty), with their tests, for goos/goarch, and returns
// how many it checked, or an error listing every problem found.
func check(dir, goos, goarch string, patterns ...string) (int, error) {
	cfg := &packages.Config{
		Dir: dir,
		// Files and imports only: asking go/packages for types would make
		// go list compile every dependency for their export data.
		Mode:  packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedDeps | packages.NeedModule,
		Tests: true,
		// cgo is off when cross-compiling, as go build has it.
		Env: append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS="),
	}
	roots, err := packages.Load(cfg, patterns...)
	if err != nil {
		return 0, err
	}
	c := &checker{fset: token.NewFileSet(), sizes: types.SizesFor("gc", goarch), roots: map[string]bool{}, done: map[string]*result{}}
	for _, p := range roots {
		c.roots[p.ID] = true
	}
	var wg sync.WaitGroup
	for _, p := range roots {
		wg.Go(func() { c.check(p) })
	}
	wg.Wait()
	// A package and its test variant share files: each problem once.
	seen := map[string]bool{}
	packages.Visit(roots, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			seen[e.Error()] = true
		}
	})
	for _, r := range c.done {
		for _, e := range r.errs {
			seen[e] = true
		}
	}
	problems := slices.Sorted(maps.Keys(seen))
	if len(problems) > 0 {
		return 0, fmt.Errorf("%d problems:\n%s", len(problems), strings.Join(problems, "\n"))
	}
	return len(roots), nil
}

// checker type-checks each package once, after its imports; packages
// that do not depend on each other are checked in parallel.
type checker struct {
	fset  *token.FileSet
	sizes types.Sizes
	roots map[string]bool // the IDs of the packages patterns matched, and of their tests

	mu   sync.Mutex
	done map[string]*result // by package ID
}

type result struct {
	once sync.Once
	pkg  *types.Package
	errs []string
}

// check type-checks p: whole when it is one of the roots (the module's
// packages and their tests), only down to its declarations when it is only
// a dependency.
func (c *checker) check(p *packages.Package) *types.Package {
	c.mu.Lock()
	r := c.done[p.ID]
	if r == nil {
		r = &result{}
		c.done[p.ID] = r
	}
	c.mu.Unlock()
	r.once.Do(func() { r.pkg, r.errs = c.typeCheck(p, c.roots[p.ID]) })
	return r.pkg
}

func (c *checker) typeCheck(p *packages.Package, root bool) (*types.Package, []string) {
	if p.PkgPath == "unsafe" {
		return types.Unsafe, nil
	}
	if strings.HasSuffix(p.ID, ".test") {
		return nil, nil // a generated test main: nothing of the module's in it
	}
	var errs []string
	files := make([]*ast.File, 0, len(p.GoFiles))
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(c.fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			errs = append(errs, err.Error())
		}
		if f != nil {
			files = append(files, f)
		}
	}
	// The imports are checked first, in parallel.
	var wg sync.WaitGroup
	for _, dep := range p.Imports {
		wg.Go(func() { c.check(dep) })
	}
	wg.Wait()
	conf := types.Config{
		Importer: importer(func(path string) (*types.Package, error) {
			dep := p.Imports[path]
			if dep == nil {
				return nil, fmt.Errorf("%s does not import %q", p.PkgPath, path)
			}
			if t := c.check(dep); t != nil {
				return t, nil
			}
			return nil, errors.New("not type-checked")
		}),
		IgnoreFuncBodies: !root,
		Sizes:            c.sizes,
		// Errors in a dependency are reported once, by that package.
		Error: func(err error) {
			if root || !strings.Contains(err.Error(), "could not import") {
				errs = append(errs, err.Error())
			}
		},
	}
	if p.Module != nil && p.Module.GoVersion != "" {
		conf.GoVersion = "go" + p.Module.GoVersion
	}
	t, _ := conf.Check(p.PkgPath, c.fset, files, nil)
	return t, errs
}

// importer adapts a function to types.Importer.
type importer func(path string) (*types.Package, error)

func (f importer) Import(path string) (*types.Package, error) { return f(path) }
