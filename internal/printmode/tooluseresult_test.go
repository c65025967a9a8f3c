package printmode

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A Bash call's tool_use_result is Claude Code's object
// (testdata/claude-code/tool_use_results.json): the same keys, the output
// in stdout.
func TestBashToolUseResultAsClaudeCode(t *testing.T) {
	t.Parallel()
	var cc struct {
		StreamJSON ccLines `json:"stream_json"`
	}
	data, err := os.ReadFile(filepath.Join("testdata", "claude-code", "tool_use_results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &cc); err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	for _, l := range cc.StreamJSON.Lines {
		if l["type"] == "user" {
			want = l["tool_use_result"].(map[string]any) // the first call is Bash's
			break
		}
	}
	sess := newErrorSession(t, 0, answers(t, "bash:echo hi; echo oops >&2", "say:done"))
	var stdout, stderr bytes.Buffer
	if code := Run(t.Context(), sess, "run it", Config{OutputFormat: FormatStreamJSON, Stdout: &stdout, Stderr: &stderr}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, l := range lines(t, stdout.String()) {
		if l["type"] != "user" {
			continue
		}
		got, ok := l["tool_use_result"].(map[string]any)
		if !ok {
			t.Fatalf("tool_use_result %#v is not an object", l["tool_use_result"])
		}
		if g, w := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)); !slices.Equal(g, w) {
			t.Errorf("tool_use_result keys %v, Claude Code's %v", g, w)
		}
		for _, k := range []string{"stdout", "stderr", "interrupted", "isImage", "noOutputExpected"} {
			if got[k] != want[k] {
				t.Errorf("tool_use_result %s = %#v, Claude Code's %#v", k, got[k], want[k])
			}
		}
		return
	}
	t.Fatal("no user line")
}
