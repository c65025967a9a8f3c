package cli

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/internal/hooks"
)

// The working directory's AGENTS.md and the user's ~/.claude/CLAUDE.md reach
// the session's options unless the settings file says "projectMemory": false.
func TestSetupProjectMemory(t *testing.T) {
	for _, tt := range []struct {
		name, config string
		sources      []hooks.Source // nil: every source
		want         int
	}{
		{"by default", `{"provider":"demo"}`, nil, 2},
		{"switched off", `{"provider":"demo","projectMemory":false}`, nil, 0},
		{"the user's source only", `{"provider":"demo"}`, []hooks.Source{hooks.SourceUser}, 1},
		{"no source (--setting-sources \"\")", `{"provider":"demo"}`, []hooks.Source{}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			work, home := filepath.Join(dir, "work"), filepath.Join(dir, "home")
			for p, c := range map[string]string{
				filepath.Join(work, "AGENTS.md"):            "project rules",
				filepath.Join(home, ".claude", "CLAUDE.md"): "my rules",
				filepath.Join(dir, "config.json"):           tt.config,
			} {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("SLUICE_HOME", dir)
			env := map[string]string{"SLUICE_CONFIG": filepath.Join(dir, "config.json"), "HOME": home}
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var f AgentFlags
			f.Register(fs)
			if err := fs.Parse([]string{"--cwd", work}); err != nil {
				t.Fatal(err)
			}
			f.SettingSources = tt.sources
			s, err := f.Setup(func(k string) string { return env[k] }, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(s.Options.Memory); got != tt.want {
				t.Fatalf("%d memory files, want %d: %+v", got, tt.want, s.Options.Memory)
			}
			if tt.want == 2 && (s.Options.Memory[0].Content != "my rules" || s.Options.Memory[1].Content != "project rules") {
				t.Errorf("memory %+v: want the user's file, then the project's", s.Options.Memory)
			}
		})
	}
}

// --setting-sources names the sources (comma-separated, "" for none) and
// refuses a name Claude Code does not have.
func TestSettingSourcesFlag(t *testing.T) {
	for _, tt := range []struct {
		arg  string
		want []hooks.Source
		err  bool
	}{
		{"--setting-sources=user,project", []hooks.Source{hooks.SourceUser, hooks.SourceProject}, false},
		{"--setting-sources=", []hooks.Source{}, false},
		{"--setting-sources=policy", nil, true},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var af AgentFlags
		var cf ClaudeFlags
		af.Register(fs)
		cf.Register(fs)
		if err := fs.Parse([]string{tt.arg}); err != nil {
			t.Fatal(err)
		}
		err := cf.ApplyTo(&af)
		if (err != nil) != tt.err || (!tt.err && (af.SettingSources == nil || !slices.Equal(af.SettingSources, tt.want))) {
			t.Errorf("%s: sources %q, err %v", tt.arg, af.SettingSources, err)
		}
	}
}
