package agent_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
)

// A message sent while a run is going reaches the model at the run's next
// request, after the tool results, not after the run: it is published as
// sent at that moment, the run goes on as one run, and the message's
// handle ends with it.
func TestSteeringJoinsTheRunningRun(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	p := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.Gate(gate),
			modeltest.ToolUse(0, "t1", "Glob", map[string]any{"pattern": "*.go"}), modeltest.Stop("tool_use")),
		modeltest.Answer("m2", "Looking at the tests, as you asked."),
	)
	s := newSession(t, p, nil)
	rec := record(t, s)
	first, err := s.Submit(context.Background(), "find the Go files")
	if err != nil {
		t.Fatal(err)
	}
	rec.waitFor("the first response", func(ev protocol.Event) bool { _, ok := ev.(protocol.AssistantMessageAdded); return ok })
	second, err := s.Submit(context.Background(), "only the tests, please")
	if err != nil {
		t.Fatal(err)
	}
	close(gate)
	res, err := first.Wait(context.Background())
	if err != nil || res.Text != "Looking at the tests, as you asked." {
		t.Fatalf("first: %q %v", res.Text, err)
	}
	res2, err := second.Wait(context.Background())
	if err != nil || res2.Text != res.Text || res2.MessageID != second.ID() {
		t.Fatalf("second: %+v %v: want the run's result under its own id", res2, err)
	}
	if n := p.Count(); n != 2 {
		t.Fatalf("%d model requests, want 2 (one run)", n)
	}
	// The second request holds the tool result, then the steered message.
	msgs := p.Request(1).Messages
	last := msgs[len(msgs)-1]
	if last.Role != model.RoleUser || len(last.Content) == 0 || last.Content[0].Text != "only the tests, please" {
		t.Fatalf("last message of the second request: %+v", last)
	}
	if prev := msgs[len(msgs)-2]; prev.Content[0].Type != model.ContentToolResult {
		t.Fatalf("the steered message does not follow the tool result: %+v", prev)
	}
	rec.checkMatches(s)
	// The display: the steered message after the tool round, before the
	// answer; one running/idle pair.
	var roles []string
	for _, m := range s.Messages().Messages {
		roles = append(roles, string(m.Role)+":"+strings.TrimSpace(m.Text()))
	}
	want := []string{"user:find the Go files", "assistant:", "user:only the tests, please", "assistant:Looking at the tests, as you asked."}
	if !slices.Equal(roles, want) {
		t.Errorf("messages %q, want %q", roles, want)
	}
	states := 0
	for _, ev := range rec.events {
		if _, ok := ev.(protocol.RunStateChanged); ok {
			states++
		}
	}
	if states != 2 {
		t.Errorf("%d runStateChanged events, want 2 (one run)", states)
	}
	// Faces show the message queued, then sent: queueChanged lists it
	// while it waits and empties as it is sent, just before its
	// userMessageAdded.
	var trail []string
	for _, ev := range rec.events {
		switch e := ev.(type) {
		case protocol.QueueChanged:
			var ids []string
			for _, q := range e.Queued {
				ids = append(ids, string(q.Kind)+":"+q.MessageID+":"+q.Text)
			}
			trail = append(trail, "queue["+strings.Join(ids, ",")+"]")
		case protocol.UserMessageAdded:
			trail = append(trail, "sent:"+e.Message.ID)
		}
	}
	wantTrail := []string{"sent:" + first.ID(), "queue[message:" + second.ID() + ":only the tests, please]", "queue[]", "sent:" + second.ID()}
	if !slices.Equal(trail, wantTrail) {
		t.Errorf("queue and sends %q, want %q", trail, wantTrail)
	}
	if q := s.Messages().Queued; len(q) != 0 {
		t.Errorf("snapshot still lists %+v as queued", q)
	}
}

// A bang queued during a run keeps its place: it is no message to steer
// with, and neither is a message queued after it.
func TestSteeringKeepsOtherWorkInOrder(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	p := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.Gate(gate),
			modeltest.ToolUse(0, "t1", "Glob", map[string]any{"pattern": "*.go"}), modeltest.Stop("tool_use")),
		modeltest.Answer("m2", "done"),
		modeltest.Answer("m3", "after the bang"),
	)
	s := newSession(t, p, func(o *agent.Options) { o.PermissionMode = protocol.ModeBypassPermissions })
	// Subscribed first: a response added before the subscription would be
	// in its snapshot, and waitFor would never see its event.
	rec := record(t, s)
	first, _ := s.Submit(context.Background(), "go")
	rec.waitFor("the first response", func(ev protocol.Event) bool { _, ok := ev.(protocol.AssistantMessageAdded); return ok })
	bang, _ := s.SubmitBang(context.Background(), "echo hi")
	after, _ := s.Submit(context.Background(), "and then?")
	close(gate)
	for _, h := range []*agent.Handle{first, bang, after} {
		if _, err := h.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.Count(); n != 3 {
		t.Fatalf("%d model requests, want 3: the run, then the message after the bang", n)
	}
	if msgs := p.Request(1).Messages; msgs[len(msgs)-1].Content[0].Type != model.ContentToolResult {
		t.Errorf("the run's second request took a message from behind the bang")
	}
}

// An abort drops what is queued, and the faces' queue empties with it.
func TestAbortEmptiesTheQueue(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	p := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.Gate(gate), modeltest.Text(0, "never"), modeltest.Stop("end_turn")),
	)
	s := newSession(t, p, nil)
	rec := record(t, s)
	first, _ := s.Submit(context.Background(), "go")
	rec.waitFor("the first response", func(ev protocol.Event) bool { _, ok := ev.(protocol.AssistantMessageAdded); return ok })
	second, _ := s.Submit(context.Background(), "and this")
	compact, _ := s.SubmitCompact(context.Background())
	rec.waitFor("the queue of two", func(ev protocol.Event) bool {
		q, ok := ev.(protocol.QueueChanged)
		return ok && len(q.Queued) == 2 && q.Queued[1].Kind == protocol.QueueCompact
	})
	if q := s.Messages().Queued; len(q) != 2 || q[0].MessageID != second.ID() {
		t.Fatalf("snapshot queue %+v, want the message and the compaction", q)
	}
	s.Abort("stop")
	close(gate)
	for _, h := range []*agent.Handle{first, second, compact} {
		_, _ = h.Wait(context.Background())
	}
	rec.waitFor("the emptied queue", func(ev protocol.Event) bool { q, ok := ev.(protocol.QueueChanged); return ok && len(q.Queued) == 0 })
	if q := s.Messages().Queued; len(q) != 0 {
		t.Errorf("snapshot queue %+v after the abort", q)
	}
	rec.checkMatches(s)
}
