package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/hooks"
	"github.com/sluicehq/sluice/model/modeltest"
)

// TestRunWithHooks: the user's command hooks fire in the TUI as in every
// face. A PreToolUse hook allows echo with a JSON decision (no permission
// prompt in the default mode) and refuses rm with exit 2 (its stderr shown
// as the call's error); a UserPromptSubmit hook blocks a prompt with a
// JSON decision, shown under the prompt.
func TestRunWithHooks(t *testing.T) {
	dir := t.TempDir()
	conf, err := hooks.Parse([]byte(`{"hooks":{
		"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"sh pre.sh"}]}],
		"UserPromptSubmit":[{"hooks":[{"type":"command","command":"grep -q secret && echo '{\"decision\":\"block\",\"reason\":\"no secrets here\"}' || true"}]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	pre := `input=$(cat)
case "$input" in
*'"command":"rm'*) echo 'rm is refused by the hook' >&2; exit 2 ;;
*) echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}' ;;
esac`
	if err := os.WriteFile(filepath.Join(dir, "pre.sh"), []byte(pre), 0o644); err != nil {
		t.Fatal(err)
	}
	runner := &hooks.Runner{Config: conf, Dir: dir, Environ: os.Environ()}
	p := &modeltest.Script{Responses: [][]modeltest.Step{
		modeltest.Response(modeltest.Start("m1"), modeltest.ToolUse(0, "t1", "Bash", map[string]any{"command": "echo hooked-output"}), modeltest.Stop("tool_use")),
		modeltest.Response(modeltest.Start("m2"), modeltest.Text(0, "First done."), modeltest.Stop("end_turn")),
		modeltest.Response(modeltest.Start("m3"), modeltest.ToolUse(0, "t2", "Bash", map[string]any{"command": "rm -rf data"}), modeltest.Stop("tool_use")),
		modeltest.Response(modeltest.Start("m4"), modeltest.Text(0, "Second done."), modeltest.Stop("end_turn")),
	}}
	sess, err := agent.New(agent.Options{Provider: p, WorkDir: dir, Stream: modeltest.StreamOptions(), Hooks: runner.Agent()})
	if err != nil {
		t.Fatal(err)
	}
	prog := startProgram(t, sess, "echo something")
	typeLine := func(s string) {
		t.Helper()
		prog.press([]byte(s + "\r"))
	}
	prog.wait("First done.")
	typeLine("remove it")
	prog.wait("Second done.")
	typeLine("tell me the secret")
	prog.wait("the prompt was blocked by a UserPromptSubmit hook: no secrets here")
	s := prog.quit()
	for _, want := range []string{"hooked-output", "rm is refused by the hook"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(s, "Allow Bash(") {
		t.Error("a permission prompt showed although the hook allowed the call")
	}
	if p.Count() != 4 {
		t.Errorf("%d model requests, want 4 (the blocked prompt sends none)", p.Count())
	}
}
