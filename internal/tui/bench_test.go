package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
)

// longSession is a session of n messages: questions, and answers with
// reasoning, markdown and a tool call.
func longSession(n int) protocol.Snapshot {
	ok := true
	msgs := make([]protocol.Message, 0, n)
	for i := 0; len(msgs) < n; i++ {
		msgs = append(msgs, protocol.Message{ID: fmt.Sprintf("u%d", i), Role: protocol.RoleUser,
			Blocks: []protocol.Block{{Type: protocol.BlockText, Content: fmt.Sprintf("question %d: what does this code do?", i)}}})
		msgs = append(msgs, protocol.Message{ID: fmt.Sprintf("a%d", i), Role: protocol.RoleAssistant, StopReason: "end_turn",
			Blocks: []protocol.Block{
				{Type: protocol.BlockReasoning, Stage: protocol.StageEnd, Content: "Let me look at the file first.", StartedAt: 1, EndedAt: 2001},
				{Type: protocol.BlockTool, Stage: protocol.StageEnd, Name: "Read", ToolID: "t", Parameters: `{"file_path":"main.go"}`, CompactParams: "main.go", Result: strings.Repeat("line\n", 40), ShortResult: "line\nline", Success: &ok},
				{Type: protocol.BlockText, Stage: protocol.StageEnd, Content: "It **prints** a greeting:\n\n```go\nfmt.Println(\"hi\")\n```\n\nThat is all."},
			}})
	}
	return protocol.Snapshot{Messages: msgs[:n]}
}

// streamingModel is a model showing a session of n messages, all printed,
// with an answer streaming.
func streamingModel(tb testing.TB, n int) (*ui, *int64) {
	truth := protocol.NewList(longSession(n))
	fb := &fakeBackend{model: "m", truth: truth}
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	m := newModel(ctx, Options{Width: 100, Height: 40, Style: "dark", Clock: modeltest.NewClock(t0)}, fb)
	m.printer = func(string) tea.Cmd { return nil }
	seq := int64(0)
	send := func(evs ...protocol.Event) {
		for _, e := range evs {
			seq++
			m.Update(eventsMsg{gen: m.gen, evs: []protocol.Event{protocol.WithHeader(e, protocol.Header{Seq: seq})}})
			m.printing = false
		}
	}
	send(runState(protocol.RunRunning), userMsg("uq", "and now?"), asstMsg("aq"),
		textDelta("aq", 0, strings.Repeat("Some earlier paragraph of the answer.\n\n", 20)))
	m.View()
	return m, &seq
}

// BenchmarkDelta measures applying one text delta to a session of 2,000
// messages and rendering the frame: the work per delta is what is new,
// whatever the session's length or the answer's.
func BenchmarkDelta(b *testing.B) {
	for _, tc := range []struct {
		name  string
		chunk func(i int) string
	}{
		{"words", func(i int) string { return "word " }},
		{"lines", func(i int) string {
			if i%16 == 15 {
				return "end of line.\n"
			}
			return "word "
		}},
		{"paragraphs", func(i int) string {
			if i%64 == 63 {
				return "end of paragraph.\n\n"
			}
			return "word "
		}},
	} {
		b.Run("2000msgs/"+tc.name, func(b *testing.B) {
			m, seq := streamingModel(b, 2000)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				*seq++
				ev := protocol.WithHeader(textDelta("aq", 0, tc.chunk(i)), protocol.Header{Seq: *seq})
				m.Update(eventsMsg{gen: m.gen, evs: []protocol.Event{ev}})
				_ = m.View()
			}
		})
	}
}

// TestPrintedContentIsReleased: once blocks are printed, the UI keeps
// nothing of them beyond the session's list — no rendering, no pending
// output — however many messages went by.
func TestPrintedContentIsReleased(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 80, 30)
	h.ev(runState(protocol.RunRunning))
	for i := 0; i < 200; i++ {
		u, a := fmt.Sprintf("u%d", i), fmt.Sprintf("a%d", i)
		start := h.clock.Now().UnixMilli()
		h.burst(userMsg(u, "q"), asstMsg(a), thinkDelta(a, 0, "hmm", start), thinkEnd(a, 0, start+10),
			textDelta(a, 1, strings.Repeat("answer text ", 50)))
		if len(h.m.caches) == 0 {
			t.Fatal("a streaming block is not cached")
		}
		h.burst(textEnd(a, 1), turnEnd(a, "end_turn", 1, 1))
		if len(h.m.caches) != 0 || len(h.m.outbox) != 0 {
			t.Fatalf("after %d answers the UI still holds %d renderings and %d lines to print", i+1, len(h.m.caches), len(h.m.outbox))
		}
	}
	if h.m.pm != h.m.list.Len()-1 {
		t.Fatalf("print cursor at %d of %d", h.m.pm, h.m.list.Len())
	}
}
