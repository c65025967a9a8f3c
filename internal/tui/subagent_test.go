package tui

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
)

// TestRunWithSubagent: a subagent's work shows under its Agent call in the
// TUI, live from the nested events: the call, the subagent's own tool
// call, then what it used; the parent's answer after it.
func TestRunWithSubagent(t *testing.T) {
	p := &modeltest.Script{Respond: func(req *model.Request) []modeltest.Step {
		first := req.Messages[0].Content[0].Text
		done := len(req.Messages) > 1
		switch {
		case first == "look around" && !done:
			return modeltest.Response(modeltest.Start("c1"), modeltest.ToolUse(0, "c-bash", "Bash", map[string]any{"command": "echo from-the-child"}), modeltest.Stop("tool_use"))
		case first == "look around":
			return modeltest.Answer("c2", "The child saw from-the-child.")
		case !done:
			return modeltest.Response(modeltest.Start("p1"), modeltest.ToolUse(0, "p-agent", "Agent", map[string]any{"description": "scout the tree", "prompt": "look around"}), modeltest.Stop("tool_use"))
		}
		return modeltest.Answer("p2", "Parent done.")
	}}
	sess, err := agent.New(agent.Options{Provider: p, WorkDir: t.TempDir(), Stream: modeltest.StreamOptions(),
		PermissionMode: protocol.ModeBypassPermissions, Subagents: []agent.Subagent{}})
	if err != nil {
		t.Fatal(err)
	}
	prog := startProgram(t, sess, "delegate")
	prog.wait("Parent done.")
	s := prog.quit()
	for _, want := range []string{"Agent(scout the tree)", "Bash(echo from-the-child)", "general-purpose · 1 tool uses"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if i, j := strings.LastIndex(s, "Bash(echo from-the-child)"), strings.LastIndex(s, "Parent done."); i < 0 || j < i {
		t.Error("the subagent's call is not shown before the parent's answer")
	}
}
