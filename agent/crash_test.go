package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/store"
	"github.com/sluicehq/sluice/tool"
)

// crashImage copies a live session's file to a new store, as a kill -9 at
// this moment would leave it, once the file holds want. The wait polls
// the file: the journal writes in the background.
func crashImage(t *testing.T, st *store.JSONL, dir, id, want string) *store.JSONL {
	t.Helper()
	src, _ := st.Path(store.Key{WorkDir: dir, ID: id})
	deadline := time.Now().Add(30 * time.Second)
	var data []byte
	for {
		data, _ = os.ReadFile(src)
		if bytes.Contains(data, []byte(want)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session file never held %q:\n%s", want, data)
		}
		time.Sleep(5 * time.Millisecond)
	}
	img := store.NewJSONL(t.TempDir())
	dst, _ := img.Path(store.Key{WorkDir: dir, ID: id})
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return img
}

// TestCrashMidStreamKeepsStreamedText: what streamed before a crash is in
// the session file; restoring shows it as interrupted and sends it to the
// model.
func TestCrashMidStreamKeepsStreamedText(t *testing.T) {
	t.Parallel()
	st, dir := store.NewJSONL(t.TempDir()), t.TempDir()
	hold := make(chan struct{})
	defer close(hold)
	delta := func(s string) modeltest.Step {
		return modeltest.Step{Part: model.Part{Type: model.PartBlockDelta, Delta: model.DeltaText, Text: s}}
	}
	p := modeltest.NewScript(modeltest.Response(modeltest.Start("m1"),
		[]modeltest.Step{{Part: model.Part{Type: model.PartBlockStart, Block: model.BlockText}}, delta("Hello, "), delta("streamed world")},
		modeltest.Gate(hold), modeltest.Text(1, "never sent"), modeltest.Stop(model.StopEndTurn)))
	s := newSession(t, p, func(o *agent.Options) { o.Store, o.WorkDir = st, dir })
	if _, err := s.Submit(bg(t), "question"); err != nil {
		t.Fatal(err)
	}
	img := crashImage(t, st, dir, s.ID(), "streamed world")

	p2 := modeltest.NewScript(modeltest.Answer("m2", "Continuing."))
	r, err := agent.Open(agent.Options{Provider: p2, Store: img, WorkDir: dir, Stream: modeltest.StreamOptions()}, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	msgs := r.Messages().Messages
	if len(msgs) != 2 || msgs[1].Role != protocol.RoleAssistant {
		t.Fatalf("restored %+v", msgs)
	}
	a := msgs[1]
	if a.Text() != "Hello, streamed world" || a.Blocks[0].Stage != protocol.StageEnd ||
		a.Blocks[len(a.Blocks)-1].Type != protocol.BlockError {
		t.Fatalf("the cut answer is not shown as interrupted: %+v", a.Blocks)
	}
	if _, err := r.Run(bg(t), "go on"); err != nil {
		t.Fatal(err)
	}
	got := p2.Request(0).Messages
	want := []struct {
		role model.Role
		text string
	}{
		{model.RoleUser, "question"}, {model.RoleAssistant, "Hello, streamed world"},
		{model.RoleUser, "[Response interrupted: sluice stopped before it was finished]"}, {model.RoleUser, "go on"},
	}
	if len(got) != len(want) {
		t.Fatalf("the model was sent %d messages, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Role != w.role || got[i].Content[0].Text != w.text {
			t.Errorf("message %d sent = %s %q, want %s %q", i, got[i].Role, got[i].Content[0].Text, w.role, w.text)
		}
	}
}

// blockingTool runs until its context ends, after saying it started.
type blockingTool struct{ started chan struct{} }

func (blockingTool) Name() string                   { return "Wait" }
func (blockingTool) Description() string            { return "waits" }
func (blockingTool) Schema() json.RawMessage        { return json.RawMessage(`{"type":"object"}`) }
func (blockingTool) Kind() tool.Kind                { return tool.ReadOnly }
func (blockingTool) Compact(json.RawMessage) string { return "" }
func (b blockingTool) Run(ctx context.Context, _ *tool.Env, _ json.RawMessage, out tool.Output) (tool.Result, error) {
	out.Write([]byte("partial output\n"))
	close(b.started)
	<-ctx.Done()
	return tool.Result{}, ctx.Err()
}

// TestCrashDuringToolRecordsCall: a tool call is recorded before it runs;
// after a crash the call shows as interrupted and the model gets a result
// saying so.
func TestCrashDuringToolRecordsCall(t *testing.T) {
	t.Parallel()
	st, dir := store.NewJSONL(t.TempDir()), t.TempDir()
	bt := blockingTool{started: make(chan struct{})}
	p := modeltest.NewScript(modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "Let me wait."),
		modeltest.ToolUse(1, "call_1", "Wait", map[string]any{}), modeltest.Stop(model.StopToolUse)))
	s := newSession(t, p, func(o *agent.Options) {
		o.Store, o.WorkDir, o.Tools = st, dir, []tool.Tool{bt}
	})
	if _, err := s.Submit(bg(t), "wait please"); err != nil {
		t.Fatal(err)
	}
	<-bt.started
	img := crashImage(t, st, dir, s.ID(), "partial output")

	p2 := modeltest.NewScript(modeltest.Answer("m2", "Sorry."))
	r, err := agent.Open(agent.Options{Provider: p2, Store: img, WorkDir: dir, Stream: modeltest.StreamOptions(), Tools: []tool.Tool{bt}}, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	msgs := r.Messages().Messages
	if len(msgs) != 2 {
		t.Fatalf("restored %+v", msgs)
	}
	tb := msgs[1].Blocks[1]
	if tb.Type != protocol.BlockTool || tb.Stage != protocol.StageEnd || tb.Success == nil || *tb.Success ||
		tb.Error == "" || tb.Result != "partial output\n" {
		t.Fatalf("the cut tool call shows as %+v", tb)
	}
	if _, err := r.Run(bg(t), "again"); err != nil {
		t.Fatal(err)
	}
	got := p2.Request(0).Messages
	if len(got) != 4 || got[1].Role != model.RoleAssistant || got[1].Content[1].Type != model.ContentToolUse ||
		got[2].Content[0].Type != model.ContentToolResult || got[2].Content[0].ID != "call_1" || !got[2].Content[0].IsError {
		t.Fatalf("the model was sent %+v", got)
	}
}
