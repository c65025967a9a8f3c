package acp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
)

// TestClientMCPServers gives session/new an HTTP and an SSE MCP server: their
// tools join the session's, and the model's call reaches the server with
// the client's headers.
func TestClientMCPServers(t *testing.T) {
	t.Parallel()
	type textIn struct {
		Text string `json:"text"`
	}
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "editor-tools", Version: "1"}, nil)
	mcpsdk.AddTool(srv, &mcpsdk.Tool{Name: "echo", Description: "Echoes text."},
		func(_ context.Context, _ *mcpsdk.CallToolRequest, in textIn) (*mcpsdk.CallToolResult, any, error) {
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	withToken := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer editor-token" {
				http.Error(w, "no token", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	httpSrv := httptest.NewServer(withToken(mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv }, nil)))
	t.Cleanup(httpSrv.Close) // after the harness: its session holds connections open
	sseSrv := httptest.NewServer(withToken(mcpsdk.NewSSEHandler(func(*http.Request) *mcpsdk.Server { return srv }, nil)))
	t.Cleanup(sseSrv.Close)

	script := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.ToolUse(0, "c1", "mcp__web__echo", map[string]any{"text": "over http"}), modeltest.Stop("tool_use")),
		modeltest.Response(modeltest.Start("m2"), modeltest.ToolUse(0, "c2", "mcp__events__echo", map[string]any{"text": "over sse"}), modeltest.Stop("tool_use")),
		modeltest.Answer("m3", "done"),
	)
	h := newHarness(t, script, harnessOpts{mode: protocol.ModeBypassPermissions})
	h.initialize(sdk.ClientCapabilities{})
	headers := []sdk.HttpHeader{{Name: "Authorization", Value: "Bearer editor-token"}}
	sess, err := h.conn.NewSession(h.ctx(), sdk.NewSessionRequest{Cwd: h.work(), McpServers: []sdk.McpServer{
		{Http: &sdk.McpServerHttpInline{Type: "http", Name: "web", Url: httpSrv.URL, Headers: headers}},
		{Sse: &sdk.McpServerSseInline{Type: "sse", Name: "events", Url: sseSrv.URL, Headers: headers}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := h.prompt(sess.SessionId, "use the editor's tools"); err != nil || resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", resp, err)
	}
	if got := lastToolResult(script.Request(1).Messages); got != "echo: over http" {
		t.Errorf("http tool result = %q", got)
	}
	if got := lastToolResult(script.Request(2).Messages); got != "echo: over sse" {
		t.Errorf("sse tool result = %q", got)
	}
	names := map[string]bool{}
	for _, tl := range script.Request(0).Tools {
		names[tl.Name] = true
	}
	if !names["mcp__web__echo"] || !names["mcp__events__echo"] || !names["Bash"] {
		t.Errorf("tools offered: %v", names)
	}
	_, ups := toolUpdates(h.client.snapshot())
	if st := lastStatus(ups); st != sdk.ToolCallStatusCompleted {
		t.Errorf("last tool status %q", st)
	}
	for _, u := range ups {
		if u.ToolCallId == "c1" && u.Title != nil && !strings.HasPrefix(*u.Title, "mcp__web__echo") {
			t.Errorf("title %q", *u.Title)
		}
	}
}
