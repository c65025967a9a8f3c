package protocol_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/sluicehq/sluice/protocol"
)

func hdr(seq int64) protocol.Header { return protocol.Header{SessionID: "s", Seq: seq} }

func TestApplyErrors(t *testing.T) {
	t.Parallel()
	base := func() *protocol.List {
		l := &protocol.List{}
		for _, ev := range []protocol.Event{
			protocol.UserMessageAdded{Header: hdr(1), Message: protocol.Message{ID: "u1", Role: protocol.RoleUser}},
			protocol.AssistantMessageAdded{Header: hdr(2), Message: protocol.Message{ID: "a1", Role: protocol.RoleAssistant}},
			protocol.AssistantContentUpdated{Header: hdr(3), MessageID: "a1", Chunk: "abc", Stage: protocol.StageStreaming},
		} {
			if err := l.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
		return l
	}
	tests := []struct {
		name string
		ev   protocol.Event
		want error
	}{
		{"stale", protocol.AssistantContentUpdated{Header: hdr(3), MessageID: "a1", Chunk: "x", Stage: protocol.StageStreaming}, protocol.ErrStale},
		{"gap", protocol.AssistantContentUpdated{Header: hdr(5), MessageID: "a1", Chunk: "x", Stage: protocol.StageStreaming}, protocol.ErrGap},
		{"merged straddles held seq", protocol.AssistantContentUpdated{Header: protocol.Header{SessionID: "s", Seq: 5, FirstSeq: 3}, MessageID: "a1", Chunk: "x", Stage: protocol.StageStreaming}, protocol.ErrGap},
		{"unknown message", protocol.AssistantContentUpdated{Header: hdr(4), MessageID: "zz", Chunk: "x", Stage: protocol.StageStreaming}, protocol.ErrInconsistent},
		{"block index skips", protocol.AssistantContentUpdated{Header: hdr(4), MessageID: "a1", BlockIndex: 2, Chunk: "x", Stage: protocol.StageStreaming}, protocol.ErrInconsistent},
		{"wrong block type", protocol.AssistantReasoningUpdated{Header: hdr(4), MessageID: "a1", Chunk: "x", Stage: protocol.StageStreaming}, protocol.ErrInconsistent},
		{"rewind to unknown", protocol.MessagesRewound{Header: hdr(4), AnchorMessageID: "nope"}, protocol.ErrInconsistent},
		{"compact without its message", protocol.CompactBlockAdded{Header: hdr(4)}, protocol.ErrInconsistent},
		{"child of no tool block", protocol.UserMessageAdded{Header: protocol.Header{SessionID: "s", Seq: 4, ParentToolID: "t9"}, Message: protocol.Message{ID: "c1"}}, protocol.ErrInconsistent},
		{"child names a text block's message", protocol.AssistantContentUpdated{Header: protocol.Header{SessionID: "s", Seq: 4, ParentToolID: "a1"}, MessageID: "a1", Chunk: "x", Stage: protocol.StageStreaming}, protocol.ErrInconsistent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := base()
			before := l.Snapshot()
			err := l.Apply(tt.ev)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Apply = %v, want %v", err, tt.want)
			}
			after := l.Snapshot()
			if after.Seq != before.Seq || after.Messages[1].Blocks[0].Content != "abc" {
				t.Fatalf("a refused event changed the list: %+v", after)
			}
		})
	}
}

// TestSnapshotIsACopy checks that a snapshot does not change when the list
// goes on growing in the same buffer, and that changing a snapshot does not
// reach the list.
func TestSnapshotIsACopy(t *testing.T) {
	t.Parallel()
	l := &protocol.List{}
	l.Apply(protocol.AssistantMessageAdded{Header: hdr(1), Message: protocol.Message{ID: "a1"}})
	l.Apply(protocol.AssistantContentUpdated{Header: hdr(2), MessageID: "a1", Chunk: "Hello", Stage: protocol.StageStreaming})
	snap := l.Snapshot()
	for i := int64(3); i < 100; i++ {
		l.Apply(protocol.AssistantContentUpdated{Header: hdr(i), MessageID: "a1", Chunk: "!", Stage: protocol.StageStreaming})
	}
	if got := snap.Messages[0].Blocks[0].Content; got != "Hello" {
		t.Fatalf("snapshot changed to %q", got)
	}
	snap.Messages[0].Blocks[0].Content = "mutated"
	if got := l.At(0).Blocks[0].Content; got != "Hello"+strings.Repeat("!", 97) {
		t.Fatalf("list content %q", got)
	}
	// A list reset from a snapshot must not write into the original's buffer.
	other := protocol.NewList(l.Snapshot())
	other.Apply(protocol.AssistantContentUpdated{Header: hdr(100), MessageID: "a1", Chunk: "X", Stage: protocol.StageStreaming})
	l.Apply(protocol.AssistantContentUpdated{Header: hdr(100), MessageID: "a1", Chunk: "Y", Stage: protocol.StageStreaming})
	if a, b := other.At(0).Blocks[0].Content, l.At(0).Blocks[0].Content; a[len(a)-1] != 'X' || b[len(b)-1] != 'Y' || a[:len(a)-1] != b[:len(b)-1] {
		t.Fatalf("lists share a buffer: %q vs %q", a[len(a)-3:], b[len(b)-3:])
	}
}

// BenchmarkApplyDelta measures one text delta applied to a long block: the
// cost must not grow with the block (amortised O(chunk)).
func BenchmarkApplyDelta(b *testing.B) {
	l := &protocol.List{}
	l.Apply(protocol.AssistantMessageAdded{Header: hdr(1), Message: protocol.Message{ID: "a1"}})
	seq := int64(1)
	b.ReportAllocs()
	for b.Loop() {
		seq++
		if err := l.Apply(protocol.AssistantContentUpdated{Header: hdr(seq), MessageID: "a1", Chunk: "0123456789", Stage: protocol.StageStreaming}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBlockContent finds a block's content at the top and under a tool
// block (a child session's message), and nothing where there is none.
func TestBlockContent(t *testing.T) {
	t.Parallel()
	l := protocol.NewList(protocol.Snapshot{})
	child := protocol.Header{ParentToolID: "t1"}
	for i, ev := range []protocol.Event{
		protocol.AssistantMessageAdded{Message: protocol.Message{ID: "a", Role: protocol.RoleAssistant}},
		protocol.AssistantContentUpdated{MessageID: "a", BlockIndex: 0, Chunk: "top ", Stage: protocol.StageStreaming},
		protocol.AssistantContentUpdated{MessageID: "a", BlockIndex: 0, Chunk: "text", Stage: protocol.StageStreaming},
		protocol.ToolBlockUpdated{MessageID: "a", BlockIndex: 1, ToolID: "t1", Name: "Task", Stage: protocol.StageStart},
		protocol.AssistantMessageAdded{Header: child, Message: protocol.Message{ID: "c", Role: protocol.RoleAssistant}},
		protocol.AssistantContentUpdated{Header: child, MessageID: "c", BlockIndex: 0, Chunk: "child text", Stage: protocol.StageStreaming},
	} {
		h := ev.Head()
		h.Seq = int64(i + 1)
		if err := l.Apply(protocol.WithHeader(ev, h)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		id    string
		block int
		want  string
	}{{"a", 0, "top text"}, {"c", 0, "child text"}, {"a", 1, ""}, {"a", 2, ""}, {"c", -1, ""}, {"x", 0, ""}} {
		if got := l.BlockContent(tc.id, tc.block); got != tc.want {
			t.Errorf("BlockContent(%q, %d) = %q, want %q", tc.id, tc.block, got, tc.want)
		}
	}
}

// TestPublishSharesText: the lists of one process applying the events a
// list published share its text instead of copying it (also through a
// queue's merged events), and nothing of that reaches the wire: a decoded
// event applies as before.
func TestPublishSharesText(t *testing.T) {
	t.Parallel()
	pub := protocol.NewList(protocol.Snapshot{})
	var seq int64
	publish := func(ev protocol.Event) protocol.Event {
		t.Helper()
		seq++
		out, err := pub.Publish(protocol.WithHeader(ev, protocol.Header{SessionID: "s", Seq: seq}))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	face := protocol.NewList(pub.Snapshot())
	wired := protocol.NewList(pub.Snapshot())
	apply := func(ev protocol.Event) {
		t.Helper()
		if err := face.Apply(ev); err != nil {
			t.Fatal(err)
		}
		line, err := protocol.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := protocol.Encode(protocol.Plain(ev))
		if string(line) != string(plain) {
			t.Fatalf("the wire form carries more than the event: %s", line)
		}
		var head struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			t.Fatal(err)
		}
		dec, err := protocol.Decode(head.Method, head.Params)
		if err != nil {
			t.Fatal(err)
		}
		if err := wired.Apply(dec); err != nil {
			t.Fatal(err)
		}
	}
	shared := func(what string) {
		t.Helper()
		got, want := face.BlockContent("a", 0), pub.BlockContent("a", 0)
		if got != want || wired.BlockContent("a", 0) != want {
			t.Fatalf("%s: face %q, wired %q, publisher %q", what, got, wired.BlockContent("a", 0), want)
		}
		if unsafe.StringData(got) != unsafe.StringData(want) {
			t.Fatalf("%s: the face holds a copy of the publisher's text", what)
		}
	}
	apply(publish(protocol.AssistantMessageAdded{Message: protocol.Message{ID: "a", Role: protocol.RoleAssistant}}))
	for _, c := range []string{"Hello", ", ", "world"} {
		apply(publish(protocol.AssistantContentUpdated{MessageID: "a", Chunk: c, Stage: protocol.StageStreaming}))
		shared("after " + c)
	}
	// A queue merges adjacent deltas; the merged event is shared too.
	var m protocol.Merger
	merged := publish(protocol.AssistantContentUpdated{MessageID: "a", Chunk: strings.Repeat("x", 100), Stage: protocol.StageStreaming})
	for range 50 {
		next := publish(protocol.AssistantContentUpdated{MessageID: "a", Chunk: strings.Repeat("y", 100), Stage: protocol.StageStreaming})
		var ok bool
		if merged, ok = m.Merge(merged, next); !ok {
			t.Fatal("adjacent deltas did not merge")
		}
	}
	apply(merged)
	shared("after a merged run")
	if e := merged.(protocol.AssistantContentUpdated); len(e.Chunk) != 5100 || e.Chunk != pub.BlockContent("a", 0)[len("Hello, world"):] {
		t.Fatalf("merged chunk %d bytes", len(e.Chunk))
	}
	// An event that is not the publisher's (decoded, or built) appends.
	apply(protocol.AssistantContentUpdated{Header: protocol.Header{SessionID: "s", Seq: seq + 1}, MessageID: "a", Chunk: "!", Stage: protocol.StageStreaming})
	if got := face.BlockContent("a", 0); got != pub.BlockContent("a", 0)+"!" {
		t.Fatalf("after a plain event: %q", got[len(got)-3:])
	}
}

func TestDigestOf(t *testing.T) {
	t.Parallel()
	ok := true
	msgs := []protocol.Message{
		{Role: protocol.RoleUser, Blocks: []protocol.Block{{Type: protocol.BlockText, Content: "the task"}}},
		{Role: protocol.RoleAssistant, Blocks: []protocol.Block{
			{Type: protocol.BlockText, Content: "first\nlooking "},
			{Type: protocol.BlockTool, Name: "Bash", Stage: protocol.StageEnd, Success: &ok},
		}},
		{Role: protocol.RoleUser, Blocks: []protocol.Block{{Type: protocol.BlockText, Content: "ignored"}}},
		{Role: protocol.RoleAssistant, Blocks: []protocol.Block{
			{Type: protocol.BlockTool, Name: "Read"},
			{Type: protocol.BlockText, Content: "  \n"},
		}},
	}
	d := protocol.DigestOf(msgs)
	if len(d.Tools) != 2 || d.Tools[0].Name != "Bash" || d.Tools[1].Name != "Read" {
		t.Errorf("tools %+v", d.Tools)
	}
	if d.LastLine != "looking" {
		t.Errorf("last line %q, want the last line of the latest non-blank text", d.LastLine)
	}
	if d := protocol.DigestOf(nil); d.LastLine != "" || d.Tools != nil {
		t.Errorf("empty digest %+v", d)
	}
}
