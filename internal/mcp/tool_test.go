package mcp

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestCompactArgs(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100)
	tests := []struct{ in, want string }{
		{`{"query": "go mcp", "limit": 5, "deep": {"a": [1, 2]}}`, `query: "go mcp", limit: 5, deep: {"a":[1,2]}`},
		{`{}`, ``},
		{``, ``},
		{`{"text": "` + long + `"}`, `text: "` + strings.Repeat("x", 58) + `…`},
		{`{"a": 1, "b": 2.50, "c": null, "d": true, "e": "multi\nline"}`, `a: 1, b: 2.50, c: null, d: true, e: "multi\nline"`},
		{`[1, 2]`, `[1, 2]`},
		{"{\"a\":\n 1,", "{\"a\": 1,"}, // broken: shown as it is, on one line
		{`"just a string"`, `"just a string"`},
	}
	for _, tc := range tests {
		if got := compactArgs(json.RawMessage(tc.in)); got != tc.want {
			t.Errorf("compactArgs(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
	var many strings.Builder
	many.WriteString("{")
	for i := range 40 {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`"key": "value"`)
	}
	many.WriteString("}")
	if got := compactArgs(json.RawMessage(many.String())); utf8.RuneCountInString(got) != compactLen || !strings.HasSuffix(got, "…") {
		t.Errorf("a long line is not cut to %d characters: %q", compactLen, got)
	}
}

func TestRenderContent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		res  *sdk.CallToolResult
		want string
	}{
		{"empty", &sdk.CallToolResult{}, ""},
		{"texts", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a"}, &sdk.TextContent{Text: "b"}}}, "a\nb"},
		{"structured only", &sdk.CallToolResult{StructuredContent: map[string]int{"n": 1}}, `{"n":1}`},
		{"text wins over structured", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "t"}}, StructuredContent: 1}, "t"},
		{"big image", &sdk.CallToolResult{Content: []sdk.Content{&sdk.ImageContent{MIMEType: "image/jpeg", Data: make([]byte, 3<<20)}}}, "[image: image/jpeg, 3.0 MB]"},
		{"no mime type", &sdk.CallToolResult{Content: []sdk.Content{&sdk.AudioContent{Data: []byte{1}}}}, "[audio: unknown type, 1 bytes]"},
		{"blob resource", &sdk.CallToolResult{Content: []sdk.Content{&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///x.bin", MIMEType: "application/octet-stream", Blob: make([]byte, 2048)}}}},
			"[resource: file:///x.bin, application/octet-stream, 2 KB]"},
	}
	for _, tc := range tests {
		if got := renderContent(tc.res); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestToolName(t *testing.T) {
	t.Parallel()
	tests := []struct{ server, tool, want string }{
		{"github", "create_issue", "mcp__github__create_issue"},
		{"my.server", "do thing/now", "mcp__my_server__do_thing_now"},
		{"ünï", "tool-1", "mcp___n___tool-1"},
	}
	for _, tc := range tests {
		if got := toolName(tc.server, tc.tool); got != tc.want {
			t.Errorf("toolName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
	}
	// Long names are cut to what every provider accepts, and stay apart.
	a := toolName("server", strings.Repeat("a", 80)+"1")
	b := toolName("server", strings.Repeat("a", 80)+"2")
	if len(a) != maxNameLen || len(b) != maxNameLen || a == b || !strings.HasPrefix(a, "mcp__server__aaa") {
		t.Errorf("long names: %q, %q", a, b)
	}
}

func TestFormatProgress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p    sdk.ProgressNotificationParams
		want string
	}{
		{sdk.ProgressNotificationParams{Progress: 3, Total: 10, Message: "indexing"}, "[3/10] indexing\n"},
		{sdk.ProgressNotificationParams{Progress: 0.5}, "[0.5]\n"},
		{sdk.ProgressNotificationParams{Progress: 1, Message: "two\nlines "}, "[1] two lines\n"},
	}
	for _, tc := range tests {
		if got := formatProgress(&tc.p); got != tc.want {
			t.Errorf("formatProgress(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
}

func TestTail(t *testing.T) {
	t.Parallel()
	tl := &tail{max: 16}
	for _, s := range []string{"first line\n", "second\n", "third\n"} {
		if n, err := tl.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := string(tl.buf); got != "ne\nsecond\nthird\n" {
		t.Errorf("kept %q, want the last 16 bytes", got)
	}
	if got := tl.lastLines(2, 100); got != "second\nthird" {
		t.Errorf("lastLines(2) = %q", got)
	}
	if got := tl.lastLines(5, 8); got != "nd\nthird" {
		t.Errorf("lastLines(5, 8) = %q", got)
	}
	tl.Write([]byte(strings.Repeat("z", 40)))
	if got := string(tl.buf); got != strings.Repeat("z", 16) {
		t.Errorf("after a long write: %q", got)
	}
}
