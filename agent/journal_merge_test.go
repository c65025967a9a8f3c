package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/sluicehq/sluice/protocol"
)

// memLog is a store.Log that keeps the records appended to it.
type memLog struct {
	mu    sync.Mutex
	lines []json.RawMessage
}

func (l *memLog) Append(_ context.Context, records ...json.RawMessage) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range records {
		l.lines = append(l.lines, append(json.RawMessage(nil), r...))
	}
	return nil
}

func (l *memLog) Close() error { return nil }

// TestJournalMergesDeltas: the journal writes a stream's deltas merged per
// block, in events of bounded size, in order with the events between
// them; what it writes reduces to the display the events published one by
// one reduce to. In a bubble, so that the flusher's delay passes only once
// everything is queued: one batch, merged as far as merging goes.
func TestJournalMergesDeltas(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testJournalMergesDeltas)
}

func testJournalMergesDeltas(t *testing.T) {
	const m = "msg_1"
	var evs []protocol.Event
	add := func(ev protocol.Event) { evs = append(evs, ev) }
	add(protocol.AssistantMessageAdded{Message: protocol.Message{ID: m, Role: protocol.RoleAssistant, Blocks: []protocol.Block{}}})
	const chunk = 64
	for i := 0; i < 3*journalMergeMax/chunk; i++ { // three merged events' worth
		add(protocol.AssistantContentUpdated{MessageID: m, BlockIndex: 0, Chunk: fmt.Sprintf("delta %0*d ", chunk-7, i), Stage: protocol.StageStreaming})
	}
	add(protocol.AssistantContentUpdated{MessageID: m, BlockIndex: 0, Stage: protocol.StageEnd})
	for i := range 3 {
		add(protocol.AssistantReasoningUpdated{MessageID: m, BlockIndex: 1, Chunk: fmt.Sprint("thought ", i), Stage: protocol.StageStreaming, StartedAt: 1})
	}
	add(protocol.AssistantReasoningUpdated{MessageID: m, BlockIndex: 1, Stage: protocol.StageEnd, EndedAt: 2})
	for i := range 3 {
		add(protocol.AssistantContentUpdated{MessageID: m, BlockIndex: 2, Chunk: fmt.Sprint("more ", i), Stage: protocol.StageStreaming})
		add(protocol.ToolBlockUpdated{MessageID: m, BlockIndex: 3 + i, ToolID: fmt.Sprint("t", i), Name: "Bash", Stage: protocol.StageStart})
	}

	log := &memLog{}
	j := newJournal(log)
	var published protocol.List
	for i, ev := range evs {
		// Published as the bus publishes: the event the journal gets
		// carries what the list grew.
		out, err := published.Publish(protocol.WithHeader(ev, protocol.Header{SessionID: "s", Seq: int64(i + 1)}))
		if err != nil {
			t.Fatal(err)
		}
		j.addEvent(out)
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}

	var replayed protocol.List
	deltas := 0
	for i, line := range log.lines {
		var r struct {
			Type   string          `json:"type"`
			Method string          `json:"method"`
			Event  json.RawMessage `json:"event"`
		}
		if err := json.Unmarshal(line, &r); err != nil || r.Type != recEvent {
			t.Fatalf("record %d is not an event (%v): %.200s", i, err, line)
		}
		ev, err := protocol.Decode(r.Method, r.Event)
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := ev.(protocol.AssistantContentUpdated); ok && c.BlockIndex == 0 && c.Stage == protocol.StageStreaming {
			deltas++
			if len(c.Chunk) > journalMergeMax {
				t.Errorf("a merged event holds %d bytes, more than %d", len(c.Chunk), journalMergeMax)
			}
		}
		if err := replayed.Apply(protocol.WithHeader(ev, protocol.Header{SessionID: "s", Seq: int64(i + 1)})); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if deltas < 3 || deltas > 4 {
		t.Errorf("block 0's %d deltas were written as %d events, want 3 or 4 of at most %d bytes", 3*journalMergeMax/chunk, deltas, journalMergeMax)
	}
	if want := 1 + 4 + 1 + 1 + 1 + 6; len(log.lines) != want {
		t.Errorf("%d records, want %d (each run of deltas merged, nothing else)", len(log.lines), want)
	}
	got, want := replayed.Snapshot().Messages, published.Snapshot().Messages
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the journal's events reduce to\n%+v\nthe published ones to\n%+v", got, want)
	}
}

// TestJournalKeepsRunsApart: a text delta merges into the run before it
// only when it continues that run (the next seq, the same block of the
// same message, the same session or child): deltas of two blocks, or of a
// parent and its child, that follow each other with nothing between are
// written each to its own, and what the journal writes reduces to the
// display the published events reduce to.
func TestJournalKeepsRunsApart(t *testing.T) {
	t.Parallel()
	delta := func(msg string, block int, parent, chunk string) protocol.Event {
		return protocol.AssistantContentUpdated{Header: protocol.Header{ParentToolID: parent}, MessageID: msg, BlockIndex: block,
			Chunk: chunk, Stage: protocol.StageStreaming}
	}
	message := func(id, parent string) protocol.Event {
		return protocol.AssistantMessageAdded{Header: protocol.Header{ParentToolID: parent},
			Message: protocol.Message{ID: id, Role: protocol.RoleAssistant, Blocks: []protocol.Block{}}}
	}
	tests := []struct {
		name string
		evs  []protocol.Event
	}{
		{name: "two blocks", evs: []protocol.Event{message("m", ""),
			delta("m", 0, "", "a0 "), delta("m", 1, "", "b0 "), delta("m", 0, "", "a1 "), delta("m", 1, "", "b1 "), delta("m", 1, "", "b2 ")}},
		{name: "two messages", evs: []protocol.Event{message("m1", ""), delta("m1", 0, "", "a0 "), message("m2", ""),
			delta("m2", 0, "", "b0 "), delta("m1", 0, "", "a1 "), delta("m2", 0, "", "b1 ")}},
		{name: "a parent and its child", evs: []protocol.Event{message("m", ""),
			protocol.ToolBlockUpdated{MessageID: "m", BlockIndex: 0, ToolID: "call", Name: "Agent", Stage: protocol.StageStart},
			message("c", "call"), delta("c", 0, "call", "child0 "),
			delta("m", 1, "", "parent0 "), delta("c", 0, "call", "child1 "), delta("m", 1, "", "parent1 ")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			log := &memLog{}
			j := newJournal(log)
			var published protocol.List
			for i, ev := range tt.evs {
				out, err := published.Publish(protocol.WithHeader(ev, protocol.Header{SessionID: "s", Seq: int64(i + 1), ParentToolID: ev.Head().ParentToolID}))
				if err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				j.addEvent(out)
			}
			if err := j.close(); err != nil {
				t.Fatal(err)
			}
			var replayed protocol.List
			for i, line := range log.lines {
				var r struct {
					Method string          `json:"method"`
					Event  json.RawMessage `json:"event"`
				}
				if err := json.Unmarshal(line, &r); err != nil {
					t.Fatal(err)
				}
				ev, err := protocol.Decode(r.Method, r.Event)
				if err != nil {
					t.Fatal(err)
				}
				if err := replayed.Apply(protocol.WithHeader(ev, protocol.Header{SessionID: "s", Seq: int64(i + 1), ParentToolID: ev.Head().ParentToolID})); err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
			}
			got, want := replayed.Snapshot().Messages, published.Snapshot().Messages
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the journal's events reduce to\n%+v\nthe published ones to\n%+v", got, want)
			}
		})
	}
}

// A file tool's end event keeps its file data off the journal: it is for
// the live faces, not part of the block, and would make the session file
// hold every file read or changed.
func TestJournalLeavesOutToolFile(t *testing.T) {
	t.Parallel()
	const original = "the file's whole text\n"
	log := &memLog{}
	j := newJournal(log)
	ok, result := true, "done"
	j.addEvent(protocol.ToolBlockUpdated{
		Header: protocol.Header{SessionID: "s", Seq: 1}, MessageID: "m", ToolID: "t1", Name: "Edit",
		Stage: protocol.StageEnd, Result: &result, Success: &ok,
		File: &protocol.ToolFile{Path: "/w/a.txt", Original: original, Patch: []protocol.Hunk{{OldStart: 1, OldLines: 1, NewStart: 1, NewLines: 1, Lines: []string{"-a", "+b"}}}},
	})
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	if len(log.lines) != 1 {
		t.Fatalf("%d records, want 1", len(log.lines))
	}
	if line := string(log.lines[0]); strings.Contains(line, original) || strings.Contains(line, `"file"`) || !strings.Contains(line, `"result":"done"`) {
		t.Errorf("journal record %s: want the end event without its file data", line)
	}
}
