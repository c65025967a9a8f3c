package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/sluicehq/sluice/"

// faces are the faces' packages, each with its subpackages: a face may
// import its own subpackages, never another face's. A package two faces
// need goes below them.
var faces = []string{
	"internal/rpc",
	"internal/web",
	"internal/tui",
	"internal/acp",
	"internal/printmode",
	"internal/relay",
}

// belowFaces are packages (with their subpackages) that import no face.
var belowFaces = []string{"session", "internal/cluster"}

// pkg is what the rules read of a package: its import path, its name
// and everything it imports, directly or not, tests aside.
type pkg struct {
	ImportPath string
	Name       string
	Deps       []string
}

// sources are what go list read a package from.
type sources struct {
	Dir     string
	GoFiles []string
}

// faceOf names the face path belongs to ("" for none).
func faceOf(path string) string {
	rel, ok := strings.CutPrefix(path, module)
	if !ok {
		return ""
	}
	for _, f := range faces {
		if rel == f || strings.HasPrefix(rel, f+"/") {
			return f
		}
	}
	return ""
}

func below(path string) bool {
	rel, ok := strings.CutPrefix(path, module)
	if !ok {
		return false
	}
	for _, b := range belowFaces {
		if rel == b || strings.HasPrefix(rel, b+"/") {
			return true
		}
	}
	return false
}

// violations lists the imports that break the rules, one line each.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		if p.Name == "main" {
			continue // a command wires faces together
		}
		own := faceOf(p.ImportPath)
		if own == "" && !below(p.ImportPath) {
			continue
		}
		for _, d := range p.Deps {
			f := faceOf(d)
			if f == "" || f == own {
				continue
			}
			what := "face " + own
			if own == "" {
				what = "a package below the faces"
			}
			out = append(out, fmt.Sprintf("%s (%s) imports %s (face %s)",
				strings.TrimPrefix(p.ImportPath, module), what, strings.TrimPrefix(d, module), f))
		}
	}
	return out
}

// listModule runs go list over the module: each package's transitive
// imports, tests aside.
func listModule(t *testing.T) []pkg {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to read the import graph: %v", err)
	}
	cmd := exec.Command(gobin, "list", "-e", "-json=ImportPath,Name,Deps,Dir,GoFiles,Error", module+"...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			pkg
			sources
			Error *struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list's output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list %s: %s", p.ImportPath, p.Error.Err)
		}
		// Stat what the graph was read from, so that go test's cache
		// knows this result depends on it (it records the files a test
		// opens or stats, not what a command it runs reads). A file added
		// changes its directory's.
		for _, f := range append([]string{"."}, p.GoFiles...) {
			if _, err := os.Stat(filepath.Join(p.Dir, f)); err != nil {
				t.Fatal(err)
			}
		}
		pkgs = append(pkgs, p.pkg)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no package")
	}
	return pkgs
}

// TestNoFaceImportsAnother reads the module's import graph: no face
// imports another face, and nothing below the faces imports one.
func TestNoFaceImportsAnother(t *testing.T) {
	t.Parallel()
	pkgs := listModule(t)
	for _, f := range append(slices.Clone(faces), belowFaces...) {
		if !slices.ContainsFunc(pkgs, func(p pkg) bool { return p.ImportPath == module+f }) {
			t.Errorf("package %s is gone: update the rules", f)
		}
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// TestViolations checks the rules themselves on made-up graphs: they
// must catch what they are there for.
func TestViolations(t *testing.T) {
	t.Parallel()
	m := func(s string) string { return module + s }
	for _, tc := range []struct {
		name string
		pkgs []pkg
		want int
	}{
		{"face imports face", []pkg{{m("internal/rpc"), "rpc", []string{m("internal/web")}}}, 1},
		{"face imports another face's subpackage", []pkg{{m("internal/acp"), "acp", []string{m("internal/relay/split")}}}, 1},
		{"face subpackage imports face", []pkg{{m("internal/relay/backend/sluiceagent"), "sluiceagent", []string{m("internal/rpc")}}}, 1},
		{"cluster imports face", []pkg{{m("internal/cluster"), "cluster", []string{m("internal/rpc"), m("session")}}}, 1},
		{"session imports face", []pkg{{m("session"), "session", []string{m("internal/tui")}}}, 1},
		{"face imports its own subpackage and lower ones", []pkg{{m("internal/relay"), "relay", []string{m("internal/relay/split"), m("session"), m("agent")}}}, 0},
		{"command wires faces", []pkg{{m("cmd/sluice"), "main", []string{m("internal/rpc"), m("internal/web")}}}, 0},
		{"other package", []pkg{{m("agent"), "agent", []string{m("protocol")}}}, 0},
		{"same prefix is not a subpackage", []pkg{{m("internal/rpc"), "rpc", []string{m("internal/rpcx")}}}, 0},
	} {
		if got := violations(tc.pkgs); len(got) != tc.want {
			t.Errorf("%s: %d violations %q, want %d", tc.name, len(got), got, tc.want)
		}
	}
}
