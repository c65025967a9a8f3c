package tools

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/tool"
)

func TestWrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		existing map[string]string
		mode     os.FileMode // Of the existing file.
		params   string
		file     string // Path to check, relative to the working directory.
		want     string
		wantMode os.FileMode
		summary  string
		wantErr  error
	}{
		{name: "new file", params: `{"file_path": "a.txt", "content": "one\ntwo\n"}`, file: "a.txt", want: "one\ntwo\n",
			wantMode: newFileMode, summary: "Wrote 2 lines to a.txt"},
		{name: "missing parents", params: `{"file_path": "x/y/z.txt", "content": "z"}`, file: "x/y/z.txt", want: "z",
			wantMode: newFileMode, summary: "Wrote 1 line to x/y/z.txt"},
		{name: "empty content", params: `{"file_path": "e.txt", "content": ""}`, file: "e.txt", want: "", summary: "Wrote 0 lines to e.txt"},
		{name: "replace keeps the mode", existing: map[string]string{"run.sh": "old"}, mode: 0o755,
			params: `{"file_path": "run.sh", "content": "#!/bin/sh\n"}`, file: "run.sh", want: "#!/bin/sh\n", wantMode: 0o755},
		{name: "directory", existing: map[string]string{"d/f": ""}, params: `{"file_path": "d", "content": "x"}`, wantErr: ErrIsDirectory},
		{name: "outside", params: `{"file_path": "../x.txt", "content": "x"}`, wantErr: tool.ErrOutsideWorkDir},
		{name: "no content", params: `{"file_path": "a.txt"}`, wantErr: ErrInvalidParams},
		{name: "no path", params: `{"content": "x"}`, wantErr: ErrInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, env := workDir(t)
			writeFiles(t, dir, tt.existing)
			for name := range tt.existing {
				if tt.mode != 0 {
					if err := os.Chmod(filepath.Join(dir, name), tt.mode); err != nil {
						t.Fatal(err)
					}
				}
			}
			res, err := (&Write{}).Run(t.Context(), env, json.RawMessage(tt.params), &recorder{})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("got %v; want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			p := filepath.Join(dir, tt.file)
			got, err := os.ReadFile(p)
			if err != nil || string(got) != tt.want {
				t.Errorf("file %q, %v; want %q", got, err, tt.want)
			}
			if tt.wantMode != 0 && fileMode(t, p) != tt.wantMode {
				t.Errorf("mode %v; want %v", fileMode(t, p), tt.wantMode)
			}
			if tt.summary != "" && res.Summary != tt.summary {
				t.Errorf("summary %q; want %q", res.Summary, tt.summary)
			}
			entries, _ := os.ReadDir(filepath.Dir(p))
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".tmp") {
					t.Errorf("temporary file left: %s", e.Name())
				}
			}
		})
	}
}

// TestWriteThroughSymlink checks that writing a symlink inside the working
// directory replaces its target and keeps the link.
func TestWriteThroughSymlink(t *testing.T) {
	t.Parallel()
	dir, env := workDir(t)
	writeFiles(t, dir, map[string]string{"real.txt": "old"})
	if err := os.Symlink("real.txt", filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, &Write{}, env, map[string]string{"file_path": "link.txt", "content": "new"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "real.txt")); string(got) != "new" {
		t.Errorf("target holds %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "link.txt")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v, %v", fi, err)
	}
}

func TestEdit(t *testing.T) {
	t.Parallel()
	const src = "package main\n\nfunc a() {\n\tx := 1\n}\n\nfunc b() {\n\tx := 1\n}\n"
	tests := []struct {
		name     string
		existing string // Content of f.go; "-" for none.
		params   map[string]any
		want     string // f.go afterwards.
		isError  string // Text of an IsError result.
		content  string // Text the result contains.
		summary  string
		wantErr  error
	}{
		{name: "unique", existing: src, params: map[string]any{"old_string": "func a() {\n\tx := 1", "new_string": "func a() {\n\tx := 2"},
			want: strings.Replace(src, "x := 1", "x := 2", 1), summary: "Replaced 1 occurrence in f.go",
			content: "     3\tfunc a() {\n     4\t\tx := 2\n     5\t}"},
		{name: "ambiguous", existing: src, params: map[string]any{"old_string": "x := 1", "new_string": "x := 2"},
			want: src, isError: "old_string was found 2 times"},
		{name: "replace all", existing: src, params: map[string]any{"old_string": "x := 1", "new_string": "x := 2", "replace_all": true},
			want: strings.ReplaceAll(src, "x := 1", "x := 2"), summary: "Replaced 2 occurrences in f.go"},
		{name: "not found", existing: src, params: map[string]any{"old_string": "y := 1", "new_string": "y := 2"},
			want: src, isError: "old_string was not found"},
		{name: "whitespace matters", existing: src, params: map[string]any{"old_string": "    x := 1", "new_string": "x := 2"},
			want: src, isError: "old_string was not found"},
		{name: "identical", existing: src, params: map[string]any{"old_string": "x", "new_string": "x"}, want: src, wantErr: ErrInvalidParams},
		{name: "deletion", existing: "a\nb\nc\n", params: map[string]any{"old_string": "b\n", "new_string": ""}, want: "a\nc\n"},
		{name: "CRLF file", existing: "one\r\ntwo\r\nthree\r\n", params: map[string]any{"old_string": "one\ntwo", "new_string": "1\n2"},
			want: "1\r\n2\r\nthree\r\n"},
		{name: "create with empty old_string", existing: "-", params: map[string]any{"old_string": "", "new_string": "hello\n"},
			want: "hello\n", summary: "Wrote 1 line to f.go"},
		{name: "fill an empty file", existing: "", params: map[string]any{"old_string": "", "new_string": "hello\n"}, want: "hello\n"},
		{name: "empty old_string on a full file", existing: src, params: map[string]any{"old_string": "", "new_string": "x"},
			want: src, isError: "old_string is empty"},
		{name: "missing file", existing: "-", params: map[string]any{"old_string": "a", "new_string": "b"}, want: "-", wantErr: fs.ErrNotExist},
		{name: "outside", existing: src, params: map[string]any{"file_path": "../f.go", "old_string": "a", "new_string": "b"},
			want: src, wantErr: tool.ErrOutsideWorkDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, env := workDir(t)
			p := filepath.Join(dir, "f.go")
			if tt.existing != "-" {
				writeFiles(t, dir, map[string]string{"f.go": tt.existing})
				if err := os.Chmod(p, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if _, ok := tt.params["file_path"]; !ok {
				tt.params["file_path"] = "f.go"
			}
			res, err := run(t, &Edit{}, env, tt.params)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("got %v; want %v", err, tt.wantErr)
				}
			case err != nil:
				t.Errorf("Run: %v", err)
			case tt.isError != "":
				if !res.IsError || !strings.Contains(res.Content, tt.isError) {
					t.Errorf("got %+v; want an error result saying %q", res, tt.isError)
				}
			case res.IsError:
				t.Errorf("unexpected error result: %s", res.Content)
			}
			if tt.summary != "" && res.Summary != tt.summary {
				t.Errorf("summary %q; want %q", res.Summary, tt.summary)
			}
			if tt.content != "" && !strings.Contains(res.Content, tt.content) {
				t.Errorf("content %q lacks %q", res.Content, tt.content)
			}
			got, err := os.ReadFile(p)
			switch {
			case tt.want == "-":
				if !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("a file was created: %q", got)
				}
			case string(got) != tt.want:
				t.Errorf("file is %q; want %q", got, tt.want)
			case tt.existing != "-" && fileMode(t, p) != 0o600:
				t.Errorf("mode %v; want it kept (0600)", fileMode(t, p))
			}
		})
	}
}

func TestNumberedLines(t *testing.T) {
	t.Parallel()
	text := "a\nb\nc\nd\n"
	tests := []struct {
		from, to int
		want     string
	}{
		{1, 2, "     1\ta\n     2\tb"},
		{-3, 1, "     1\ta"},
		{4, 10, "     4\td"},
		{1, 1000, "     1\ta\n     2\tb\n     3\tc\n     4\td"},
	}
	for _, tt := range tests {
		if got := numberedLines(text, tt.from, tt.to); got != tt.want {
			t.Errorf("numberedLines(%d, %d) = %q; want %q", tt.from, tt.to, got, tt.want)
		}
	}
	long := strings.Repeat("x\n", 100)
	if n := strings.Count(numberedLines(long, 1, 100), "\n") + 1; n != snippetMaxLines {
		t.Errorf("%d lines; want at most %d", n, snippetMaxLines)
	}
}
