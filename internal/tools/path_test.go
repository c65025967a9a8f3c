package tools

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/tool"
)

func TestResolvePath(t *testing.T) {
	t.Parallel()
	base, _ := workDir(t)
	work := filepath.Join(base, "work")
	writeFiles(t, base, map[string]string{
		"work/a.txt":         "a",
		"outside/secret.txt": "secret",
		"allowed/b.txt":      "b",
		"workx/c.txt":        "c",
	})
	links := map[string]string{
		"work/out-file":   filepath.Join(base, "outside", "secret.txt"),
		"work/out-dir":    filepath.Join(base, "outside"),
		"work/dangling":   filepath.Join(base, "outside", "new.txt"),
		"work/in-link":    "a.txt",
		"work/rel-escape": "../outside/secret.txt",
		"work/loop1":      "loop2",
		"work/loop2":      "loop1",
		"worklink":        "work",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(base, name)); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		name    string
		workDir string
		allowed []string
		path    string
		want    string // Resolved path, relative to base.
		wantErr error
	}{
		{name: "relative", path: "a.txt", want: "work/a.txt"},
		{name: "absolute", path: filepath.Join(work, "a.txt"), want: "work/a.txt"},
		{name: "the working directory", path: ".", want: "work"},
		{name: "missing tail", path: "sub/new/file.txt", want: "work/sub/new/file.txt"},
		{name: "symlink inside", path: "in-link", want: "work/a.txt"},
		{name: "dot dot", path: "../outside/secret.txt", wantErr: tool.ErrOutsideWorkDir},
		{name: "absolute outside", path: filepath.Join(base, "outside", "secret.txt"), wantErr: tool.ErrOutsideWorkDir},
		{name: "root", path: "/", wantErr: tool.ErrOutsideWorkDir},
		{name: "sibling sharing a prefix", path: filepath.Join(base, "workx", "c.txt"), wantErr: tool.ErrOutsideWorkDir},
		{name: "symlink to a file outside", path: "out-file", wantErr: tool.ErrOutsideWorkDir},
		{name: "through a symlinked directory", path: "out-dir/secret.txt", wantErr: tool.ErrOutsideWorkDir},
		{name: "new file through a symlinked directory", path: "out-dir/new.txt", wantErr: tool.ErrOutsideWorkDir},
		{name: "dangling symlink outside", path: "dangling", wantErr: tool.ErrOutsideWorkDir},
		{name: "relative symlink escaping", path: "rel-escape", wantErr: tool.ErrOutsideWorkDir},
		{name: "symlink loop", path: "loop1", wantErr: errTooManyLinks},
		{name: "empty", path: "", wantErr: ErrInvalidParams},
		{name: "no working directory", workDir: "-", path: "a.txt", wantErr: ErrNoWorkDir},
		{name: "allowed directory", allowed: []string{filepath.Join(base, "allowed")}, path: filepath.Join(base, "allowed", "b.txt"), want: "allowed/b.txt"},
		{name: "relative allowed directory", allowed: []string{"../allowed"}, path: filepath.Join(base, "allowed", "b.txt"), want: "allowed/b.txt"},
		{name: "allowed elsewhere", allowed: []string{filepath.Join(base, "allowed")}, path: "out-file", wantErr: tool.ErrOutsideWorkDir},
		{name: "working directory through a symlink", workDir: filepath.Join(base, "worklink"), path: "a.txt", want: "work/a.txt"},
		{name: "absolute path through the symlinked working directory", workDir: filepath.Join(base, "worklink"), path: filepath.Join(base, "worklink", "a.txt"), want: "work/a.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := &tool.Env{WorkDir: work, AllowedDirs: tt.allowed}
			switch tt.workDir {
			case "":
			case "-":
				env.WorkDir = ""
			default:
				env.WorkDir = tt.workDir
			}
			got, err := ResolvePath(env, tt.path)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("ResolvePath(%q) = %q, %v; want error %v", tt.path, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ResolvePath(%q): %v", tt.path, err)
			}
			if want := filepath.Join(base, tt.want); got != want {
				t.Errorf("ResolvePath(%q) = %q; want %q", tt.path, got, want)
			}
		})
	}
}

func TestDisplayPath(t *testing.T) {
	t.Parallel()
	tests := []struct{ dir, path, want string }{
		{"/w", "/w/a/b.go", "a/b.go"},
		{"/w", "/w", "."},
		{"/w", "/wx/a.go", "/wx/a.go"},
		{"/w", "/other/a.go", "/other/a.go"},
		{"/w", "rel/a.go", "rel/a.go"},
		{"", "/w/a.go", "/w/a.go"},
		{"/w", "", ""},
	}
	for _, tt := range tests {
		if got := displayPath(tt.dir, tt.path); got != tt.want {
			t.Errorf("displayPath(%q, %q) = %q; want %q", tt.dir, tt.path, got, tt.want)
		}
	}
}

// FuzzResolvePath checks, for any path, that a resolved path is inside the
// working directory and holds no symlink left to follow.
func FuzzResolvePath(f *testing.F) {
	base, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	work := filepath.Join(base, "work")
	for _, d := range []string{"work/sub", "outside"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for name, target := range map[string]string{
		"work/up":      "..",
		"work/out":     filepath.Join(base, "outside"),
		"work/in":      "sub",
		"work/sub/dot": ".",
		"work/loop":    "loop",
		"work/dangle":  "../outside/new",
	} {
		if err := os.Symlink(target, filepath.Join(base, name)); err != nil {
			f.Fatal(err)
		}
	}
	for _, seed := range []string{"a", "../x", "up/work/sub", "out/x", "in/dot/dot/../x", "dangle", "loop/x", "/", "sub/../../work"} {
		f.Add(seed)
	}
	env := &tool.Env{WorkDir: work}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := ResolvePath(env, p)
		if err != nil {
			return
		}
		if !within(work, got) {
			t.Fatalf("ResolvePath(%q) = %q, outside %q", p, got, work)
		}
		if again, err := resolveLinks(got); err != nil || again != got {
			t.Fatalf("ResolvePath(%q) = %q, which still resolves to %q (%v)", p, got, again, err)
		}
	})
}
