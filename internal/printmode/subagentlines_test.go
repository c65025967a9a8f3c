package printmode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A subagent's lines are Claude Code's (testdata/claude-code/subagent.json,
// a foreground Agent call with --include-partial-messages): its prompt, its
// tool calls and their results, each with parent_tool_use_id set to the
// Agent call's id and the subagent named; no stream events of its own.
func TestSubagentLinesAsClaudeCode(t *testing.T) {
	t.Parallel()
	var cc struct {
		StreamJSON ccLines `json:"stream_json"`
	}
	data, err := os.ReadFile(filepath.Join("testdata", "claude-code", "subagent.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &cc); err != nil {
		t.Fatal(err)
	}
	sess := newErrorSession(t, 0, answers(t, "agent:CHILDTASK: run echo tool-ran", "bash:echo tool-ran", "say:child found: tool-ran", "say:The child said tool-ran."))
	var stdout, stderr bytes.Buffer
	if code := Run(t.Context(), sess, "delegate", Config{OutputFormat: FormatStreamJSON, IncludePartial: true, Stdout: &stdout, Stderr: &stderr}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	got, want := childLines(lines(t, stdout.String())), childLines(cc.StreamJSON.Lines)
	if !slices.Equal(got, want) {
		t.Errorf("the subagent's lines:\n%q\nClaude Code's:\n%q", got, want)
	}
}

// childLines describes the lines of a subagent: type, first block's type,
// whether parent_tool_use_id is the Agent call's, and the subagent fields.
func childLines(ls []map[string]any) []string {
	var call string
	var out []string
	for _, l := range ls {
		if m, ok := l["message"].(map[string]any); ok && l["type"] == "assistant" && call == "" {
			for _, b := range m["content"].([]any) {
				if b := b.(map[string]any); b["type"] == "tool_use" && b["name"] == "Agent" {
					call = b["id"].(string)
				}
			}
		}
		p, _ := l["parent_tool_use_id"].(string)
		if p == "" {
			continue
		}
		block := ""
		if m, ok := l["message"].(map[string]any); ok {
			if c, ok := m["content"].([]any); ok && len(c) > 0 {
				block, _ = c[0].(map[string]any)["type"].(string)
			}
		}
		_, agentID := l["agent_id"]
		out = append(out, fmt.Sprintf("%v/%s parent=call:%v agent_id:%v subagent_type:%v task_description:%v",
			l["type"], block, p == call, agentID, l["subagent_type"], l["task_description"]))
	}
	return out
}
