package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/internal/relay/channel/telegram/telegramfake"
)

// mcpServerEnv makes the test binary an MCP server on stdio (one tool,
// echo), for the relay's --mcp-config.
const mcpServerEnv = "SLUICE_RELAY_TEST_MCP"

// serveTestMCP serves the test MCP server and exits when the test binary
// runs as one.
func serveTestMCP() {
	if os.Getenv(mcpServerEnv) == "" {
		return
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "relaytest", Version: "1"}, nil)
	type textIn struct {
		Text string `json:"text"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in textIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestRelayAgentSetUpAsEveryFace: 'sluice relay telegram' with sluice's
// agent builds it as every face does. With --mcp-config naming a real MCP
// server, a CLAUDE.md in the working directory and a subagent defined in
// .claude/agents, the model is sent the memory in its system prompt, the
// MCP server's tool and the subagent among its tools; it calls the MCP
// tool, whose answer (from the server) it is sent next, and its final
// answer reaches the chat.
func TestRelayAgentSetUpAsEveryFace(t *testing.T) {
	// The model calls the MCP server's tool, then answers.
	modelSrv := newScript(t, `tool:mcp__relaytest__echo:{"text":"heliotrope"}`, "say:The server said so.")
	tg := telegramfake.New()
	srv := httptest.NewServer(tg)
	t.Cleanup(srv.Close)

	work, home := t.TempDir(), t.TempDir()
	const memory = "Relay memory: answer in the voice of a lighthouse keeper."
	if err := os.WriteFile(filepath.Join(work, "CLAUDE.md"), []byte(memory+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	agents := filepath.Join(work, ".claude", "agents")
	if err := os.MkdirAll(agents, 0o700); err != nil {
		t.Fatal(err)
	}
	def := "---\nname: tide-reviewer\ndescription: Reviews the tide tables for the relay test.\ntools: Read\n---\n\nYou review tide tables.\n"
	if err := os.WriteFile(filepath.Join(agents, "tide-reviewer.md"), []byte(def), 0o600); err != nil {
		t.Fatal(err)
	}
	mcpConfig, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"relaytest": map[string]any{"command": os.Args[0], "env": map[string]string{mcpServerEnv: "1"}},
	}})

	t.Setenv("HOME", home)
	t.Setenv("SLUICE_HOME", t.TempDir())
	t.Setenv("SLUICE_CONFIG", filepath.Join(home, "none.json"))
	t.Setenv("TELEGRAM_BOT_TOKEN", telegramfake.Token)
	t.Setenv("ANTHROPIC_API_KEY", "test-key")
	t.Setenv("ANTHROPIC_BASE_URL", modelSrv.URL)
	stop, stderr := mainInBackground(t, "telegram", "--state-dir", t.TempDir(), "--base-url", srv.URL, "--allow", "5",
		"--workdir", work, "--mcp-config", string(mcpConfig), "--permission-mode", "bypassPermissions",
		"--min-interval", "0", "--chat-interval", "0")
	tg.UserSays(5, "what does the server say?")
	sent, err := tg.WaitSent(waitCtx(t), 1)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if code := stop(); code != 0 {
		t.Errorf("exit code %d: %s", code, stderr.String())
	}
	if got := sent[len(sent)-1].Text; got != "The server said so." {
		t.Errorf("the chat got %q", got)
	}
	var bodies []string
	for _, r := range modelSrv.Requests() {
		bodies = append(bodies, string(r.Body))
	}
	if len(bodies) != 2 {
		t.Fatalf("the model got %d requests, want 2\n%s", len(bodies), stderr.String())
	}
	var first struct {
		System json.RawMessage `json:"system"`
		Tools  []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(bodies[0]), &first); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(first.System), "lighthouse keeper") {
		t.Errorf("CLAUDE.md is not in the system prompt: %.500s", first.System)
	}
	tools := map[string]string{}
	for _, tl := range first.Tools {
		tools[tl.Name] = tl.Description
	}
	if _, ok := tools["mcp__relaytest__echo"]; !ok {
		t.Errorf("the MCP server's tool is not offered: %v", keys(tools))
	}
	offered := false
	for _, d := range tools {
		offered = offered || strings.Contains(d, "tide-reviewer") && strings.Contains(d, "Reviews the tide tables")
	}
	if !offered {
		t.Errorf("the subagent is not offered: %v", keys(tools))
	}
	if !strings.Contains(bodies[1], "echo: heliotrope") {
		t.Errorf("the MCP server's answer is not sent back: %.500s", bodies[1])
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
