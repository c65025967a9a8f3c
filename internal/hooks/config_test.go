package hooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		doc     string
		want    map[Event]int // hooks per event
		wantErr string
	}{
		{name: "empty file", doc: "", want: map[Event]int{}},
		{name: "no hooks", doc: `{"model":"x"}`, want: map[Event]int{}},
		{name: "Claude Code's shape", doc: `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"a","timeout":5}]},{"matcher":"Edit|Write","hooks":[{"type":"command","command":"b"},{"type":"command","command":"c"}]}],"Stop":[{"hooks":[{"type":"command","command":"d"}]}]}}`,
			want: map[Event]int{PreToolUse: 3, Stop: 1}},
		{name: "bad regexp", doc: `{"hooks":{"PreToolUse":[{"matcher":"(","hooks":[]}]}}`, wantErr: "matcher"},
		{name: "command without command", doc: `{"hooks":{"Stop":[{"hooks":[{"type":"command"}]}]}}`, wantErr: "without a command"},
		{name: "not JSON", doc: `{`, wantErr: "unexpected end"},
		{name: "hooks of the wrong shape", doc: `{"hooks":[]}`, wantErr: "cannot unmarshal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			conf, err := Parse([]byte(tt.doc))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[Event]int{}
			for ev, ms := range conf {
				for _, m := range ms {
					got[ev] += len(m.Hooks)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for ev, n := range tt.want {
				if got[ev] != n {
					t.Errorf("%s: %d hooks, want %d", ev, got[ev], n)
				}
			}
		})
	}
}

// TestLoad: the three files merge, the user's first; a missing file is
// not an error, a bad one names itself.
func TestLoad(t *testing.T) {
	t.Parallel()
	home, project := t.TempDir(), t.TempDir()
	write := func(path, doc string) {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := Files(home, project)
	write(files[0], `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"user"}]}]}}`)
	write(files[2], `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"local"}]}],"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"pre"}]}]}}`)
	conf, err := Load(files...)
	if err != nil {
		t.Fatal(err)
	}
	if len(conf[Stop]) != 2 || conf[Stop][0].Hooks[0].Command != "user" || conf[Stop][1].Hooks[0].Command != "local" {
		t.Errorf("Stop = %+v, want user's then local", conf[Stop])
	}
	if conf[Stop][1].Hooks[0].Source != files[2] {
		t.Errorf("source = %q", conf[Stop][1].Hooks[0].Source)
	}
	if conf.Empty() {
		t.Error("Empty")
	}
	write(files[1], `{"hooks":`)
	if _, err := Load(files...); err == nil || !strings.Contains(err.Error(), files[1]) {
		t.Errorf("err = %v, want one naming %s", err, files[1])
	}
}

func TestMatcher(t *testing.T) {
	t.Parallel()
	tests := []struct {
		matcher, target string
		want            bool
	}{
		{"", "Bash", true}, {"*", "anything", true},
		{"Bash", "Bash", true}, {"Bash", "BashOutput", false}, {"Bash", "bash", false},
		{"Edit|Write", "Write", true}, {"Edit|Write", "Read", false},
		{"Notebook.*", "NotebookEdit", true}, {"mcp__memory__.*", "mcp__fs__read", false},
		{"startup", "startup", true}, {"auto", "manual", false},
	}
	for _, tt := range tests {
		m := Matcher{Matcher: tt.matcher}
		if err := m.compile(); err != nil {
			t.Fatal(err)
		}
		if got := m.Matches(tt.target); got != tt.want {
			t.Errorf("%q matches %q = %v, want %v", tt.matcher, tt.target, got, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"a","timeout":5}]}]}}`))
	f.Add([]byte(`{"hooks":{"Stop":[{"matcher":"[","hooks":[]}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		conf, err := Parse(data)
		if err != nil {
			return
		}
		for _, ms := range conf {
			for _, m := range ms {
				m.Matches("Bash")
			}
		}
	})
}

func FuzzOutput(f *testing.F) {
	f.Add([]byte(`{"continue":false,"hookSpecificOutput":{"permissionDecision":"deny"}}`), 0)
	f.Add([]byte(`plain`), 2)
	f.Fuzz(func(t *testing.T, stdout []byte, code int) {
		for _, ev := range []Event{PreToolUse, PostToolUse, UserPromptSubmit, Stop} {
			var o Outcome
			o.add(ev, result{code: code, stdout: stdout, stderr: stdout})
			if o.Permission != "" && permissionRank[o.Permission] == 0 {
				t.Fatalf("unknown permission %q", o.Permission)
			}
		}
	})
}
