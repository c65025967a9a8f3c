package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck type-checks a small module for darwin: what builds only on
// Linux is found, in a package or in its tests, and a package with a
// build-tagged counterpart passes. One module with a package per case:
// the standard library is type-checked once for all of them.
func TestCheck(t *testing.T) {
	t.Parallel()
	const linuxOnly = "import \"syscall\"\n\nfunc attr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }\n"
	tests := []struct {
		pkg     string
		files   map[string]string
		wantErr string // "" when the package type-checks
	}{
		{
			pkg:     "untagged", // a Linux-only field in an untagged file
			files:   map[string]string{"p.go": "package untagged\n\n" + linuxOnly},
			wantErr: "unknown field Pdeathsig",
		},
		{
			pkg: "tagged", // the same with a counterpart for the other systems
			files: map[string]string{
				"p_linux.go": "package tagged\n\n" + linuxOnly,
				"p_other.go": "//go:build !linux\n\npackage tagged\n\nimport \"syscall\"\n\nfunc attr() *syscall.SysProcAttr { return nil }\n",
			},
		},
		{
			pkg: "intest", // a Linux-only call in a test
			files: map[string]string{
				"p.go":      "package intest\n",
				"p_test.go": "package intest\n\nimport (\n\t\"syscall\"\n\t\"testing\"\n)\n\nfunc TestMount(t *testing.T) { _ = syscall.Mount(\"\", \"\", \"\", 0, \"\") }\n",
			},
			wantErr: "undefined: syscall.Mount",
		},
		{
			pkg:     "body", // an error inside a function body
			files:   map[string]string{"p.go": "package body\n\nfunc f() { var unused int }\n"},
			wantErr: "declared and not used",
		},
	}
	// Resolved, as go list reports the files' paths (on macOS the
	// temporary directory is behind a symlink).
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"go.mod": "module example.com/m\n\ngo 1.26\n"}
	for _, tt := range tests {
		for name, content := range tt.files {
			files[filepath.Join(tt.pkg, name)] = content
		}
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err = check(dir, "darwin", "arm64", "./...")
	if err == nil {
		t.Fatal("check found no problem")
	}
	reported := map[string]string{} // package → its problems
	for _, line := range strings.Split(err.Error(), "\n") {
		if rel, ok := strings.CutPrefix(line, dir+string(filepath.Separator)); ok {
			pkg, _, _ := strings.Cut(rel, string(filepath.Separator))
			reported[pkg] += line + "\n"
		}
	}
	for _, tt := range tests {
		got := reported[tt.pkg]
		if tt.wantErr == "" && got != "" || !strings.Contains(got, tt.wantErr) {
			t.Errorf("package %s: problems %q, want %q", tt.pkg, got, tt.wantErr)
		}
	}
}
