package mcp

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
)

// TestAgent runs MCP tools the way sluice does: as an agent session's
// ExtraTools, called by a scripted model in the default permission mode.
func TestAgent(t *testing.T) {
	t.Parallel()
	s, err := connect(t, map[string]ServerConfig{"test": testServer(t, modeTools, nil)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var asked []string
	var next *model.Request // the request after the tool calls
	script := modeltest.NewScript(modeltest.Response(
		modeltest.Start("m1"),
		modeltest.ToolUse(0, "call1", "mcp__test__readonly", map[string]any{}),
		modeltest.ToolUse(1, "call2", "mcp__test__echo", map[string]any{"text": "hello"}),
		modeltest.Stop(model.StopToolUse),
	))
	script.Respond = func(req *model.Request) []modeltest.Step {
		mu.Lock()
		next = req
		mu.Unlock()
		return modeltest.Answer("m2", "done")
	}
	sess, err := agent.New(agent.Options{
		Provider:   script,
		WorkDir:    t.TempDir(),
		ExtraTools: s.Tools(),
		Stream:     modeltest.StreamOptions(),
		Approve: func(_ context.Context, req protocol.PermissionRequest) protocol.Decision {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req.Name+" "+req.CompactParams)
			return protocol.DecisionAllow
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if _, err := sess.Run(context.Background(), "use the tools"); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	// Only the tool that may change something asks.
	if want := []string{`mcp__test__echo text: "hello"`}; !slices.Equal(asked, want) {
		t.Errorf("approval asked for %q, want %q", asked, want)
	}
	if next == nil {
		t.Fatal("the model was not called after the tools")
	}
	if !slices.ContainsFunc(next.Tools, func(tl model.Tool) bool {
		return tl.Name == "mcp__test__echo" && tl.Description == "Echoes text." && len(tl.InputSchema) > 0
	}) {
		t.Errorf("the model was not offered mcp__test__echo: %+v", next.Tools)
	}
	results := map[string]string{}
	for _, c := range next.Messages[len(next.Messages)-1].Content {
		if c.Type == model.ContentToolResult {
			if c.IsError {
				t.Errorf("tool result %s is an error: %q", c.ID, c.Text)
			}
			results[c.ID] = c.Text
		}
	}
	if results["call1"] != "nothing changed" || results["call2"] != "hello" {
		t.Errorf("tool results = %q", results)
	}
}
