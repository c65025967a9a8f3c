package acp

import (
	"reflect"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/sluicehq/sluice/internal/mcp"
)

func TestViewOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, tool, params, compact string
		oldText                     string
		title                       string
		locations                   []sdk.ToolCallLocation
		diff                        *sdk.ToolCallContentDiff
		command                     string
	}{
		{name: "read with offset", tool: "Read", params: `{"file_path":"a/b.go","offset":40}`, compact: "a/b.go",
			title: "Read a/b.go", locations: []sdk.ToolCallLocation{{Path: "/w/a/b.go", Line: sdk.Ptr(40)}}},
		{name: "write is a diff from nothing", tool: "Write", params: `{"file_path":"/abs/x.txt","content":"new"}`,
			title: "Write", locations: []sdk.ToolCallLocation{{Path: "/abs/x.txt"}}, diff: &sdk.ToolCallContentDiff{Path: "/abs/x.txt", NewText: "new"}},
		{name: "write over a file is a diff from its old text", tool: "Write", params: `{"file_path":"x.txt","content":"new"}`, oldText: "old",
			title: "Write", locations: []sdk.ToolCallLocation{{Path: "/w/x.txt"}}, diff: &sdk.ToolCallContentDiff{Path: "/w/x.txt", OldText: sdk.Ptr("old"), NewText: "new"}},
		{name: "edit", tool: "Edit", params: `{"file_path":"x.txt","old_string":"a","new_string":"b"}`,
			title: "Edit", locations: []sdk.ToolCallLocation{{Path: "/w/x.txt"}}, diff: &sdk.ToolCallContentDiff{Path: "/w/x.txt", OldText: sdk.Ptr("a"), NewText: "b"}},
		{name: "grep path", tool: "Grep", params: `{"pattern":"x","path":"src"}`, title: "Grep", locations: []sdk.ToolCallLocation{{Path: "/w/src"}}},
		{name: "bash", tool: "Bash", params: `{"command":"ls -l"}`, compact: "ls -l", title: "Bash ls -l", command: "ls -l"},
		{name: "partial JSON shows the name", tool: "Edit", params: `{"file_pa`, title: "Edit"},
		{name: "mcp tool", tool: "mcp__s__t", params: `{"q":1}`, title: "mcp__s__t"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := viewOf("/w", tt.tool, tt.params, tt.compact, tt.oldText)
			if v.title != tt.title || !reflect.DeepEqual(v.locations, tt.locations) || v.command != tt.command {
				t.Errorf("view = %+v", v)
			}
			var diff *sdk.ToolCallContentDiff
			if v.diff != nil {
				d := *v.diff.Diff
				d.Type = ""
				diff = &d
			}
			if !reflect.DeepEqual(diff, tt.diff) {
				t.Errorf("diff = %+v, want %+v", diff, tt.diff)
			}
		})
	}
}

func TestMCPConfig(t *testing.T) {
	t.Parallel()
	cfg, err := mcpConfig([]sdk.McpServer{
		{Stdio: &sdk.McpServerStdio{Name: "files", Command: "srv", Args: []string{"-v"}, Env: []sdk.EnvVariable{{Name: "TOKEN", Value: "t"}}}},
		{Http: &sdk.McpServerHttpInline{Name: "web", Url: "http://127.0.0.1:1/mcp", Headers: []sdk.HttpHeader{{Name: "Authorization", Value: "Bearer x"}}}},
		{Sse: &sdk.McpServerSseInline{Name: "events", Url: "http://127.0.0.1:2/sse"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]mcp.ServerConfig{
		"files":  {Type: mcp.TypeStdio, Command: "srv", Args: []string{"-v"}, Env: map[string]string{"TOKEN": "t"}},
		"web":    {Type: mcp.TypeHTTP, URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer x"}},
		"events": {Type: mcp.TypeSSE, URL: "http://127.0.0.1:2/sse", Headers: map[string]string{}},
	}
	if !reflect.DeepEqual(cfg.Servers, want) {
		t.Errorf("config = %+v", cfg.Servers)
	}
	if cfg, err := mcpConfig(nil); cfg != nil || err != nil {
		t.Errorf("no servers: %v, %v", cfg, err)
	}
	for name, bad := range map[string][]sdk.McpServer{
		"no name":   {{Stdio: &sdk.McpServerStdio{Command: "x"}}},
		"duplicate": {{Stdio: &sdk.McpServerStdio{Name: "a", Command: "x"}}, {Sse: &sdk.McpServerSseInline{Name: "a", Url: "http://x"}}},
		"no kind":   {{}},
	} {
		if _, err := mcpConfig(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
