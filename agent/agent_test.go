package agent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func bg(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestPlainAnswer(t *testing.T) {
	t.Parallel()
	p := &modeltest.Script{Responses: [][]modeltest.Step{modeltest.Response(modeltest.Start("m1"), modeltest.Reasoning(0, "Let", " me think"), modeltest.Text(1, "Hel", "lo!"), modeltest.Stop("end_turn"))}}
	s := newSession(t, p, nil)
	rec := record(t, s)
	res, err := s.Run(bg(t), "Hi")
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Hello!" || res.StopReason != "end_turn" || res.Turns != 1 {
		t.Fatalf("result %+v", res)
	}
	if res.Usage.InputTokens != 10 || res.Usage.OutputTokens != 5 {
		t.Fatalf("usage %+v", res.Usage)
	}
	rec.checkMatches(s)
	msgs := s.Messages().Messages
	if len(msgs) != 2 {
		t.Fatalf("%d messages", len(msgs))
	}
	a := msgs[1]
	if len(a.Blocks) != 2 || a.Blocks[0].Content != "Let me think" || a.Blocks[1].Content != "Hello!" || a.StopReason != "end_turn" {
		t.Fatalf("assistant message %+v", a)
	}
	if r := a.Blocks[0]; r.StartedAt == 0 || r.EndedAt < r.StartedAt || r.Stage != protocol.StageEnd {
		t.Fatalf("reasoning times %+v", r)
	}
	// The recorder read after the run: adjacent deltas were merged in its
	// queue, so compare runs of methods.
	got := strings.Join(collapse(rec.methods()), " ")
	want := "runStateChanged userMessageAdded assistantMessageAdded assistantReasoningUpdated assistantContentUpdated turnEnded runStateChanged"
	if got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	// The signature went back into the model's context for the next call.
	p.Push(modeltest.Response(modeltest.Start("m2"), modeltest.Text(0, "ok"), modeltest.Stop("end_turn")))
	if _, err := s.Run(bg(t), "again"); err != nil {
		t.Fatal(err)
	}
	req := p.Request(1)
	if len(req.Messages) != 3 || req.Messages[1].Content[0].Signature != "sig-0" {
		t.Fatalf("context sent back: %+v", req.Messages)
	}
}

func TestToolRoundTrip(t *testing.T) {
	t.Parallel()
	p := &modeltest.Script{Responses: [][]modeltest.Step{
		modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "Listing."), modeltest.ToolUse(1, "t1", "Bash", map[string]any{"command": "printf 'a\\nb\\n'"}), modeltest.Stop("tool_use")),
		modeltest.Response(modeltest.Start("m2"), modeltest.Text(0, "Two files."), modeltest.Stop("end_turn")),
	}}
	s := newSession(t, p, func(o *agent.Options) { o.PermissionMode = protocol.ModeBypassPermissions })
	rec := record(t, s)
	res, err := s.Run(bg(t), "list")
	if err != nil {
		t.Fatal(err)
	}
	if res.Turns != 2 || res.Text != "Two files." {
		t.Fatalf("result %+v", res)
	}
	rec.checkMatches(s)
	tb := s.Messages().Messages[1].Blocks[1]
	if tb.Type != protocol.BlockTool || tb.Stage != protocol.StageEnd || strings.TrimSpace(tb.Result) != "a\nb" || tb.CompactParams == "" || tb.Success == nil || !*tb.Success {
		t.Fatalf("tool block %+v", tb)
	}
	// Every running event names the tool and its compact parameters.
	stages := []protocol.Stage{}
	for _, ev := range rec.events {
		if e, ok := ev.(protocol.ToolBlockUpdated); ok {
			stages = append(stages, e.Stage)
			if e.Stage == protocol.StageRunning && (e.Name != "Bash" || e.CompactParams == "") {
				t.Fatalf("running event without name/compactParams: %+v", e)
			}
		}
	}
	if stages[0] != protocol.StageStart || stages[len(stages)-1] != protocol.StageEnd {
		t.Fatalf("stages %v", stages)
	}
	req := p.Request(1)
	last := req.Messages[len(req.Messages)-1]
	if last.Role != model.RoleUser || last.Content[0].Type != model.ContentToolResult || strings.TrimSpace(last.Content[0].Text) != "a\nb" || last.Content[0].ID != "t1" {
		t.Fatalf("tool result sent back: %+v", last)
	}
}

func TestRetryDiscardsPartialMessage(t *testing.T) {
	t.Parallel()
	overloaded := &model.APIError{Provider: "scripted", Type: "overloaded_error", Message: "Overloaded"}
	p := &modeltest.Script{Responses: [][]modeltest.Step{
		modeltest.Response(modeltest.Start("m1"), []modeltest.Step{
			{Part: model.Part{Type: model.PartBlockStart, Index: 0, Block: model.BlockText}},
			{Part: model.Part{Type: model.PartBlockDelta, Index: 0, Delta: model.DeltaText, Text: "Hello, wor"}},
			{Err: overloaded},
		}),
		modeltest.Response(modeltest.Start("m2"), modeltest.Text(0, "Hello, ", "world."), modeltest.Stop("end_turn")),
	}}
	s := newSession(t, p, nil)
	rec := record(t, s)
	res, err := s.Run(bg(t), "Hi")
	if err != nil {
		t.Fatal(err)
	}
	rec.checkMatches(s)
	msgs := s.Messages().Messages
	if len(msgs) != 2 || msgs[1].Text() != "Hello, world." || res.Text != "Hello, world." {
		t.Fatalf("messages %+v", msgs)
	}
	var sawNotice, sawDiscard bool
	for _, ev := range rec.events {
		switch e := ev.(type) {
		case protocol.StreamNotice:
			sawNotice = e.Kind == protocol.NoticeRetrying && e.Attempt == 1 && strings.Contains(e.Cause, "overloaded")
		case protocol.AssistantMessageDiscarded:
			sawDiscard = sawNotice
		}
	}
	if !sawDiscard {
		t.Fatalf("want a retrying notice then a discard; events %v", rec.methods())
	}
}

func TestAbortDuringTool(t *testing.T) {
	t.Parallel()
	p := &modeltest.Script{Responses: [][]modeltest.Step{
		modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "Starting."), modeltest.ToolUse(1, "t1", "Bash", map[string]any{"command": "echo started; sleep 1000"}), modeltest.Stop("tool_use")),
	}}
	s := newSession(t, p, func(o *agent.Options) { o.PermissionMode = protocol.ModeBypassPermissions })
	rec := record(t, s)
	h, err := s.Submit(bg(t), "Run the long job")
	if err != nil {
		t.Fatal(err)
	}
	rec.waitFor("tool output", func(ev protocol.Event) bool {
		e, ok := ev.(protocol.ToolBlockUpdated)
		return ok && strings.Contains(e.ResultChunk, "started")
	})
	s.Abort("")
	res, err := h.Wait(bg(t))
	if !errors.Is(err, agent.ErrAborted) || !errors.Is(res.Err, agent.ErrAborted) {
		t.Fatalf("Wait = %v", err)
	}
	rec.checkMatches(s)
	a := s.Messages().Messages[1]
	tb := a.Blocks[1]
	if tb.Stage != protocol.StageEnd || tb.Success == nil || *tb.Success || tb.Error != agent.ErrAborted.Error() || !strings.Contains(tb.Result, "started") {
		t.Fatalf("tool block after abort %+v", tb)
	}
	if a.Blocks[0].Content != "Starting." {
		t.Fatalf("streamed text lost: %+v", a.Blocks[0])
	}
	if s.Running() {
		t.Fatal("still busy after the aborted run ended")
	}
}

func TestAbortMidStream(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	p := &modeltest.Script{Responses: [][]modeltest.Step{
		modeltest.Response(modeltest.Start("m1"), modeltest.Reasoning(0, "Thinking"), []modeltest.Step{
			{Part: model.Part{Type: model.PartBlockStart, Index: 1, Block: model.BlockText}},
			{Part: model.Part{Type: model.PartBlockDelta, Index: 1, Delta: model.DeltaText, Text: "Partial"}},
			{Part: model.Part{Type: model.PartBlockStart, Index: 2, Block: model.BlockToolUse, ID: "t9", Name: "Bash"}},
			{Part: model.Part{Type: model.PartBlockDelta, Index: 2, Delta: model.DeltaInputJSON, Text: `{"comm`}},
			{Gate: gate},
		}),
		modeltest.Response(modeltest.Start("m2"), modeltest.Text(0, "Fine."), modeltest.Stop("end_turn")),
	}}
	s := newSession(t, p, nil)
	rec := record(t, s)
	h, _ := s.Submit(bg(t), "Go")
	rec.waitFor("the tool's first parameter chunk", func(ev protocol.Event) bool {
		e, ok := ev.(protocol.ToolBlockUpdated)
		return ok && e.Stage == protocol.StageStreaming
	})
	s.Abort("")
	if _, err := h.Wait(bg(t)); !errors.Is(err, agent.ErrAborted) {
		t.Fatalf("Wait = %v", err)
	}
	rec.checkMatches(s)
	a := s.Messages().Messages[1]
	if len(a.Blocks) != 4 {
		t.Fatalf("blocks %+v", a.Blocks)
	}
	if res, _ := h.Wait(bg(t)); res.Text != "Partial" {
		t.Fatalf("an aborted run reports %q, want the text it produced", res.Text)
	}
	if a.Blocks[1].Content != "Partial" || a.Blocks[1].Stage != protocol.StageEnd {
		t.Fatalf("partial text not kept and ended: %+v", a.Blocks[1])
	}
	if tb := a.Blocks[2]; tb.Stage != protocol.StageEnd || tb.Success == nil || *tb.Success {
		t.Fatalf("open tool call not ended as failed: %+v", tb)
	}
	if eb := a.Blocks[3]; eb.Type != protocol.BlockError || eb.Content != "Request was aborted" {
		t.Fatalf("error block %+v", eb)
	}
	// The next message knows the answer was interrupted.
	if _, err := s.Run(bg(t), "again"); err != nil {
		t.Fatal(err)
	}
	req := p.Request(1)
	var sawPartial, sawInterrupted bool
	for _, m := range req.Messages {
		for _, c := range m.Content {
			sawPartial = sawPartial || (m.Role == model.RoleAssistant && c.Text == "Partial")
			sawInterrupted = sawInterrupted || strings.Contains(c.Text, "interrupted")
		}
	}
	if !sawPartial || !sawInterrupted {
		t.Fatalf("context after abort: %+v", req.Messages)
	}
}

func TestPermissionAskedAndAnswered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		decision protocol.Decision
		success  bool
	}{{protocol.DecisionAllow, true}, {protocol.DecisionDeny, false}} {
		t.Run(string(tc.decision), func(t *testing.T) {
			t.Parallel()
			p := &modeltest.Script{Responses: [][]modeltest.Step{
				modeltest.Response(modeltest.Start("m1"), modeltest.ToolUse(0, "t1", "Bash", map[string]any{"command": "echo hi"}), modeltest.Stop("tool_use")),
				modeltest.Response(modeltest.Start("m2"), modeltest.Text(0, "Done."), modeltest.Stop("end_turn")),
			}}
			s := newSession(t, p, nil) // default mode: Bash asks
			rec := record(t, s)
			h, _ := s.Submit(bg(t), "say hi")
			req := rec.waitFor("permission request", func(ev protocol.Event) bool {
				_, ok := ev.(protocol.PermissionRequest)
				return ok
			}).(protocol.PermissionRequest)
			if req.Name != "Bash" || req.CompactParams != "echo hi" {
				t.Fatalf("request %+v", req)
			}
			if pend := s.PendingPermissions(); len(pend) != 1 || pend[0].RequestID != req.RequestID || pend[0].Seq != req.Seq {
				t.Fatalf("pending %+v", pend)
			}
			if err := s.AnswerPermission("nope", protocol.DecisionAllow); !errors.Is(err, agent.ErrUnknownRequest) {
				t.Fatalf("unknown request id: %v", err)
			}
			if err := s.AnswerPermission(req.RequestID, tc.decision); err != nil {
				t.Fatal(err)
			}
			res, err := h.Wait(bg(t))
			if err != nil {
				t.Fatal(err)
			}
			if pend := s.PendingPermissions(); len(pend) != 0 {
				t.Fatalf("still pending after the answer: %+v", pend)
			}
			rec.checkMatches(s)
			tb := s.Messages().Messages[1].Blocks[0]
			if *tb.Success != tc.success {
				t.Fatalf("tool block %+v", tb)
			}
			if !tc.success && (len(res.Denials) != 1 || res.Denials[0].Name != "Bash") {
				t.Fatalf("denials %+v", res.Denials)
			}
		})
	}
}

func TestMaxTokensContinues(t *testing.T) {
	t.Parallel()
	p := &modeltest.Script{Responses: [][]modeltest.Step{
		modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "Part one"), modeltest.Stop("max_tokens")),
		modeltest.Response(modeltest.Start("m2"), modeltest.Text(0, " and two."), modeltest.Stop("end_turn")),
	}}
	s := newSession(t, p, nil)
	res, err := s.Run(bg(t), "long please")
	// The result is the whole answer, the cut part and its continuation,
	// and says it was continued.
	if err != nil || res.Turns != 2 || res.Text != "Part one and two." || res.StopReason != "end_turn" || res.Continued != "max_tokens" {
		t.Fatalf("res %+v err %v", res, err)
	}
	req := p.Request(1)
	last := req.Messages[len(req.Messages)-1]
	if last.Role != model.RoleUser || !strings.Contains(last.Content[0].Text, "cut off") {
		t.Fatalf("continuation prompt: %+v", req.Messages)
	}
}

func TestMaxTokensGivesUp(t *testing.T) {
	t.Parallel()
	var rs [][]modeltest.Step
	for range 3 {
		rs = append(rs, modeltest.Response(modeltest.Start("m"), modeltest.Text(0, "more"), modeltest.Stop("max_tokens")))
	}
	p := modeltest.NewScript(rs...)
	s := newSession(t, p, func(o *agent.Options) { o.MaxContinuations = 2 })
	_, err := s.Run(bg(t), "endless")
	if !errors.Is(err, agent.ErrMaxTokens) {
		t.Fatalf("err %v", err)
	}
	msgs := s.Messages().Messages
	last := msgs[len(msgs)-1]
	if eb := last.Blocks[len(last.Blocks)-1]; eb.Type != protocol.BlockError || !strings.Contains(eb.Content, "output token limit") {
		t.Fatalf("no clear error block: %+v", last)
	}
}

func TestPauseTurnSendsBack(t *testing.T) {
	t.Parallel()
	raw := `{"type":"server_tool_use","id":"srv1","name":"web_search","input":{}}`
	p := &modeltest.Script{Responses: [][]modeltest.Step{
		modeltest.Response(modeltest.Start("m1"), []modeltest.Step{
			{Part: model.Part{Type: model.PartBlockStart, Index: 0, Block: model.BlockRaw, Raw: []byte(raw)}},
			{Part: model.Part{Type: model.PartBlockDelta, Index: 0, Delta: model.DeltaInputJSON, Text: `{"query":"go"}`}},
			{Part: model.Part{Type: model.PartBlockStop, Index: 0}},
		}, modeltest.Stop("pause_turn")),
		modeltest.Response(modeltest.Start("m2"), modeltest.Text(0, "Found it."), modeltest.Stop("end_turn")),
	}}
	s := newSession(t, p, nil)
	res, err := s.Run(bg(t), "search")
	if err != nil || res.Text != "Found it." {
		t.Fatalf("res %+v err %v", res, err)
	}
	req := p.Request(1)
	last := req.Messages[len(req.Messages)-1]
	if last.Role != model.RoleAssistant || last.Content[0].Type != model.ContentRaw {
		t.Fatalf("paused turn not sent back as it was: %+v", req.Messages)
	}
	tb := s.Messages().Messages[1].Blocks[0]
	if tb.Name != "web_search" || tb.Stage != protocol.StageEnd || tb.Parameters != `{"query":"go"}` {
		t.Fatalf("server block display %+v", tb)
	}
}

func TestPersistAndRestore(t *testing.T) {
	t.Parallel()
	st := store.NewJSONL(t.TempDir())
	dir := t.TempDir()
	p := &modeltest.Script{Responses: [][]modeltest.Step{
		modeltest.Response(modeltest.Start("m1"), modeltest.Reasoning(0, "Hmm"), modeltest.Text(1, "First answer."), modeltest.Stop("end_turn")),
		modeltest.Response(modeltest.Start("m2"), modeltest.Text(0, "Second answer."), modeltest.Stop("end_turn")),
	}}
	mk := func(o *agent.Options) { o.Store, o.WorkDir = st, dir }
	s := newSession(t, p, mk)
	if _, err := s.Run(bg(t), "first"); err != nil {
		t.Fatal(err)
	}
	before := s.Messages()
	id := s.ID()
	s.Close()

	list, err := agent.ListSessions(context.Background(), st, dir)
	if err != nil || len(list) != 1 || list[0].ID != id || list[0].Title != "first" {
		t.Fatalf("ListSessions = %+v, %v", list, err)
	}
	opts := agent.Options{Provider: p, Store: st, WorkDir: dir}
	r, err := agent.Open(opts, id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	after := r.Messages()
	if len(after.Messages) != 2 || after.Messages[1].Blocks[0].StartedAt != before.Messages[1].Blocks[0].StartedAt ||
		after.Messages[1].Blocks[0].EndedAt != before.Messages[1].Blocks[0].EndedAt || after.Messages[1].Text() != "First answer." {
		t.Fatalf("restored %+v", after.Messages)
	}
	if _, err := r.Run(bg(t), "second"); err != nil {
		t.Fatal(err)
	}
	req := p.Request(1)
	if len(req.Messages) != 3 || req.Messages[1].Content[len(req.Messages[1].Content)-1].Text != "First answer." {
		t.Fatalf("restored context: %+v", req.Messages)
	}
}

func TestTornLastLineIsSkipped(t *testing.T) {
	t.Parallel()
	st := store.NewJSONL(t.TempDir())
	dir := t.TempDir()
	p := &modeltest.Script{Responses: [][]modeltest.Step{modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "Answer."), modeltest.Stop("end_turn"))}}
	s := newSession(t, p, func(o *agent.Options) { o.Store, o.WorkDir = st, dir })
	if _, err := s.Run(bg(t), "q"); err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	s.Close()
	path, _ := st.Path(store.Key{WorkDir: dir, ID: id})
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"message","message":{"id":"x","ro`)
	f.Close()
	r, err := agent.Open(agent.Options{Provider: p, Store: st, WorkDir: dir}, id)
	if err != nil {
		t.Fatalf("a torn line made the session unreadable: %v", err)
	}
	defer r.Close()
	if n := len(r.Messages().Messages); n != 2 {
		t.Fatalf("%d messages", n)
	}
	if filepath.Dir(path) != st.ProjectDir(dir) {
		t.Fatal("session file outside its project directory")
	}
}

func TestRewindCutsDisplayAndContext(t *testing.T) {
	t.Parallel()
	p := &modeltest.Script{Responses: [][]modeltest.Step{
		modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "One."), modeltest.Stop("end_turn")),
		modeltest.Response(modeltest.Start("m2"), modeltest.Text(0, "Two."), modeltest.Stop("end_turn")),
		modeltest.Response(modeltest.Start("m3"), modeltest.Text(0, "Two again."), modeltest.Stop("end_turn")),
	}}
	s := newSession(t, p, nil)
	rec := record(t, s)
	if _, err := s.Run(bg(t), "one"); err != nil {
		t.Fatal(err)
	}
	h, _ := s.Submit(bg(t), "two")
	h.Wait(bg(t))
	if err := s.Rewind(bg(t), "nope"); !errors.Is(err, agent.ErrUnknownMessage) {
		t.Fatalf("rewind to unknown: %v", err)
	}
	if err := s.Rewind(bg(t), s.Messages().Messages[1].ID); !errors.Is(err, agent.ErrNotUserMessage) {
		t.Fatalf("rewind to an assistant message: %v", err)
	}
	if err := s.Rewind(bg(t), h.ID()); err != nil {
		t.Fatal(err)
	}
	rec.checkMatches(s)
	if n := len(s.Messages().Messages); n != 2 {
		t.Fatalf("%d messages after rewind", n)
	}
	if _, err := s.Run(bg(t), "two, again"); err != nil {
		t.Fatal(err)
	}
	if req := p.Request(2); len(req.Messages) != 3 || req.Messages[2].Content[0].Text != "two, again" {
		t.Fatalf("context after rewind: %+v", req.Messages)
	}
}

func TestCompactAppendsSummaryAndFoldsContext(t *testing.T) {
	t.Parallel()
	p := &modeltest.Script{Responses: [][]modeltest.Step{
		modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "One."), modeltest.Stop("end_turn")),
		modeltest.Response(modeltest.Start("c"), modeltest.Text(0, "The user said one."), modeltest.Stop("end_turn")),
		modeltest.Response(modeltest.Start("m2"), modeltest.Text(0, "Two."), modeltest.Stop("end_turn")),
	}}
	s := newSession(t, p, nil)
	rec := record(t, s)
	if err := s.Compact(bg(t)); !errors.Is(err, agent.ErrNothingToCompact) {
		t.Fatalf("compact of nothing: %v", err)
	}
	if _, err := s.Run(bg(t), "one"); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(bg(t)); err != nil {
		t.Fatal(err)
	}
	rec.checkMatches(s)
	msgs := s.Messages().Messages
	if len(msgs) != 3 || msgs[2].Blocks[0].Type != protocol.BlockCompact || msgs[2].Blocks[0].Content != "The user said one." {
		t.Fatalf("display after compact: %+v", msgs)
	}
	if _, err := s.Run(bg(t), "two"); err != nil {
		t.Fatal(err)
	}
	req := p.Request(2)
	if len(req.Messages) != 2 || !strings.Contains(req.Messages[0].Content[0].Text, "The user said one.") || req.Messages[1].Content[0].Text != "two" {
		t.Fatalf("folded context: %+v", req.Messages)
	}
}

func TestClear(t *testing.T) {
	t.Parallel()
	p := &modeltest.Script{Responses: [][]modeltest.Step{
		modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "One."), modeltest.Stop("end_turn")),
		modeltest.Response(modeltest.Start("m2"), modeltest.Text(0, "Fresh."), modeltest.Stop("end_turn")),
	}}
	s := newSession(t, p, nil)
	rec := record(t, s)
	s.Run(bg(t), "one")
	if err := s.Clear(bg(t)); err != nil {
		t.Fatal(err)
	}
	s.Run(bg(t), "new")
	rec.checkMatches(s)
	if req := p.Request(1); len(req.Messages) != 1 || req.Messages[0].Content[0].Text != "new" {
		t.Fatalf("context after clear: %+v", req.Messages)
	}
}

func TestBang(t *testing.T) {
	t.Parallel()
	p := &modeltest.Script{Responses: [][]modeltest.Step{modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "I see a.txt."), modeltest.Stop("end_turn"))}}
	s := newSession(t, p, nil)
	os.WriteFile(filepath.Join(s.WorkDir(), "a.txt"), []byte("x"), 0o600)
	rec := record(t, s)
	res, err := s.Bang(bg(t), "ls")
	if err != nil || !strings.Contains(res.Text, "a.txt") {
		t.Fatalf("bang: %+v %v", res, err)
	}
	rec.checkMatches(s)
	m := s.Messages().Messages[0]
	if m.Role != protocol.RoleUser || m.Blocks[0].Content != "!ls" || m.Blocks[1].Type != protocol.BlockTool || m.Blocks[1].Name != "Bash" || !strings.Contains(m.Blocks[1].Result, "a.txt") {
		t.Fatalf("bang message %+v", m)
	}
	s.Run(bg(t), "what did you see?")
	if req := p.Request(0); !strings.Contains(req.Messages[0].Content[0].Text, "<bash-stdout>a.txt") {
		t.Fatalf("bang context %+v", req.Messages)
	}
}

// TestSlowSubscriberDoesNotBlock streams a long answer to a subscriber
// that reads nothing until the end: the run finishes, and the backlog holds
// a few merged events rather than one per delta.
func TestSlowSubscriberDoesNotBlock(t *testing.T) {
	t.Parallel()
	chunks := make([]string, 5000)
	for i := range chunks {
		chunks[i] = "word "
	}
	p := &modeltest.Script{Responses: [][]modeltest.Step{modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, chunks...), modeltest.Stop("end_turn"))}}
	s := newSession(t, p, nil)
	idle := s.Subscribe(agent.SubscribeOptions{})
	defer idle.Close()
	rec := record(t, s)
	if _, err := s.Run(bg(t), "talk"); err != nil {
		t.Fatal(err)
	}
	if n := idle.Pending(); n > 20 {
		t.Fatalf("a subscriber that read nothing holds %d events for %d deltas", n, len(chunks))
	}
	rec.checkMatches(s)
	l := protocol.NewList(protocol.Snapshot{Messages: []protocol.Message{}})
	for idle.Pending() > 0 {
		ev, _ := idle.Next(bg(t))
		if err := l.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.At(1).Text(); got != strings.Repeat("word ", 5000) {
		t.Fatalf("merged backlog lost text: %d bytes", len(got))
	}
}

func TestSubscribeFromReplays(t *testing.T) {
	t.Parallel()
	p := &modeltest.Script{Responses: [][]modeltest.Step{modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "a", "b", "c"), modeltest.Stop("end_turn"))}}
	s := newSession(t, p, nil)
	s.Run(bg(t), "x")
	cur := s.Seq()
	sub, err := s.SubscribeFrom(3, agent.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	l := protocol.NewList(protocol.Snapshot{})
	// Rebuild from scratch: events 1..3 from a second replay, then the rest.
	all, err := s.SubscribeFrom(0, agent.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	for l.Seq() < cur {
		ev, err := all.Next(bg(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	ev, _ := sub.Next(bg(t))
	if ev.Head().From() != 4 {
		t.Fatalf("replay after 3 starts at %d", ev.Head().From())
	}
	if _, err := s.SubscribeFrom(cur+5, agent.SubscribeOptions{}); !errors.Is(err, agent.ErrTooFarBehind) {
		t.Fatalf("future seq: %v", err)
	}
	got, _ := l.Snapshot(), 0
	if got.Messages[1].Text() != "abc" {
		t.Fatalf("replayed list %+v", got)
	}
}

func TestQueuedMessagesRunInOrder(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	p := &modeltest.Script{Responses: [][]modeltest.Step{
		modeltest.Response(modeltest.Start("m1"), []modeltest.Step{{Gate: gate}}, modeltest.Text(0, "first"), modeltest.Stop("end_turn")),
		modeltest.Response(modeltest.Start("m2"), modeltest.Text(0, "second"), modeltest.Stop("end_turn")),
	}}
	s := newSession(t, p, nil)
	h1, _ := s.Submit(bg(t), "1")
	h2, _ := s.Submit(bg(t), "2")
	close(gate)
	r1, _ := h1.Wait(bg(t))
	r2, _ := h2.Wait(bg(t))
	if r1.Text != "first" || r2.Text != "second" {
		t.Fatalf("%q %q", r1.Text, r2.Text)
	}
	msgs := s.Messages().Messages
	if len(msgs) != 4 || msgs[0].Text() != "1" || msgs[2].Text() != "2" {
		t.Fatalf("order %+v", msgs)
	}
}

func TestMaxTurns(t *testing.T) {
	t.Parallel()
	var rs [][]modeltest.Step
	for i := range 3 {
		rs = append(rs, modeltest.Response(modeltest.Start("m"), modeltest.ToolUse(0, "t"+string(rune('a'+i)), "Glob", map[string]any{"pattern": "*"}), modeltest.Stop("tool_use")))
	}
	p := modeltest.NewScript(rs...)
	s := newSession(t, p, func(o *agent.Options) { o.MaxTurns = 2 })
	_, err := s.Run(bg(t), "loop")
	if !errors.Is(err, agent.ErrMaxTurns) {
		t.Fatalf("err %v", err)
	}
	if p.Count() != 2 {
		t.Fatalf("%d requests", p.Count())
	}
}

// collapse drops adjacent repeats.
func collapse(ms []string) []string {
	var out []string
	for _, m := range ms {
		if len(out) == 0 || out[len(out)-1] != m {
			out = append(out, m)
		}
	}
	return out
}

func TestContextOverflowCompactsAndRetries(t *testing.T) {
	t.Parallel()
	overflow := fmt.Errorf("anthropic API error 400: prompt is too long: %w", model.ErrContextOverflow)
	p := &modeltest.Script{Responses: [][]modeltest.Step{
		modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "One."), modeltest.Stop("end_turn")),
		modeltest.Fail(overflow),
		modeltest.Response(modeltest.Start("c"), modeltest.Text(0, "Summary of one."), modeltest.Stop("end_turn")),
		modeltest.Response(modeltest.Start("m2"), modeltest.Text(0, "Two."), modeltest.Stop("end_turn")),
	}}
	s := newSession(t, p, nil)
	s.Run(bg(t), "one")
	res, err := s.Run(bg(t), "two")
	if err != nil || res.Text != "Two." {
		t.Fatalf("res %+v err %v", res, err)
	}
	if p.Count() != 4 {
		t.Fatalf("%d requests, want the failed one, the summary and the retry", p.Count())
	}
	msgs := s.Messages().Messages
	var compacted bool
	for _, m := range msgs {
		compacted = compacted || (len(m.Blocks) > 0 && m.Blocks[0].Type == protocol.BlockCompact)
	}
	if !compacted {
		t.Fatalf("no compact block: %+v", msgs)
	}
	for _, m := range msgs {
		for _, b := range m.Blocks {
			if b.Type == protocol.BlockError {
				t.Fatalf("a recovered overflow left an error block: %+v", msgs)
			}
		}
	}
}

// TestToolsDoNotSeeKeys: a model that runs `env` must not get the API key
// into a tool result (and from there into every face and the session file).
func TestToolsDoNotSeeKeys(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-SECRET-VALUE")
	t.Setenv("GITHUB_TOKEN", "ghp-SECRET-VALUE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-SECRET-VALUE")
	t.Setenv("AWS_SESSION_TOKEN", "aws-SECRET-VALUE")
	t.Setenv("DB_PASSWORD", "db-SECRET-VALUE")
	t.Setenv("NPM_TOKEN", "npm-allowed")
	t.Setenv("SLUICE_VISIBLE", "yes")
	p := &modeltest.Script{Responses: [][]modeltest.Step{
		modeltest.Response(modeltest.Start("m1"), modeltest.ToolUse(0, "t1", "Bash", map[string]any{"command": "env"}), modeltest.Stop("tool_use")),
		modeltest.Response(modeltest.Start("m2"), modeltest.Text(0, "ok"), modeltest.Stop("end_turn")),
	}}
	s := newSession(t, p, func(o *agent.Options) {
		o.PermissionMode, o.ChildEnv = protocol.ModeBypassPermissions, agent.EnvPolicy{Include: []string{"NPM_TOKEN"}}
	})
	if _, err := s.Run(bg(t), "show env"); err != nil {
		t.Fatal(err)
	}
	out := s.Messages().Messages[1].Blocks[0].Result
	if strings.Contains(out, "SECRET-VALUE") || !strings.Contains(out, "SLUICE_VISIBLE=yes") || !strings.Contains(out, "NPM_TOKEN=npm-allowed") {
		t.Fatalf("tool environment: %q", out)
	}
}

// TestRefusedRewindDoesNotAbort: a rewind to a message that is not there
// fails without stopping the run in progress.
func TestRefusedRewindDoesNotAbort(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	p := &modeltest.Script{Responses: [][]modeltest.Step{modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "part"), []modeltest.Step{{Gate: gate}}, modeltest.Text(1, "rest"), modeltest.Stop("end_turn"))}}
	s := newSession(t, p, nil)
	rec := record(t, s)
	h, _ := s.Submit(bg(t), "go")
	rec.waitFor("the first text", func(ev protocol.Event) bool {
		_, ok := ev.(protocol.AssistantContentUpdated)
		return ok
	})
	if !s.Running() {
		t.Fatal("Running() is false during a run")
	}
	if err := s.Rewind(bg(t), "nope"); !errors.Is(err, agent.ErrUnknownMessage) {
		t.Fatalf("rewind: %v", err)
	}
	close(gate)
	if res, err := h.Wait(bg(t)); err != nil || res.Text != "partrest" {
		t.Fatalf("the run was disturbed: %+v %v", res, err)
	}
	if s.Running() {
		t.Fatal("Running() is true after the run")
	}
}

// Options.Title (--name) names the session in the list, in place of its
// first message; a resumed session keeps its title.
func TestSessionTitle(t *testing.T) {
	t.Parallel()
	st := store.NewJSONL(t.TempDir())
	dir := t.TempDir()
	p := &modeltest.Script{Responses: [][]modeltest.Step{
		modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "One."), modeltest.Stop("end_turn")),
		modeltest.Response(modeltest.Start("m2"), modeltest.Text(0, "Two."), modeltest.Stop("end_turn")),
		modeltest.Response(modeltest.Start("m3"), modeltest.Text(0, "Three."), modeltest.Stop("end_turn")),
	}}
	title := func() string {
		t.Helper()
		list, err := agent.ListSessions(context.Background(), st, dir)
		if err != nil || len(list) != 1 {
			t.Fatalf("ListSessions = %+v, %v", list, err)
		}
		return list[0].Title
	}
	s := newSession(t, p, func(o *agent.Options) { o.Store, o.WorkDir, o.Title = st, dir, "Release notes" })
	if _, err := s.Run(bg(t), "first message"); err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	s.Close()
	if got := title(); got != "Release notes" {
		t.Fatalf("title %q", got)
	}
	for _, tc := range []struct{ title, want string }{{"", "Release notes"}, {"Renamed", "Release notes"}} {
		r, err := agent.Open(agent.Options{Provider: p, Store: st, WorkDir: dir, Title: tc.title}, id)
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Run(bg(t), "more")
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := title(); got != tc.want {
			t.Errorf("resumed with title %q: %q, want %q", tc.title, got, tc.want)
		}
	}
}
