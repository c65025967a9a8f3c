package memory_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/memory"
)

// tree writes files (path → content; "" content means a directory) under root.
func tree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, p)
		if c == "" {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]string
		work  string // relative to the tree's root
		home  bool
		want  []string // relative paths, in order
	}{
		{
			name: "repository root down to the working directory",
			files: map[string]string{
				".git/":                 "",
				"AGENTS.md":             "root agents",
				"CLAUDE.md":             "root claude",
				"svc/api/CLAUDE.md":     "api claude",
				"svc/CLAUDE.local.md":   "svc local",
				"svc/api/handlers/x.go": "package x",
				"svc/other/AGENTS.md":   "not on the path",
			},
			work: "svc/api/handlers",
			want: []string{"AGENTS.md", "CLAUDE.md", "svc/CLAUDE.local.md", "svc/api/CLAUDE.md"},
		},
		{
			name:  "outside a repository only the working directory",
			files: map[string]string{"AGENTS.md": "above", "w/AGENTS.md": "here"},
			work:  "w",
			want:  []string{"w/AGENTS.md"},
		},
		{
			name: "the user's files first",
			files: map[string]string{
				"home/.claude/CLAUDE.md":        "mine",
				"home/.config/sluice/AGENTS.md": "mine too",
				"w/CLAUDE.md":                   "project",
			},
			work: "w",
			home: true,
			want: []string{"home/.claude/CLAUDE.md", "home/.config/sluice/AGENTS.md", "w/CLAUDE.md"},
		},
		{
			name:  "empty files and directories are skipped",
			files: map[string]string{"w/AGENTS.md": " \n\n", "w/CLAUDE.md/": ""},
			work:  "w",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			tree(t, root, tt.files)
			home := ""
			if tt.home {
				home = filepath.Join(root, "home")
			}
			got, err := memory.Load(filepath.Join(root, tt.work), home, memory.AllSources)
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, f := range got {
				rel, _ := filepath.Rel(root, f.Path)
				paths = append(paths, filepath.ToSlash(rel))
				if want := tt.files[filepath.ToSlash(rel)]; f.Content != want {
					t.Errorf("%s: content %q, want %q", rel, f.Content, want)
				}
			}
			if strings.Join(paths, ",") != strings.Join(tt.want, ",") {
				t.Errorf("read %v, want %v", paths, tt.want)
			}
		})
	}
}

func TestLoadSymlinkReadOnce(t *testing.T) {
	t.Parallel()
	w := t.TempDir()
	tree(t, w, map[string]string{"AGENTS.md": "shared instructions"})
	if err := os.Symlink("AGENTS.md", filepath.Join(w, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	got, err := memory.Load(w, "", memory.AllSources)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || filepath.Base(got[0].Path) != "AGENTS.md" {
		t.Fatalf("got %+v, want AGENTS.md once", got)
	}
}

func TestLoadCutsLargeFiles(t *testing.T) {
	t.Parallel()
	w := t.TempDir()
	big := strings.Repeat("é", memory.MaxFileSize) // 2 bytes each: twice the bound
	tree(t, w, map[string]string{"AGENTS.md": big})
	got, err := memory.Load(w, "", memory.AllSources)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("got %d files", len(got))
	}
	c := got[0].Content
	if !strings.HasSuffix(c, "[cut at 128 KiB]") || len(c) > memory.MaxFileSize+64 {
		t.Errorf("content of %d bytes ending %q; want it cut with a note", len(c), c[len(c)-30:])
	}
}

// A memory file that exists but cannot be opened (here a symlink loop, which
// stops root too) is an error, not silently skipped.
func TestLoadUnreadable(t *testing.T) {
	t.Parallel()
	w := t.TempDir()
	if err := os.Symlink("loop", filepath.Join(w, "loop")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop", filepath.Join(w, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	if _, err := memory.Load(w, "", memory.AllSources); err == nil {
		t.Fatal("a memory file that cannot be opened: no error")
	}
}

// Sources limit what is read: the user's files, the project's, the local one.
func TestLoadSources(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	tree(t, root, map[string]string{
		"home/.claude/CLAUDE.md": "mine", "w/AGENTS.md": "project", "w/CLAUDE.local.md": "local",
	})
	for _, tt := range []struct {
		from memory.Sources
		want string
	}{
		{memory.AllSources, "mine,project,local"},
		{memory.Sources{User: true}, "mine"},
		{memory.Sources{Project: true, Local: true}, "project,local"},
		{memory.Sources{}, ""},
	} {
		got, err := memory.Load(filepath.Join(root, "w"), filepath.Join(root, "home"), tt.from)
		if err != nil {
			t.Fatal(err)
		}
		var contents []string
		for _, f := range got {
			contents = append(contents, f.Content)
		}
		if strings.Join(contents, ",") != tt.want {
			t.Errorf("%+v: read %q, want %q", tt.from, contents, tt.want)
		}
	}
}
