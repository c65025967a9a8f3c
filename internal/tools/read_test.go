package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sluicehq/sluice/tool"
)

// numbered renders lines from..to of "line N" files as Read shows them.
func numbered(from, to int) string {
	var sb strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&sb, "%6d\tline %d\n", i, i)
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

func TestRead(t *testing.T) {
	t.Parallel()
	dir, env := workDir(t)
	var lines3000 strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&lines3000, "line %d\n", i)
	}
	writeFiles(t, dir, map[string]string{
		"small.txt":   "line 1\nline 2\nline 3\n",
		"no-eol.txt":  "line 1\nline 2",
		"crlf.txt":    "line 1\r\nline 2\r\n",
		"big.txt":     lines3000.String(),
		"empty.txt":   "",
		"long.txt":    strings.Repeat("é", 2500) + "\nline 2\n",
		"blank.txt":   "\n\n",
		"bin.dat":     "PK\x03\x04\x00\x00binary",
		"doc.pdf":     "%PDF-1.7\nstuff",
		"latin1.txt":  "caf\xe9 au lait\n",
		"sub/a.txt":   "a\n",
		"tabs.txt":    "\tindented\n",
		"escapes.txt": "\x1b[31mred\x1b[0m\n",
	})
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		params  string
		want    string
		summary string
		wantErr error
	}{
		{name: "whole file", params: `{"file_path": "small.txt"}`, want: numbered(1, 3), summary: "Read 3 lines"},
		{name: "absolute path", params: fmt.Sprintf(`{"file_path": %q}`, filepath.Join(dir, "small.txt")), want: numbered(1, 3)},
		{name: "no final newline", params: `{"file_path": "no-eol.txt"}`, want: numbered(1, 2)},
		{name: "CRLF", params: `{"file_path": "crlf.txt"}`, want: numbered(1, 2)},
		{name: "offset", params: `{"file_path": "small.txt", "offset": 2}`, want: numbered(2, 3), summary: "Read 2 lines"},
		{name: "offset 0 is the start", params: `{"file_path": "small.txt", "offset": 0}`, want: numbered(1, 3)},
		{name: "offset and limit", params: `{"file_path": "big.txt", "offset": 10, "limit": 3}`,
			want: numbered(10, 12) + "\n\n(Showing lines 10-12 of 3000. Pass offset=13 to read on.)", summary: "Read 3 lines"},
		{name: "default limit", params: `{"file_path": "big.txt"}`,
			want: numbered(1, 2000) + "\n\n(Showing lines 1-2000 of 3000. Pass offset=2001 to read on.)", summary: "Read 2000 lines"},
		{name: "last lines", params: `{"file_path": "big.txt", "offset": 2999}`, want: numbered(2999, 3000)},
		{name: "offset past the end", params: `{"file_path": "small.txt", "offset": 10}`, want: "The file has 3 lines; offset 10 is past its end.", summary: "Read 0 lines"},
		{name: "empty file", params: `{"file_path": "empty.txt"}`, want: "The file exists but is empty.", summary: "Read 0 lines"},
		{name: "blank lines", params: `{"file_path": "blank.txt"}`, want: "     1\t\n     2\t"},
		{name: "long line cut", params: `{"file_path": "long.txt"}`,
			want: "     1\t" + strings.Repeat("é", 2000) + " … [line cut]\n     2\tline 2"},
		{name: "tabs kept", params: `{"file_path": "tabs.txt"}`, want: "     1\t\tindented"},
		{name: "terminal escapes are text", params: `{"file_path": "escapes.txt"}`, want: "     1\t\x1b[31mred\x1b[0m"},
		{name: "latin-1 is text", params: `{"file_path": "latin1.txt"}`, want: "     1\tcaf\xe9 au lait"},
		{name: "binary refused", params: `{"file_path": "bin.dat"}`, wantErr: ErrBinaryFile},
		{name: "PDF refused", params: `{"file_path": "doc.pdf"}`, wantErr: ErrBinaryFile},
		{name: "directory refused", params: `{"file_path": "sub"}`, wantErr: ErrIsDirectory},
		{name: "FIFO refused", params: `{"file_path": "fifo"}`, wantErr: ErrInvalidParams},
		{name: "missing file", params: `{"file_path": "nope.txt"}`, wantErr: fs.ErrNotExist},
		{name: "outside", params: `{"file_path": "../x.txt"}`, wantErr: tool.ErrOutsideWorkDir},
		{name: "bad limit", params: `{"file_path": "small.txt", "limit": 0}`, wantErr: ErrInvalidParams},
		{name: "no path", params: `{}`, wantErr: ErrInvalidParams},
		{name: "offset is not a number", params: `{"file_path": "small.txt", "offset": "2"}`, wantErr: ErrInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := (&Read{}).Run(t.Context(), env, json.RawMessage(tt.params), &recorder{})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("got %v; want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Content != tt.want {
				t.Errorf("got\n%.500q\nwant\n%.500q", res.Content, tt.want)
			}
			if tt.summary != "" && res.Summary != tt.summary {
				t.Errorf("summary %q; want %q", res.Summary, tt.summary)
			}
			if res.IsError {
				t.Error("IsError set")
			}
		})
	}
}

func TestReadOutputIsBounded(t *testing.T) {
	t.Parallel()
	dir, env := workDir(t)
	line := strings.Repeat("x", 1000) + "\n"
	writeFiles(t, dir, map[string]string{"wide.txt": strings.Repeat(line, 1000)})
	res, err := (&Read{}).Run(t.Context(), env, json.RawMessage(`{"file_path": "wide.txt"}`), &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) > maxReadOutput+2*len(line) {
		t.Errorf("%d bytes; want about %d at most", len(res.Content), maxReadOutput)
	}
	if !strings.Contains(res.Content, "of 1000 (output limit reached). Pass offset=") {
		t.Errorf("no note saying where to read on: %q", res.Content[len(res.Content)-200:])
	}
}

func TestFileToolsCompact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tool   tool.Tool
		params string
		want   string
	}{
		{&Read{DisplayDir: "/w"}, `{"file_path": "/w/src/a.go"}`, "src/a.go"},
		{&Read{DisplayDir: "/w"}, `{"file_path": "/elsewhere/a.go"}`, "/elsewhere/a.go"},
		{&Read{}, `{"file_path": "/w/a.go"}`, "/w/a.go"},
		{&Read{DisplayDir: "/w"}, `{"file_path": "rel/a.go"}`, "rel/a.go"},
		{&Write{DisplayDir: "/w"}, `{"file_path": "/w/b.go", "content": "x"}`, "b.go"},
		{&Edit{DisplayDir: "/w"}, `{"file_path": "/w/c.go"}`, "c.go"},
		{&Edit{}, `garbage`, ""},
		{&Glob{}, `{"pattern": "**/*.go"}`, "**/*.go"},
		{&Glob{DisplayDir: "/w"}, `{"pattern": "*.go", "path": "/w/src"}`, "*.go in src"},
		{&Grep{}, `{"pattern": "func main"}`, `"func main"`},
		{&Grep{DisplayDir: "/w"}, `{"pattern": "TODO", "path": "/w/src", "glob": "*.go"}`, `"TODO" in src (*.go)`},
		{&Grep{}, `{"pattern": "x", "type": "py"}`, `"x" (type py)`},
	}
	for _, tt := range tests {
		if got := tt.tool.Compact(json.RawMessage(tt.params)); got != tt.want {
			t.Errorf("%s.Compact(%s) = %q; want %q", tt.tool.Name(), tt.params, got, tt.want)
		}
	}
}

func TestBuiltins(t *testing.T) {
	t.Parallel()
	want := map[string]tool.Kind{"Bash": tool.Execute, "Read": tool.ReadOnly, "Write": tool.Edit, "Edit": tool.Edit, "Glob": tool.ReadOnly, "Grep": tool.ReadOnly, "TodoWrite": tool.ReadOnly, "WebFetch": tool.Execute, "BashOutput": tool.ReadOnly, "KillShell": tool.ReadOnly}
	got := Builtins()
	if len(got) != len(want) {
		t.Fatalf("%d tools; want %d", len(got), len(want))
	}
	for _, tl := range got {
		kind, ok := want[tl.Name()]
		if !ok || tl.Kind() != kind {
			t.Errorf("%s: kind %v; want %v", tl.Name(), tl.Kind(), kind)
		}
		if len(tl.Description()) < 100 {
			t.Errorf("%s: description too short", tl.Name())
		}
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(tl.Schema(), &schema); err != nil {
			t.Errorf("%s: schema: %v", tl.Name(), err)
			continue
		}
		if schema.Type != "object" || len(schema.Required) == 0 {
			t.Errorf("%s: schema %+v", tl.Name(), schema)
		}
		for _, r := range schema.Required {
			if _, ok := schema.Properties[r]; !ok {
				t.Errorf("%s: required %q is not a property", tl.Name(), r)
			}
		}
	}
	if r := BuiltinsIn("/w")[1].Compact(json.RawMessage(`{"file_path": "/w/x"}`)); r != "x" {
		t.Errorf("BuiltinsIn does not show paths relative to its directory: %q", r)
	}
}

// The schemas' property names are Claude Code's: models are trained on them.
func TestSchemaProperties(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"Bash":       "command description run_in_background timeout",
		"Read":       "file_path limit offset",
		"Write":      "content file_path",
		"Edit":       "file_path new_string old_string replace_all",
		"Glob":       "path pattern",
		"Grep":       "-A -B -C -i -n glob head_limit multiline offset output_mode path pattern type",
		"TodoWrite":  "todos",
		"WebFetch":   "prompt url",
		"BashOutput": "bash_id filter",
		"KillShell":  "shell_id",
	}
	for _, tl := range Builtins() {
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(tl.Schema(), &schema); err != nil {
			t.Fatal(err)
		}
		var names []string
		for n := range schema.Properties {
			names = append(names, n)
		}
		slices.Sort(names)
		if got := strings.Join(names, " "); got != want[tl.Name()] {
			t.Errorf("%s properties %q; want %q", tl.Name(), got, want[tl.Name()])
		}
	}
}

func fileMode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}
