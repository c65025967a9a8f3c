package web

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/provider/demo"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/wire"
)

// TestBrowserDemo streams the built-in demo provider's session to the page:
// reasoning, text, a Bash tool whose output streams while it runs, and the
// long markdown answer; the page then shows exactly getMessages.
func TestBrowserDemo(t *testing.T) {
	st := newStack(t, demo.New(demo.Config{Delay: -1}), stackOptions{mode: protocol.ModeBypassPermissions})
	tab := newTab(t)
	id := tab.open(st.pageURL())
	ctx := context.Background()
	obs := &observer{client: dial(t, ctx, st.wsURL(), nil), sessionID: id}
	if err := obs.call(ctx, "initialize", map[string]any{"sessionId": id}, &wire.InitializeResult{}); err != nil {
		t.Fatal(err)
	}
	snap := obs.after(func() { tab.send("Show me what sluice does") }, idleIn)
	tab.matches("the demo session", snap)

	if n := len(snap.Messages); n != 3 {
		t.Fatalf("%d messages, want the question, the tool turn and the answer", n)
	}
	turn := snap.Messages[1]
	var tool protocol.Block
	for _, b := range turn.Blocks {
		if b.Type == protocol.BlockTool {
			tool = b
		}
	}
	if tool.Name != "Bash" || !strings.Contains(tool.Result, "step 5") || tool.Success == nil || !*tool.Success {
		t.Fatalf("the demo's tool block: %+v", tool)
	}
	var page string
	tab.eval(`document.querySelector('#messages').textContent`, &page)
	for _, want := range []string{"step 5", "Thought", "What ran"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
}
