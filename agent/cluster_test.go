package agent_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/store"
)

// numbered gives evs the seqs after seq.
func numbered(id string, seq int64, evs []protocol.Event) []protocol.Event {
	out := make([]protocol.Event, len(evs))
	for i, ev := range evs {
		out[i] = protocol.WithHeader(ev, protocol.Header{SessionID: id, Seq: seq + int64(i) + 1})
	}
	return out
}

func cutSnapshot() protocol.Snapshot {
	return protocol.Snapshot{
		Seq: 9, Running: true,
		Messages: []protocol.Message{
			{ID: "u1", Role: protocol.RoleUser, Blocks: []protocol.Block{{Type: protocol.BlockText, Content: "q"}}},
			{ID: "a1", Role: protocol.RoleAssistant, Blocks: []protocol.Block{
				{Type: protocol.BlockReasoning, Content: "hm", Stage: protocol.StageEnd},
				{Type: protocol.BlockText, Content: "half an ans", Stage: protocol.StageStreaming},
				{Type: protocol.BlockTool, ToolID: "t1", Name: "Bash", Stage: protocol.StageRunning, Parameters: `{"command":"ls"}`, Result: "a\n"},
			}},
		},
		PendingPermissions: []protocol.PermissionRequest{{RequestID: "p1", ToolID: "t1", Name: "Bash"}},
	}
}

func TestInterruptedEndsWhatWasCut(t *testing.T) {
	t.Parallel()
	done := cutSnapshot()
	done.Running, done.PendingPermissions = false, nil
	done.Messages[1].Blocks = done.Messages[1].Blocks[:1]
	for _, tc := range []struct {
		name   string
		snap   protocol.Snapshot
		cause  string
		events int
		note   string
	}{
		// text end, tool end, error block, turn ended, permission denied, idle
		{"cut mid-run", cutSnapshot(), "", 6, "Interrupted: sluice stopped before this answer was finished"},
		{"cut by a lost lease", cutSnapshot(), "the session's lease was lost: node n1 stopped holding it", 6,
			"Interrupted: the session's lease was lost: node n1 stopped holding it"},
		{"finished", done, "", 0, ""},
		{"empty", protocol.Snapshot{}, "", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			evs := numbered("s", tc.snap.Seq, agent.Interrupted(tc.snap, tc.cause))
			if len(evs) != tc.events {
				t.Fatalf("%d events, want %d: %+v", len(evs), tc.events, evs)
			}
			l := protocol.NewList(tc.snap)
			for _, ev := range evs {
				if err := l.Apply(ev); err != nil {
					t.Fatalf("%s: %v", ev.Method(), err)
				}
			}
			got := l.Snapshot()
			if got.Running || len(got.PendingPermissions) != 0 {
				t.Fatalf("still running or waiting: %+v", got)
			}
			for _, m := range got.Messages {
				for _, b := range m.Blocks {
					if b.Stage == protocol.StageStreaming || b.Stage == protocol.StageRunning {
						t.Fatalf("block left open: %+v", b)
					}
					if b.Type == protocol.BlockTool && (b.Success == nil || *b.Success || b.Result != "a\n") {
						t.Fatalf("tool not ended as failed with its output: %+v", b)
					}
				}
			}
			if tc.events > 0 {
				last := got.Messages[1].Blocks[len(got.Messages[1].Blocks)-1]
				if last.Type != protocol.BlockError || last.Content != tc.note {
					t.Fatalf("the cut answer's last block is %+v, want the error %q", last, tc.note)
				}
				if got.Messages[1].StopReason != agent.StopInterrupted {
					t.Fatalf("the cut turn's stop reason is %q, want %q", got.Messages[1].StopReason, agent.StopInterrupted)
				}
				// The run ends in the order: the error block, the
				// turn's end, then idle.
				var order []string
				for _, ev := range evs {
					switch ev.(type) {
					case protocol.ErrorBlockAdded, protocol.TurnEnded, protocol.RunStateChanged:
						order = append(order, ev.Method())
					}
				}
				if want := []string{protocol.MethodErrorBlockAdded, protocol.MethodTurnEnded, protocol.MethodRunStateChanged}; !slices.Equal(order, want) {
					t.Fatalf("the run ends with %v, want %v", order, want)
				}
			}
		})
	}
}

func TestMirrorDeliversWhatItApplies(t *testing.T) {
	t.Parallel()
	m := agent.NewMirror("s", cutSnapshot())
	snap, sub := m.SnapshotAndSubscribe(agent.SubscribeOptions{})
	defer sub.Close()
	if snap.Seq != 9 || !m.Running() {
		t.Fatalf("mirror starts at %d running=%v", snap.Seq, m.Running())
	}
	chunk := func(seq int64, s string) protocol.Event {
		return protocol.AssistantContentUpdated{Header: protocol.Header{SessionID: "s", Seq: seq}, MessageID: "a1", BlockIndex: 1, Chunk: s, Stage: protocol.StageStreaming}
	}
	for i, s := range []string{"wer", " and", " more"} {
		if err := m.Apply(chunk(int64(10+i), s)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Apply(chunk(11, "again")); !errors.Is(err, protocol.ErrStale) {
		t.Fatalf("stale event: %v", err)
	}
	if err := m.Apply(chunk(20, "x")); !errors.Is(err, protocol.ErrGap) {
		t.Fatalf("gap: %v", err)
	}
	// The three deltas queued for the subscriber merged into one.
	ev, err := sub.Next(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if c := ev.(protocol.AssistantContentUpdated); c.Chunk != "wer and more" || c.From() != 10 || c.Seq != 12 {
		t.Fatalf("delivered %+v", c)
	}
	from, err := m.SubscribeFrom(10, agent.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ev, _ := from.Next(t.Context()); ev.Head().From() != 11 {
		t.Fatalf("SubscribeFrom(10) starts at %d", ev.Head().From())
	}
	// A merged event from the log (13..14) is replayed to a subscriber at
	// 12, and one holding 13 (inside it) cannot resume.
	merged, _ := protocol.Merge(chunk(13, "!"), chunk(14, "!"))
	if err := m.Apply(merged); err != nil {
		t.Fatal(err)
	}
	if err := m.Apply(chunk(15, ".")); err != nil {
		t.Fatal(err)
	}
	at12, err := m.SubscribeFrom(12, agent.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ev, _ := at12.Next(t.Context()); ev.Head().From() != 13 || ev.Head().Seq != 15 {
		t.Fatalf("SubscribeFrom(12) starts with %d..%d", ev.Head().From(), ev.Head().Seq)
	}
	at12.Close()
	if _, err := m.SubscribeFrom(13, agent.SubscribeOptions{}); !errors.Is(err, agent.ErrTooFarBehind) {
		t.Fatalf("SubscribeFrom(13) inside a merged event: %v", err)
	}
	if got := m.Messages().Messages[1].Blocks[1].Content; got != "half an answer and more!!." {
		t.Fatalf("mirror holds %q", got)
	}
	// Events before the mirror's first one (read from a log that still
	// holds them) can be added for subscribers that are further behind.
	early := agent.NewMirror("s", protocol.Snapshot{Seq: 12})
	if err := early.Backfill([]protocol.Event{chunk(11, "a"), chunk(12, "b")}); err != nil {
		t.Fatal(err)
	}
	if err := early.Backfill([]protocol.Event{chunk(8, "x")}); err == nil {
		t.Fatal("a backfill that does not end at the buffer's start was taken")
	}
	back, err := early.SubscribeFrom(10, agent.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ev, _ := back.Next(t.Context()); ev.Head().From() != 11 || ev.Head().Seq != 12 {
		t.Fatalf("SubscribeFrom(10) after backfill starts with %d..%d", ev.Head().From(), ev.Head().Seq)
	}
	back.Close()

	m.Reset(protocol.Snapshot{Seq: 30})
	// What was queued before the reset is still delivered, then the end.
	for {
		_, err := from.Next(t.Context())
		if errors.Is(err, agent.ErrClosed) {
			break
		}
		if err != nil {
			t.Fatalf("after Reset: %v", err)
		}
	}
	if m.Seq() != 30 || m.Running() {
		t.Fatalf("after Reset at %d running=%v", m.Seq(), m.Running())
	}
}

// TestContinueGoesOnFromTheLogState: a node taking a session over continues
// its seq, ends the cut run with events and keeps the stored context.
func TestContinueGoesOnFromTheLogState(t *testing.T) {
	t.Parallel()
	st, dir := store.NewJSONL(t.TempDir()), t.TempDir()
	p := modeltest.NewScript(modeltest.Answer("m1", "first answer"))
	s := newSession(t, p, func(o *agent.Options) { o.Store, o.WorkDir, o.SessionID = st, dir, "s" })
	if _, err := s.Run(bg(t), "q"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	snap := cutSnapshot()
	p2 := modeltest.NewScript(modeltest.Answer("m2", "second"))
	r, err := agent.Continue(agent.Options{Provider: p2, Store: st, WorkDir: dir, Stream: modeltest.StreamOptions()}, "s", snap, "")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sub, err := r.SubscribeFrom(snap.Seq, agent.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if r.Seq() != snap.Seq+6 || r.Running() {
		t.Fatalf("continued at seq %d running=%v", r.Seq(), r.Running())
	}
	if _, err := r.Run(bg(t), "go on"); err != nil {
		t.Fatal(err)
	}
	want := snap.Seq + 1
	for want <= r.Seq() {
		ev, err := sub.Next(bg(t))
		if err != nil {
			t.Fatal(err)
		}
		if ev.Head().From() != want {
			t.Fatalf("event covering %d..%d, want from %d", ev.Head().From(), ev.Head().Seq, want)
		}
		want = ev.Head().Seq + 1
	}
	// The model's context is the stored one: the first exchange, then the
	// new message.
	got := p2.Request(0).Messages
	if len(got) < 3 || got[0].Content[0].Text != "q" || got[1].Role != model.RoleAssistant || got[len(got)-1].Content[0].Text != "go on" {
		t.Fatalf("the model was sent %+v", got)
	}
}

// contextTexts is the text of each message the model was sent, role first.
func contextTexts(msgs []model.Message) []string {
	var out []string
	for _, m := range msgs {
		t := string(m.Role) + ":"
		for _, c := range m.Content {
			if c.Type == model.ContentText {
				t += c.Text
			}
		}
		out = append(out, t)
	}
	return out
}

// TestContinueSendsWhatWasShown: a node that takes a session over sends
// the model what the clients were shown, wherever the store's records
// stopped (the process died, or the store was down, before they caught
// up) or went further (the event log was behind).
func TestContinueSendsWhatWasShown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// shown makes what was shown from the stored display.
		shown func(stored []protocol.Message) protocol.Snapshot
		want  []string
	}{{
		name: "the store missed the last chunks",
		shown: func(stored []protocol.Message) protocol.Snapshot {
			more := append([]protocol.Message(nil), stored...)
			more = append(more,
				protocol.Message{ID: "u2", Role: protocol.RoleUser, Blocks: []protocol.Block{{Type: protocol.BlockText, Content: "more"}}},
				protocol.Message{ID: "a2", Role: protocol.RoleAssistant, Blocks: []protocol.Block{{Type: protocol.BlockText, Content: "shown, never stored", Stage: protocol.StageStreaming}}})
			return protocol.Snapshot{Seq: 50, Running: true, Messages: more}
		},
		want: []string{"user:q", "assistant:first answer", "user:more", "assistant:shown, never stored", "user:[Response interrupted: sluice stopped before it was finished]", "user:go on"},
	}, {
		name: "the store is ahead of what was shown",
		shown: func(stored []protocol.Message) protocol.Snapshot {
			cut := stored[1].Clone()
			cut.Blocks = []protocol.Block{{Type: protocol.BlockText, Content: "first", Stage: protocol.StageStreaming}}
			return protocol.Snapshot{Seq: 50, Running: true, Messages: []protocol.Message{stored[0], cut}}
		},
		want: []string{"user:q", "assistant:first", "user:[Response interrupted: sluice stopped before it was finished]", "user:go on"},
	}, {
		name: "both agree",
		shown: func(stored []protocol.Message) protocol.Snapshot {
			return protocol.Snapshot{Seq: 50, Messages: stored}
		},
		want: []string{"user:q", "assistant:first answer", "user:go on"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, dir := store.NewJSONL(t.TempDir()), t.TempDir()
			s := newSession(t, modeltest.NewScript(modeltest.Answer("m1", "first answer")), func(o *agent.Options) { o.Store, o.WorkDir, o.SessionID = st, dir, "s" })
			if _, err := s.Run(bg(t), "q"); err != nil {
				t.Fatal(err)
			}
			stored := s.Messages().Messages
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			p := modeltest.NewScript(modeltest.Answer("m2", "second"))
			r, err := agent.Continue(agent.Options{Provider: p, Store: st, WorkDir: dir, Stream: modeltest.StreamOptions()}, "s", tc.shown(stored), "")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if _, err := r.Run(bg(t), "go on"); err != nil {
				t.Fatal(err)
			}
			if got := contextTexts(p.Request(0).Messages); !slices.Equal(got, tc.want) {
				t.Fatalf("the model was sent\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// contextShape writes what a context holds for the model, tool calls and
// results included.
func contextShape(msgs []model.Message) []string {
	var out []string
	for _, m := range msgs {
		t := string(m.Role) + ":"
		for _, c := range m.Content {
			switch c.Type {
			case model.ContentText:
				t += c.Text
			case model.ContentToolUse:
				t += fmt.Sprintf("[use %s %s %s]", c.ID, c.Name, c.Input)
			case model.ContentToolResult:
				t += fmt.Sprintf("[result %s %q error=%v]", c.ID, c.Text, c.IsError)
			}
		}
		out = append(out, t)
	}
	return out
}

// TestContinueSendsToolsThatWereShown: where the store missed the end of a
// session, the model's next request after a takeover holds the tool calls
// and results the clients were shown, as the live session would have sent
// them; a call the cut answer was running is sent as interrupted, as it was
// shown, and one whose parameters were still streaming (it never ran) is
// left out.
func TestContinueSendsToolsThatWereShown(t *testing.T) {
	t.Parallel()
	// What the clients were shown past the store: a live session's answer
	// with a tool call mid-answer, and the request that session sent next.
	live := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.Text(0, "Listing."), modeltest.ToolUse(1, "t1", "Bash", map[string]any{"command": "printf 'a\\nb\\n'"}), modeltest.Stop("tool_use")),
		modeltest.Answer("m2", "Two files."),
		modeltest.Answer("m3", "ok"))
	ls := newSession(t, live, func(o *agent.Options) { o.PermissionMode = protocol.ModeBypassPermissions })
	if _, err := ls.Run(bg(t), "list"); err != nil {
		t.Fatal(err)
	}
	after := ls.Messages().Messages
	if _, err := ls.Run(bg(t), "go on"); err != nil {
		t.Fatal(err)
	}
	liveNext := contextShape(live.Request(2).Messages)
	running := after[1].Clone()
	running.StopReason = ""
	running.Blocks[1].Stage, running.Blocks[1].Result, running.Blocks[1].Success = protocol.StageRunning, "a\n", nil
	streaming := running.Clone()
	streaming.Blocks[1].Stage, streaming.Blocks[1].Parameters = protocol.StageStreaming, `{"comm`
	const interrupted = "interrupted: sluice stopped while the tool was running; its output is lost"
	for _, tc := range []struct {
		name  string
		shown []protocol.Message // after the stored messages
		run   bool
		want  []string // after the stored context
	}{{
		name:  "the store missed a tool call and its result",
		shown: after,
		want:  liveNext,
	}, {
		name:  "cut while the tool ran",
		shown: []protocol.Message{after[0], running},
		run:   true,
		want: []string{"user:list", `assistant:Listing.[use t1 Bash {"command":"printf 'a\\nb\\n'"}]`,
			fmt.Sprintf("user:[result t1 %q error=true]", interrupted),
			"user:[Response interrupted: sluice stopped before it was finished]", "user:go on"},
	}, {
		name:  "cut while the tool's parameters streamed",
		shown: []protocol.Message{after[0], streaming},
		run:   true,
		want:  []string{"user:list", "assistant:Listing.", "user:[Response interrupted: sluice stopped before it was finished]", "user:go on"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, dir := store.NewJSONL(t.TempDir()), t.TempDir()
			s := newSession(t, modeltest.NewScript(modeltest.Answer("m0", "first answer")), func(o *agent.Options) { o.Store, o.WorkDir, o.SessionID = st, dir, "s" })
			if _, err := s.Run(bg(t), "q"); err != nil {
				t.Fatal(err)
			}
			stored := s.Messages().Messages
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			shown := protocol.Snapshot{Seq: 50, Running: tc.run, Messages: append(slices.Clone(stored), tc.shown...)}
			p := modeltest.NewScript(modeltest.Answer("m4", "ok"))
			r, err := agent.Continue(agent.Options{Provider: p, Store: st, WorkDir: dir, Stream: modeltest.StreamOptions()}, "s", shown, "")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if _, err := r.Run(bg(t), "go on"); err != nil {
				t.Fatal(err)
			}
			want := append([]string{"user:q", "assistant:first answer"}, tc.want...)
			if got := contextShape(p.Request(0).Messages); !slices.Equal(got, want) {
				t.Fatalf("the model was sent\n%q\nwant\n%q", got, want)
			}
		})
	}
}
