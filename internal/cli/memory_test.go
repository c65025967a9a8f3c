package cli

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// The working directory's AGENTS.md and the user's ~/.claude/CLAUDE.md reach
// the session's options unless the settings file says "projectMemory": false.
func TestSetupProjectMemory(t *testing.T) {
	for _, tt := range []struct {
		name, config string
		want         int
	}{
		{"by default", `{"provider":"demo"}`, 2},
		{"switched off", `{"provider":"demo","projectMemory":false}`, 0},
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
			s, err := f.Setup(func(k string) string { return env[k] }, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(s.Options.Memory); got != tt.want {
				t.Fatalf("%d memory files, want %d: %+v", got, tt.want, s.Options.Memory)
			}
			if tt.want > 0 && (s.Options.Memory[0].Content != "my rules" || s.Options.Memory[1].Content != "project rules") {
				t.Errorf("memory %+v: want the user's file, then the project's", s.Options.Memory)
			}
		})
	}
}
