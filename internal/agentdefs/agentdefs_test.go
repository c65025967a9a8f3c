package agentdefs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/agent"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    agent.Subagent
		wantErr bool
	}{
		{
			name: "Claude Code's example",
			in:   "---\nname: code-reviewer\ndescription: Reviews code. Use after changes.\ntools: Read, Grep, Glob\nmodel: sonnet\n---\n\nYou are a senior reviewer.\n\nBe brief.\n",
			want: agent.Subagent{Name: "code-reviewer", Description: "Reviews code. Use after changes.", Tools: []string{"Read", "Grep", "Glob"}, Model: "sonnet", Prompt: "You are a senior reviewer.\n\nBe brief."},
		},
		{
			name: "tools as a YAML list, CRLF line ends, a BOM",
			in:   "\uFEFF---\r\nname: x\r\ndescription: d\r\ntools:\r\n  - Bash\r\n  - Read\r\n---\r\nbody\r\n",
			want: agent.Subagent{Name: "x", Description: "d", Tools: []string{"Bash", "Read"}, Prompt: "body"},
		},
		{
			name: "no tools line: all tools; no name: the file's",
			in:   "---\ndescription: d\n---\nprompt",
			want: agent.Subagent{Name: "fallback", Description: "d", Prompt: "prompt"},
		},
		{
			name: "tools * is all tools",
			in:   "---\nname: a\ntools: \"*\"\n---\n",
			want: agent.Subagent{Name: "a"},
		},
		{
			name: "an empty tools list is no tools",
			in:   "---\nname: a\ntools: []\n---\n",
			want: agent.Subagent{Name: "a"},
		},
		{name: "no front matter", in: "just text", wantErr: true},
		{name: "front matter never ends", in: "---\nname: a\n", wantErr: true},
		{name: "bad YAML", in: "---\nname: [a\n---\n", wantErr: true},
		{name: "a name with spaces", in: "---\nname: two words\n---\n", wantErr: true},
		{name: "tools of the wrong shape", in: "---\nname: a\ntools: {x: 1}\n---\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse([]byte(tt.in), "fallback")
			if tt.wantErr {
				if !errors.Is(err, ErrBad) {
					t.Fatalf("Parse = %+v, %v; want ErrBad", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestParseJSON(t *testing.T) {
	t.Parallel()
	got, err := ParseJSON(`{"reviewer": {"description": "Reviews.", "prompt": "You review.", "tools": ["Read", "Grep"], "model": "haiku"},
		"any": {"description": "All tools.", "prompt": "Go.", "tools": "Bash, Read"}, "bare": {"description": "d", "prompt": "p"}}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []agent.Subagent{
		{Name: "any", Description: "All tools.", Prompt: "Go.", Tools: []string{"Bash", "Read"}, Source: "--agents"},
		{Name: "bare", Description: "d", Prompt: "p", Source: "--agents"},
		{Name: "reviewer", Description: "Reviews.", Prompt: "You review.", Tools: []string{"Read", "Grep"}, Model: "haiku", Source: "--agents"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %#v\nwant %#v", got, want)
	}
	file := filepath.Join(t.TempDir(), "agents.json")
	os.WriteFile(file, []byte(`{"f": {"description": "from a file", "prompt": "p"}}`), 0o600)
	if got, err := ParseJSON(file); err != nil || len(got) != 1 || got[0].Description != "from a file" {
		t.Errorf("from a file: %+v, %v", got, err)
	}
	for _, bad := range []string{`{"a": 1}`, `{"a": {"tools": 3}}`, `{"two words": {}}`, `{`, "/no/such/file"} {
		if _, err := ParseJSON(bad); err == nil {
			t.Errorf("ParseJSON(%q) accepted", bad)
		}
	}
	if got, err := ParseJSON("  "); err != nil || got != nil {
		t.Errorf("empty: %+v, %v", got, err)
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	home, proj := t.TempDir(), t.TempDir()
	write := func(dir, name, text string) {
		t.Helper()
		d := filepath.Join(dir, ".claude", "agents")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(home, "shared.md", "---\nname: shared\ndescription: the user's\n---\nuser prompt")
	write(home, "mine.md", "---\nname: mine\ndescription: only the user's\n---\n")
	write(proj, "shared.md", "---\nname: shared\ndescription: the project's\n---\nproject prompt")
	write(proj, "notes.txt", "not a definition")
	got, err := Load(home, proj, Sources{User: true, Project: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "mine" || got[1].Name != "shared" || got[1].Prompt != "project prompt" ||
		got[1].Source != filepath.Join(proj, ".claude", "agents", "shared.md") {
		t.Errorf("loaded %+v", got)
	}
	if got, _ := Load(home, proj, Sources{User: true}); len(got) != 2 || got[1].Prompt != "user prompt" {
		t.Errorf("user only: %+v", got)
	}
	if got, err := Load(t.TempDir(), t.TempDir(), Sources{User: true, Project: true}); err != nil || len(got) != 0 {
		t.Errorf("no directories: %+v, %v", got, err)
	}
	write(proj, "broken.md", "no front matter")
	if _, err := Load(home, proj, Sources{Project: true}); !errors.Is(err, ErrBad) {
		t.Errorf("a broken file: %v", err)
	}
	write(proj, "big.md", "---\nname: big\n---\n"+string(make([]byte, MaxFileBytes)))
	os.Remove(filepath.Join(proj, ".claude", "agents", "broken.md"))
	if _, err := Load(home, proj, Sources{Project: true}); !errors.Is(err, ErrBad) {
		t.Errorf("a file past the bound: %v", err)
	}
}

func TestFind(t *testing.T) {
	t.Parallel()
	defs := []agent.Subagent{{Name: "a"}}
	if d, ok := Find(defs, "a"); !ok || d.Name != "a" {
		t.Error("a not found")
	}
	if d, ok := Find(defs, "general-purpose"); !ok || d.Source != "built-in" {
		t.Error("general-purpose not found")
	}
	if _, ok := Find(defs, "b"); ok {
		t.Error("b found")
	}
}

// FuzzParse: whatever a definition file holds, Parse never panics, and
// what it accepts has a one-word name.
func FuzzParse(f *testing.F) {
	f.Add([]byte("---\nname: a\ndescription: d\ntools: Read, Grep\nmodel: haiku\n---\nprompt\n"))
	f.Add([]byte("---\r\ntools:\r\n - a\r\n---"))
	f.Add([]byte("---\nname: [\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data, "f")
		if err == nil && (d.Name == "" || strings.ContainsAny(d.Name, " \t\n")) {
			t.Fatalf("accepted %+v", d)
		}
	})
}

// FuzzParseJSON: whatever --agents says, ParseJSON never panics.
func FuzzParseJSON(f *testing.F) {
	f.Add(`{"a": {"description": "d", "prompt": "p", "tools": ["Read"], "model": "sonnet"}}`)
	f.Add(`{"a": {"tools": "Read, *"}}`)
	f.Fuzz(func(t *testing.T, spec string) {
		if !strings.HasPrefix(strings.TrimSpace(spec), "{") {
			return // a path: not what this target feeds
		}
		defs, err := ParseJSON(spec)
		for _, d := range defs {
			if err == nil && d.Name == "" {
				t.Fatalf("accepted a nameless definition: %+v", defs)
			}
		}
	})
}
