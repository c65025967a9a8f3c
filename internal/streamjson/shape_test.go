package streamjson

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// edit returns the recording's lines, less Claude Code's status lines
// (which sluice does not write), with f applied to each parsed line; f
// returns false to drop it.
func edit(t *testing.T, rec []byte, f func(i int, l map[string]any) bool) []byte {
	t.Helper()
	ls, err := parseLines(rec)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	i := 0
	for _, l := range ls {
		if slices.Contains(ccOnlyKinds, kindOf(l)) {
			continue
		}
		if f(i, l) {
			data, err := json.Marshal(l)
			if err != nil {
				t.Fatal(err)
			}
			out.Write(data)
			out.WriteByte('\n')
		}
		i++
	}
	return out.Bytes()
}

func TestCompareWithClaudeCode(t *testing.T) {
	t.Parallel()
	rec, err := os.ReadFile("testdata/tool_use_bash.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	keep := func(int, map[string]any) bool { return true }
	for _, c := range []struct {
		name string
		got  []byte
		want []string // substrings of the differences, in order; none for none
	}{
		{"same", edit(t, rec, keep), nil},
		{"without Claude Code's own fields", edit(t, rec, func(_ int, l map[string]any) bool {
			delete(l, "tool_use_result")
			delete(l, "request_id")
			delete(l, "slash_commands")
			if u, ok := l["usage"].(map[string]any); ok {
				delete(u, "server_tool_use")
			}
			return true
		}), nil},
		{"with sluice's own fields", edit(t, rec, func(_ int, l map[string]any) bool {
			if kindOf(l) == "system/init" {
				l["sluice_version"] = "0.1.0"
			}
			return true
		}), nil},
		{"usage differs", edit(t, rec, func(_ int, l map[string]any) bool {
			if m, ok := l["message"].(map[string]any); ok && m["usage"] != nil {
				m["usage"].(map[string]any)["output_tokens"] = 99
			}
			return true
		}), nil},
		{"status lines kept", rec, []string{"line kinds differ", "! ", "system/status"}},
		{"a line missing", edit(t, rec, func(i int, l map[string]any) bool { return kindOf(l) != "user" }), []string{"line kinds differ"}},
		{"a field renamed", edit(t, rec, func(_ int, l map[string]any) bool {
			if kindOf(l) == "assistant" {
				l["sessionId"] = l["session_id"]
				delete(l, "session_id")
			}
			return true
		}), []string{"(assistant): sluice lacks session_id", "(assistant): Claude Code has no sessionId"}},
		{"a field of sluice's own in the wrong line", edit(t, rec, func(_ int, l map[string]any) bool {
			if kindOf(l) == "result/success" {
				l["sluice_version"] = "0.1.0"
			}
			return true
		}), []string{"(result/success): Claude Code has no sluice_version"}},
		{"a nested field missing", edit(t, rec, func(_ int, l map[string]any) bool {
			if ev, ok := l["event"].(map[string]any); ok && ev["type"] == "message_delta" {
				delete(ev["delta"].(map[string]any), "stop_sequence")
			}
			return true
		}), []string{"sluice lacks event.delta.stop_sequence"}},
		{"a delta's text differs", edit(t, rec, func(_ int, l map[string]any) bool {
			if ev, ok := l["event"].(map[string]any); ok && ev["type"] == "content_block_delta" {
				if d := ev["delta"].(map[string]any); d["text"] == "mand." {
					d["text"] = "mand!"
				}
			}
			return true
		}), []string{`event is {"delta":{"text":"mand!"`}},
		{"the tool result differs", edit(t, rec, func(_ int, l map[string]any) bool {
			if kindOf(l) == "user" {
				l["message"].(map[string]any)["content"].([]any)[0].(map[string]any)["content"] = "hello\n"
			}
			return true
		}), []string{"(user): message is"}},
		{"the result differs", edit(t, rec, func(_ int, l map[string]any) bool {
			if kindOf(l) == "result/success" {
				l["result"] = "something else"
			}
			return true
		}), []string{`(result/success): result is "something else"`}},
		{"not JSON", []byte("{\"type\":\"system\"}\nnot json\n"), []string{"sluice's output: line 2 is not a JSON object"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			diffs := strings.Join(CompareWithClaudeCode(c.got, rec, CompareOptions{}), "\n")
			if c.want == nil {
				if diffs != "" {
					t.Errorf("differences found:\n%s", diffs)
				}
				return
			}
			rest := diffs
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("differences lack %q:\n%s", w, diffs)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestLineKinds(t *testing.T) {
	t.Parallel()
	kinds, err := LineKinds([]byte(`{"type":"system","subtype":"init"}
{"type":"stream_event","event":{"type":"message_start"}}

{"type":"assistant","message":{}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"system/init", "stream_event/message_start", "assistant"}; !slices.Equal(kinds, want) {
		t.Errorf("kinds %q, want %q", kinds, want)
	}
	for _, bad := range []string{`{"subtype":"init","type":"system"}`, `{"type":"system"`, `["type"]`, `{"type":"a"} {"type":"b"}`} {
		if _, err := LineKinds([]byte(bad + "\n")); err == nil {
			t.Errorf("LineKinds(%s) did not fail", bad)
		}
	}
}

func TestCompareShape(t *testing.T) {
	t.Parallel()
	shape := `{"lines":[
		{"kind":"system/init","child":false,"paths":["type","subtype","agents"]},
		{"kind":"user","child":true,"paths":["type","parent_tool_use_id","agent_id","message","message.content","message.content[].type"]},
		{"kind":"system/task_progress","child":false,"paths":["type","subtype"]}]}`
	tests := []struct {
		name  string
		got   string
		diffs int
	}{
		{"the same shape, a line only Claude Code writes left out", `{"type":"system","subtype":"init","agents":[]}
{"type":"user","parent_tool_use_id":"t","agent_id":"t","message":{"content":[{"type":"text"}]},"extra":1}`, 0},
		{"a field missing", `{"type":"system","subtype":"init"}
{"type":"user","parent_tool_use_id":"t","message":{"content":[{"type":"text"}]}}`, 1},
		{"the subagent's line is the session's", `{"type":"system","subtype":"init"}
{"type":"user","parent_tool_use_id":null,"agent_id":"t","message":{"content":[{"type":"text"}]}}`, 1},
		{"a line too many", `{"type":"system","subtype":"init"}
{"type":"user","parent_tool_use_id":"t","agent_id":"t","message":{"content":[{"type":"text"}]}}
{"type":"result","subtype":"success"}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if d := CompareShape([]byte(tt.got), []byte(shape)); len(d) != tt.diffs {
				t.Errorf("got %d differences, want %d: %v", len(d), tt.diffs, d)
			}
		})
	}
}
