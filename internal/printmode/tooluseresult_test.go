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
	"github.com/sluicehq/sluice/internal/fakemodel"
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
// (testdata/claude-code/tool_use_results*.json), made from what the tools
// read and changed: the same keys and values, the paths aside.
func TestFileToolUseResultsAsClaudeCode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, recording string
		calls           []string
		// compare maps a call's index to its result's in the recording.
		compare map[int]int
	}{
		{
			name: "read, create, edit", recording: "tool_use_results.json",
			calls: []string{
				`tool:Read:{"file_path":"hello.txt"}`,
				`tool:Write:{"file_path":"new.txt","content":"one\ntwo\n"}`,
				`tool:Edit:{"file_path":"hello.txt","old_string":"world","new_string":"there"}`,
			},
			compare: map[int]int{0: 1, 1: 2, 2: 3}, // the recording's first call is Bash's
		},
		{
			name: "part of a file, update", recording: "tool_use_results_update.json",
			calls: []string{
				`tool:Read:{"file_path":"hello.txt","offset":2,"limit":1}`,
				`tool:Edit:{"file_path":"hello.txt","old_string":"world","new_string":"there"}`,
				`tool:Write:{"file_path":"hello.txt","content":"hello\nthere\nagain\n"}`,
			},
			// The Edit's result there adds contentNotInModelContext: the
			// model had read part of the file only.
			compare: map[int]int{0: 0, 2: 2},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			want := recordedToolUseResults(t, c.recording, dir)
			got := fileToolUseResults(t, dir, c.calls)
			for i, j := range c.compare {
				if !reflect.DeepEqual(got[i], want[j]) {
					g, _ := json.Marshal(got[i])
					w, _ := json.Marshal(want[j])
					t.Errorf("call %d (%s): tool_use_result\n%s\nClaude Code's\n%s", i+1, c.calls[i], g, w)
				}
			}
		})
	}
}

// recordedToolUseResults is the tool_use_result of each user line of a
// recording, its working directory replaced by dir.
func recordedToolUseResults(t *testing.T, name, dir string) []any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "claude-code", name))
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.ReplaceAll(data, []byte("/home/user/work"), []byte(filepath.ToSlash(dir)))
	var cc struct {
		StreamJSON ccLines `json:"stream_json"`
	}
	if err := json.Unmarshal(data, &cc); err != nil {
		t.Fatal(err)
	}
	var rs []any
	for _, l := range cc.StreamJSON.Lines {
		if l["type"] == "user" {
			rs = append(rs, l["tool_use_result"])
		}
	}
	return rs
}

// fileToolUseResults runs the calls in dir, which holds hello.txt as in
// the recordings, and returns each one's tool_use_result.
func fileToolUseResults(t *testing.T, dir string, calls []string) []any {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello\nworld\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := fakemodel.NewScript(fakemodel.Anthropic, answers(t, append(calls, "say:done")...))
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
	var got []any
	for _, l := range lines(t, stdout.String()) {
		if l["type"] == "user" {
			got = append(got, l["tool_use_result"])
		}
	}
	if len(got) != len(calls) {
		t.Fatalf("%d tool results, want %d:\n%s", len(got), len(calls), stdout.String())
	}
	return got
}
