package acp

import (
	"os"
	"path/filepath"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/sluicehq/sluice/model/modeltest"
)

// A Write over an existing file is a real diff, from the file's old text,
// in the permission request, the tool call's updates and a load's replay;
// a Write that creates a file is a diff from nothing.
func TestWriteShowsDiffFromOldText(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(work, "old.txt")
	if err := os.WriteFile(old, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &testClient{answer: func(sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome {
		return sdk.NewRequestPermissionOutcomeSelected(optAllowOnce)
	}}
	h := newHarness(t, modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"),
			modeltest.ToolUse(0, "w1", "Write", map[string]any{"file_path": "old.txt", "content": "after\n"}),
			modeltest.ToolUse(1, "w2", "Write", map[string]any{"file_path": "new.txt", "content": "fresh\n"}),
			modeltest.Stop("tool_use")),
		modeltest.Answer("m2", "written"),
	), harnessOpts{dir: dir, client: c})
	h.initialize(sdk.ClientCapabilities{})
	id := h.newSession().SessionId
	if _, err := h.prompt(id, "write"); err != nil {
		t.Fatal(err)
	}
	want := map[sdk.ToolCallId]sdk.ToolCallContentDiff{
		"w1": {Path: old, OldText: sdk.Ptr("before\n"), NewText: "after\n"},
		"w2": {Path: filepath.Join(work, "new.txt"), NewText: "fresh\n"},
	}
	check := func(where string, id sdk.ToolCallId, content []sdk.ToolCallContent) {
		t.Helper()
		if len(content) != 1 || content[0].Diff == nil {
			t.Errorf("%s %s: content %+v", where, id, content)
			return
		}
		d, w := *content[0].Diff, want[id]
		d.Type = ""
		if d.Path != w.Path || d.NewText != w.NewText || (d.OldText == nil) != (w.OldText == nil) || (d.OldText != nil && *d.OldText != *w.OldText) {
			t.Errorf("%s %s: diff %+v, want %+v", where, id, d, w)
		}
	}
	c.mu.Lock()
	asked := append([]sdk.RequestPermissionRequest(nil), c.asked...)
	c.mu.Unlock()
	if len(asked) != 2 {
		t.Fatalf("%d permission requests", len(asked))
	}
	for _, a := range asked {
		check("permission request", a.ToolCall.ToolCallId, a.ToolCall.Content)
	}
	last := func(ns []sdk.SessionNotification) map[sdk.ToolCallId]*sdk.SessionToolCallUpdate {
		out := map[sdk.ToolCallId]*sdk.SessionToolCallUpdate{}
		_, ups := toolUpdates(ns)
		for _, u := range ups {
			out[u.ToolCallId] = u
		}
		return out
	}
	for id, u := range last(h.client.snapshot()) {
		check("final update", id, u.Content)
	}

	// The old text is stored with the session: a load shows the same diff.
	h2 := newHarness(t, modeltest.NewScript(), harnessOpts{dir: dir})
	h2.initialize(sdk.ClientCapabilities{})
	if _, err := h2.conn.LoadSession(h2.ctx(), sdk.LoadSessionRequest{SessionId: id, Cwd: h2.work(), McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	replayed := last(h2.client.snapshot())
	if len(replayed) != 2 {
		t.Fatalf("replay has %d tool calls", len(replayed))
	}
	for id, u := range replayed {
		check("replay", id, u.Content)
	}
}
