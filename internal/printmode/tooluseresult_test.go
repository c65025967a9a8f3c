package printmode

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/printmode/printmodetest"
	"github.com/sluicehq/sluice/internal/provider/anthropic"
	"github.com/sluicehq/sluice/protocol"
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

// Read, Write and Edit calls' tool_use_result objects are Claude Code's
// (testdata/claude-code/tool_use_results.json), made from what the tools
// read and changed: the same keys and values, the paths aside. Write over
// a file, which the recording lacks, gives its update object.
func TestFileToolUseResultsAsClaudeCode(t *testing.T) {
	t.Parallel()
	var cc struct {
		StreamJSON ccLines `json:"stream_json"`
	}
	data, err := os.ReadFile(filepath.Join("testdata", "claude-code", "tool_use_results.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The recording ran in /home/user/work; here the files are in dir.
	data = bytes.ReplaceAll(data, []byte("/home/user/work"), []byte(filepath.ToSlash(dir)))
	if err := json.Unmarshal(data, &cc); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{}
	for _, l := range cc.StreamJSON.Lines {
		if l["type"] != "assistant" {
			continue
		}
		for _, b := range l["message"].(map[string]any)["content"].([]any) {
			if b := b.(map[string]any); b["type"] == "tool_use" {
				want[b["id"].(string)] = b["name"]
			}
		}
	}
	byTool := map[string]any{}
	for _, l := range cc.StreamJSON.Lines {
		if l["type"] != "user" {
			continue
		}
		id := l["message"].(map[string]any)["content"].([]any)[0].(map[string]any)["tool_use_id"].(string)
		byTool[want[id].(string)] = l["tool_use_result"]
	}
	update := map[string]any{
		"type": "update", "filePath": filepath.Join(dir, "hello.txt"), "content": "hello\nthere\nagain\n",
		"structuredPatch": []any{map[string]any{
			"oldStart": 1.0, "oldLines": 2.0, "newStart": 1.0, "newLines": 3.0,
			"lines": []any{" hello", " there", "+again"},
		}},
		"originalFile": "hello\nthere\n", "userModified": false,
	}
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello\nworld\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := printmodetest.NewServer(printmodetest.Anthropic, answers(t,
		`tool:Read:{"file_path":"hello.txt"}`,
		`tool:Write:{"file_path":"new.txt","content":"one\ntwo\n"}`,
		`tool:Edit:{"file_path":"hello.txt","old_string":"world","new_string":"there"}`,
		`tool:Write:{"file_path":"hello.txt","content":"hello\nthere\nagain\n"}`,
		"say:done"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	sess, err := agent.New(agent.Options{
		Provider: anthropic.New(anthropic.Config{APIKey: "sk-test", BaseURL: srv.URL}),
		Model:    "claude-sonnet-4-5", WorkDir: dir,
		PermissionMode: protocol.ModeBypassPermissions, Subagents: []agent.Subagent{},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	var stdout, stderr bytes.Buffer
	if code := Run(t.Context(), sess, "run them", Config{OutputFormat: FormatStreamJSON, Stdout: &stdout, Stderr: &stderr}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	expect := []struct {
		tool string
		want any
	}{{"Read", byTool["Read"]}, {"Write", byTool["Write"]}, {"Edit", byTool["Edit"]}, {"Write", update}}
	var got []any
	for _, l := range lines(t, stdout.String()) {
		if l["type"] == "user" {
			got = append(got, l["tool_use_result"])
		}
	}
	if len(got) != len(expect) {
		t.Fatalf("%d tool results, want %d:\n%s", len(got), len(expect), stdout.String())
	}
	for i, e := range expect {
		if !reflect.DeepEqual(got[i], e.want) {
			g, _ := json.Marshal(got[i])
			w, _ := json.Marshal(e.want)
			t.Errorf("%s call %d: tool_use_result\n%s\nClaude Code's\n%s", e.tool, i+1, g, w)
		}
	}
}
