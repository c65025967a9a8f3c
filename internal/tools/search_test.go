package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/tool"
)

// tree creates files with modification times: files[i] is i hours after a
// fixed time, so that the newest-first order is known.
func tree(t *testing.T, dir string, files [][2]string) {
	t.Helper()
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, f := range files {
		writeFiles(t, dir, map[string]string{f[0]: f[1]})
		mod := base.Add(time.Duration(i) * time.Hour)
		if err := os.Chtimes(filepath.Join(dir, f[0]), mod, mod); err != nil {
			t.Fatal(err)
		}
	}
}

// expand replaces {d} with dir.
func expand(s, dir string) string { return strings.ReplaceAll(s, "{d}", dir) }

func TestGlob(t *testing.T) {
	t.Parallel()
	dir, env := workDir(t)
	tree(t, dir, [][2]string{
		{"README.md", ""},
		{"a.go", ""},
		{"src/deep/c.go", ""},
		{"src/b.go", ""},
		{".git/config.go", ""},
		{"src/z.go", ""},
		{"notes.txt", ""},
	})
	// Same time as src/z.go: ties go by path.
	tied := time.Date(2025, 1, 1, 5, 0, 0, 0, time.UTC)
	writeFiles(t, dir, map[string]string{"src/y.go": ""})
	if err := os.Chtimes(filepath.Join(dir, "src/y.go"), tied, tied); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	tests := []struct {
		name    string
		glob    *Glob
		params  map[string]any
		want    string
		wantErr error
	}{
		{name: "everywhere, newest first", params: map[string]any{"pattern": "**/*.go"},
			want: "{d}/src/y.go\n{d}/src/z.go\n{d}/src/b.go\n{d}/src/deep/c.go\n{d}/a.go"},
		{name: "top level", params: map[string]any{"pattern": "*.go"}, want: "{d}/a.go"},
		{name: "below a prefix", params: map[string]any{"pattern": "src/**/c.go"}, want: "{d}/src/deep/c.go"},
		{name: "in a directory", params: map[string]any{"pattern": "*.go", "path": "src/deep"}, want: "{d}/src/deep/c.go"},
		{name: "absolute directory", params: map[string]any{"pattern": "*.go", "path": filepath.Join(dir, "src/deep")}, want: "{d}/src/deep/c.go"},
		{name: "absolute pattern", params: map[string]any{"pattern": filepath.Join(dir, "src/deep") + "/*.go"}, want: "{d}/src/deep/c.go"},
		{name: "alternatives", params: map[string]any{"pattern": "*.{md,txt}"}, want: "{d}/notes.txt\n{d}/README.md"},
		{name: ".git skipped", params: map[string]any{"pattern": "**/config.go"}, want: "No files found"},
		{name: "no match", params: map[string]any{"pattern": "**/*.rs"}, want: "No files found"},
		{name: "prefix that does not exist", params: map[string]any{"pattern": "nope/**/*.go"}, want: "No files found"},
		{name: "capped", glob: &Glob{MaxResults: 2}, params: map[string]any{"pattern": "**/*.go"},
			want: "{d}/src/y.go\n{d}/src/z.go\n(Showing the 2 most recently modified of 5 files. Use a more specific pattern or path.)"},
		{name: "directory that does not exist", params: map[string]any{"pattern": "*", "path": "nope"}, wantErr: fs.ErrNotExist},
		{name: "path is a file", params: map[string]any{"pattern": "*", "path": "a.go"}, wantErr: ErrNotDirectory},
		{name: "pattern escaping", params: map[string]any{"pattern": "../**/*.go"}, wantErr: tool.ErrOutsideWorkDir},
		{name: "path outside", params: map[string]any{"pattern": "*", "path": outside}, wantErr: tool.ErrOutsideWorkDir},
		{name: "bad pattern", params: map[string]any{"pattern": "src/[a"}, wantErr: ErrInvalidParams},
		{name: "empty pattern", params: map[string]any{"pattern": ""}, wantErr: ErrInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := tt.glob
			if g == nil {
				g = &Glob{}
			}
			res, err := run(t, g, env, tt.params)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("got %v; want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if want := expand(tt.want, dir); res.Content != want {
				t.Errorf("got\n%s\nwant\n%s", res.Content, want)
			}
		})
	}
}

func TestGrep(t *testing.T) {
	t.Parallel()
	dir, env := workDir(t)
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret.txt": "TODO secret\n"})
	tree(t, dir, [][2]string{
		{"readme.md", "# Title\nSome TODO here\n"},
		{"a.go", "package a\n\nfunc A() {\n\t// TODO: one\n}\n"},
		{"b/b.go", "package b\n\nfunc B() {}\n// todo: two\nfunc C() {}\n"},
		{"c.py", "def f():\n    pass  # TODO three\n"},
		{"ctx.txt", "l1\nl2\nmatch3\nl4\nl5\nl6\nl7\nmatch8\nl9\n"},
		{".git/x.go", "TODO\n"},
		{"bin.dat", "TODO\x00\x01"},
		{"big.txt", "BIG " + strings.Repeat("x", 2000) + "\n"},
		{"crlf.txt", "first\r\nsecond\r\n"},
	})
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	small := &Grep{MaxFileSize: 1000}
	tests := []struct {
		name    string
		grep    *Grep
		params  map[string]any
		want    string
		summary string
		wantErr error
	}{
		{name: "files, newest first", params: map[string]any{"pattern": "TODO"},
			want: "Found 3 files\n{d}/c.py\n{d}/a.go\n{d}/readme.md", summary: "Found 3 files"},
		{name: "case-insensitive", params: map[string]any{"pattern": "todo", "-i": true},
			want: "Found 4 files\n{d}/c.py\n{d}/b/b.go\n{d}/a.go\n{d}/readme.md"},
		{name: "type", params: map[string]any{"pattern": "todo", "-i": true, "type": "go"},
			want: "Found 2 files\n{d}/b/b.go\n{d}/a.go"},
		{name: "glob by name", params: map[string]any{"pattern": "todo", "-i": true, "glob": "*.{py,md}"},
			want: "Found 2 files\n{d}/c.py\n{d}/readme.md"},
		{name: "glob by path", params: map[string]any{"pattern": "todo", "-i": true, "glob": "b/**"},
			want: "Found 1 file\n{d}/b/b.go"},
		{name: "glob excluding", params: map[string]any{"pattern": "todo", "-i": true, "glob": "!*.go"},
			want: "Found 2 files\n{d}/c.py\n{d}/readme.md"},
		{name: "in a directory", params: map[string]any{"pattern": "func", "path": "b"},
			want: "Found 1 file\n{d}/b/b.go"},
		{name: "no match", params: map[string]any{"pattern": "nothing here"}, want: "No files found", summary: "Found 0 files"},
		{name: "count", params: map[string]any{"pattern": "func", "output_mode": "count"},
			want: "{d}/a.go:1\n{d}/b/b.go:2\n\nFound 3 matches in 2 files.", summary: "Found 3 matches in 2 files"},
		{name: "count in one file", params: map[string]any{"pattern": "func", "output_mode": "count", "path": "b/b.go"},
			want: "2\n\nFound 2 matches in 1 file."},
		{name: "count, no match", params: map[string]any{"pattern": "zzz", "output_mode": "count"}, want: "No matches found"},
		{name: "content", params: map[string]any{"pattern": "func", "output_mode": "content"},
			want: "{d}/a.go:3:func A() {\n{d}/b/b.go:3:func B() {}\n{d}/b/b.go:5:func C() {}", summary: "Found 3 matches in 2 files"},
		{name: "content in one file", params: map[string]any{"pattern": "func", "output_mode": "content", "path": "b/b.go"},
			want: "3:func B() {}\n5:func C() {}"},
		{name: "content without numbers", params: map[string]any{"pattern": "func", "output_mode": "content", "path": "b/b.go", "-n": false},
			want: "func B() {}\nfunc C() {}"},
		{name: "content, CRLF", params: map[string]any{"pattern": "second$", "output_mode": "content", "path": "crlf.txt"},
			want: "2:second"},
		{name: "content, no match", params: map[string]any{"pattern": "zzz", "output_mode": "content"}, want: "No matches found"},
		{name: "context", params: map[string]any{"pattern": "match", "output_mode": "content", "path": "ctx.txt", "-C": 1},
			want: "2-l2\n3:match3\n4-l4\n--\n7-l7\n8:match8\n9-l9"},
		{name: "after", params: map[string]any{"pattern": "match", "output_mode": "content", "path": "ctx.txt", "-A": 1},
			want: "3:match3\n4-l4\n--\n8:match8\n9-l9"},
		{name: "before, overlapping", params: map[string]any{"pattern": "match", "output_mode": "content", "path": "ctx.txt", "-B": 5},
			want: "1-l1\n2-l2\n3:match3\n4-l4\n5-l5\n6-l6\n7-l7\n8:match8"},
		{name: "-A overrides -C", params: map[string]any{"pattern": "match8", "output_mode": "content", "path": "ctx.txt", "-C": 2, "-A": 0},
			want: "6-l6\n7-l7\n8:match8"},
		{name: "context across files", params: map[string]any{"pattern": "func [AB]", "output_mode": "content", "-A": 1},
			want: "{d}/a.go:3:func A() {\n{d}/a.go-4-\t// TODO: one\n--\n{d}/b/b.go:3:func B() {}\n{d}/b/b.go-4-// todo: two"},
		{name: "head_limit", params: map[string]any{"pattern": "match", "output_mode": "content", "path": "ctx.txt", "-C": 1, "head_limit": 2},
			want: "2-l2\n3:match3\n(Stopped at head_limit=2; pass offset=2 to see more.)"},
		{name: "head_limit stops the search", params: map[string]any{"pattern": "func", "output_mode": "content", "head_limit": 1},
			want: "{d}/a.go:3:func A() {\n(Stopped at head_limit=1; pass offset=1 to see more.)", summary: "Found at least 3 matches in 2 files"},
		{name: "offset", params: map[string]any{"pattern": "match", "output_mode": "content", "path": "ctx.txt", "-C": 1, "offset": 3},
			want: "--\n7-l7\n8:match8\n9-l9"},
		{name: "head_limit on files", params: map[string]any{"pattern": "TODO", "head_limit": 1, "offset": 1},
			want: "Found 3 files\n{d}/a.go\n(Stopped at head_limit=1; pass offset=2 to see more.)"},
		{name: "multiline", params: map[string]any{"pattern": `B\(\) \{\}\n// todo`, "output_mode": "content", "multiline": true},
			want: "{d}/b/b.go:3:func B() {}\n{d}/b/b.go:4:// todo: two"},
		{name: "multiline dot", params: map[string]any{"pattern": `A\(\).*one`, "output_mode": "content", "multiline": true},
			want: "{d}/a.go:3:func A() {\n{d}/a.go:4:\t// TODO: one"},
		{name: "dot stays on a line without multiline", params: map[string]any{"pattern": `A\(\).*one`}, want: "No files found"},
		{name: "multiline anchors are per line", params: map[string]any{"pattern": `^func C`, "output_mode": "count", "multiline": true},
			want: "{d}/b/b.go:1\n\nFound 1 match in 1 file."},
		{name: "large files skipped", grep: small, params: map[string]any{"pattern": "BIG"}, want: "No files found"},
		{name: "large files searched under the limit", params: map[string]any{"pattern": "BIG"}, want: "Found 1 file\n{d}/big.txt"},
		{name: "output cut", grep: &Grep{MaxOutput: 20}, params: map[string]any{"pattern": "l", "output_mode": "content", "path": "ctx.txt"},
			want:    "1:l1\n2:l2\n4:l4\n5:l5\n(Output cut at 20 bytes; narrow the search, or page with head_limit and offset=4.)",
			summary: "Found at least 7 matches in 1 file"},
		{name: "bad regexp", params: map[string]any{"pattern": "func("}, wantErr: ErrInvalidParams},
		{name: "bad type", params: map[string]any{"pattern": "x", "type": "cobol"}, wantErr: ErrInvalidParams},
		{name: "bad glob", params: map[string]any{"pattern": "x", "glob": "[a"}, wantErr: ErrInvalidParams},
		{name: "bad mode", params: map[string]any{"pattern": "x", "output_mode": "lines"}, wantErr: ErrInvalidParams},
		{name: "empty pattern", params: map[string]any{"pattern": ""}, wantErr: ErrInvalidParams},
		{name: "outside", params: map[string]any{"pattern": "x", "path": outside}, wantErr: tool.ErrOutsideWorkDir},
		{name: "missing path", params: map[string]any{"pattern": "x", "path": "nope"}, wantErr: fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := tt.grep
			if g == nil {
				g = &Grep{}
			}
			res, err := run(t, g, env, tt.params)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("got %v; want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if want := expand(tt.want, dir); res.Content != want {
				t.Errorf("got\n%s\nwant\n%s", res.Content, want)
			}
			if tt.summary != "" && res.Summary != tt.summary {
				t.Errorf("summary %q; want %q", res.Summary, tt.summary)
			}
		})
	}
}

func TestGrepCancelled(t *testing.T) {
	t.Parallel()
	dir, env := workDir(t)
	writeFiles(t, dir, map[string]string{"a.txt": "x\n"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, tl := range []tool.Tool{&Grep{}, &Glob{}} {
		if _, err := tl.Run(ctx, env, json.RawMessage(`{"pattern": "x*"}`), &recorder{}); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: got %v; want context.Canceled", tl.Name(), err)
		}
	}
}
