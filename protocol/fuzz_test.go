package protocol_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/sluicehq/sluice/protocol"
)

// eventGen turns fuzz input into a stream of events that mostly fit a
// list (a few message ids, every stage, and most often the last block of
// one of the last messages of list, or the next block), so that the fuzzer
// reaches deep states and runs of deltas to one block, which is what a
// merging stage merges.
type eventGen struct {
	data []byte
	seq  int64
	// disturb lets the seqs repeat and skip, not only count up.
	disturb bool
	list    *protocol.List // the state the events are meant for
}

func (g *eventGen) next() byte {
	if len(g.data) == 0 {
		return 0
	}
	b := g.data[0]
	g.data = g.data[1:]
	return b
}

func (g *eventGen) pick(choices ...string) string { return choices[int(g.next())%len(choices)] }

func (g *eventGen) id() string { return g.pick("a1", "a1", "a2", "u1", "") }

// target picks the message and block of a block event.
func (g *eventGen) target() (string, int) {
	if n := g.list.Len(); n > 0 && g.next()%4 != 0 {
		m := g.list.At(max(n-1-int(g.next()%2), 0))
		return m.ID, len(m.Blocks) - int(g.next()%2) // the last block, or a new one
	}
	return g.id(), int(g.next() % 4)
}

func (g *eventGen) text() string {
	return g.pick("", "a", "bc", "世界", "👋", "\n", "line\nnext\n", "{\"k\":")
}

func (g *eventGen) stage() protocol.Stage {
	return protocol.Stage(g.pick("", "start", "streaming", "running", "end", "streaming", "running"))
}

func (g *eventGen) flag() bool { return g.next()%2 == 1 }

func (g *eventGen) header() protocol.Header {
	g.seq++
	if g.disturb {
		switch g.next() % 16 {
		case 0:
			g.seq -= 2 // stale
		case 1:
			g.seq += 2 // a gap
		}
	}
	return protocol.Header{SessionID: "s", Seq: g.seq}
}

func (g *eventGen) message(role protocol.Role) protocol.Message {
	m := protocol.Message{ID: g.id(), Role: role, CreatedAt: 1}
	for range int(g.next() % 3) {
		m.Blocks = append(m.Blocks, protocol.Block{Type: protocol.BlockText, Content: g.text()})
	}
	return m
}

// event returns the next event, or nil when the input is used up.
func (g *eventGen) event() protocol.Event {
	if len(g.data) == 0 {
		return nil
	}
	kind := g.next() % 15
	h := g.header()
	if g.next()%3 == 0 {
		// An event of a child session, nested under a tool block.
		h.ParentToolID = g.pick("t1", "t2")
	}
	id, bi := g.target()
	switch kind {
	case 0:
		return protocol.UserMessageAdded{Header: h, Message: g.message(protocol.RoleUser)}
	case 1:
		return protocol.AssistantMessageAdded{Header: h, Message: protocol.Message{ID: g.id(), Role: protocol.RoleAssistant}}
	case 2, 3:
		return protocol.AssistantContentUpdated{Header: h, MessageID: id, BlockIndex: bi, Chunk: g.text(), Stage: g.stage()}
	case 4:
		e := protocol.AssistantReasoningUpdated{Header: h, MessageID: id, BlockIndex: bi, Chunk: g.text(), Stage: g.stage()}
		if g.flag() {
			e.StartedAt = int64(g.next()) + 1
		}
		if g.flag() {
			e.EndedAt = int64(g.next()) + 1
		}
		return e
	case 5, 6:
		e := protocol.ToolBlockUpdated{Header: h, MessageID: id, BlockIndex: bi,
			ToolID: g.pick("", "t1", "t2"), Name: g.pick("", "Bash", "Read"), Stage: g.stage()}
		e.ParametersChunk = g.text()
		if g.flag() {
			e.Parameters = g.text()
		}
		if g.flag() {
			e.CompactParams = g.text()
		}
		e.ResultChunk = g.text()
		if g.flag() {
			e.ShortResult = g.text()
		}
		if g.next()%4 == 0 {
			r := g.text()
			e.Result = &r
		}
		if g.next()%4 == 0 {
			ok := g.flag()
			e.Success = &ok
		}
		if g.next()%4 == 0 {
			e.Error = g.text()
		}
		return e
	case 7:
		return protocol.ErrorBlockAdded{Header: h, MessageID: id, BlockIndex: bi, Error: g.text()}
	case 8:
		return protocol.CompactBlockAdded{Header: h, Message: protocol.Message{ID: g.id(), Role: protocol.RoleAssistant,
			Blocks: []protocol.Block{{Type: protocol.BlockCompact, Content: g.text()}}}}
	case 9:
		return protocol.AssistantMessageDiscarded{Header: h, MessageID: g.id()}
	case 10:
		e := protocol.TurnEnded{Header: h, MessageID: g.id(), StopReason: g.pick("", "end_turn", "tool_use")}
		if g.flag() {
			e.Usage = &protocol.Usage{InputTokens: int(g.next()), OutputTokens: int(g.next())}
		}
		return e
	case 11:
		if g.next()%4 == 0 {
			return protocol.MessagesCleared{Header: h}
		}
		return protocol.MessagesRewound{Header: h, AnchorMessageID: g.id()}
	case 12:
		return protocol.RunStateChanged{Header: h, State: protocol.RunState(g.pick("running", "idle", ""))}
	case 13:
		return protocol.PermissionRequest{Header: h, RequestID: g.pick("r1", "r2", "r3"), MessageID: g.id(), BlockIndex: bi,
			ToolID: "t1", Name: "Bash", Parameters: g.text()}
	default:
		if g.flag() {
			return protocol.StreamNotice{Header: h, Kind: protocol.NoticeStalled, IdleMs: int64(g.next())}
		}
		return protocol.PermissionResolved{Header: h, RequestID: g.pick("r1", "r2", "r3", "r9"), Decision: protocol.DecisionAllow}
	}
}

func stateJSON(t *testing.T, s protocol.Snapshot) []byte {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzReducer applies arbitrary event streams to a List and checks that
//   - no event makes it panic;
//   - an event it refuses leaves the state as it was;
//   - a snapshot never changes after it is taken, however the list grows
//     from the buffers it shares with it;
//   - the events, merged as every buffering stage merges them (Merger),
//     reduce to the same state as one by one.
func FuzzReducer(f *testing.F) {
	f.Add([]byte{0, 1, 1, 2, 0, 1, 1, 2, 2, 0, 1, 1, 2, 2, 0, 1, 1, 10, 0, 1, 1, 12, 0, 1})
	f.Add([]byte{1, 0, 1, 1, 1, 1, 5, 0, 1, 1, 1, 2, 1, 1, 5, 0, 1, 1, 1, 2, 1, 1, 5, 0, 1, 1, 1, 3, 1, 1, 6, 0, 1, 1, 1, 3, 1, 1})
	f.Add(bytes.Repeat([]byte{1, 0, 1, 1, 4, 0, 1, 1, 2, 1, 1, 1, 1, 13, 0, 0, 1, 15, 0, 0}, 4))
	f.Add(bytes.Repeat([]byte{3, 7, 1, 2, 5, 9, 11, 13}, 30))
	// Long pseudo-random streams: the mutator grows inputs slowly.
	r := rand.New(rand.NewPCG(1, 2))
	for range 16 {
		data := make([]byte, 300+r.IntN(600))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		f.Add(data)
	}
	f.Fuzz(runReducerFuzz)
}

func runReducerFuzz(t *testing.T, data []byte) {
	if len(data) == 0 {
		return
	}
	// The stream as a publisher sends it (fit): only the events that fit,
	// numbered without gaps. And all of them as generated (evs).
	var one protocol.List
	var evs, fit []protocol.Event
	g := &eventGen{data: data[1:], disturb: data[0]%2 == 1, list: &one}
	for ev := g.event(); ev != nil && len(evs) < 400; ev = g.event() {
		evs = append(evs, ev)
		ev = protocol.WithHeader(ev, protocol.Header{SessionID: "s", Seq: one.Seq() + 1, ParentToolID: ev.Head().ParentToolID})
		if one.Apply(ev) == nil {
			fit = append(fit, ev)
		}
	}

	type taken struct {
		snap protocol.Snapshot
		js   []byte
	}
	var snaps []taken
	var l protocol.List
	for i, ev := range evs {
		before := stateJSON(t, l.Snapshot())
		if err := l.Apply(ev); err != nil {
			if after := stateJSON(t, l.Snapshot()); !bytes.Equal(before, after) {
				t.Fatalf("refused %s (%v) changed the state:\n%s\n%s", ev.Method(), err, before, after)
			}
			continue
		}
		if i%3 == 0 {
			s := l.Snapshot()
			snaps = append(snaps, taken{s, stateJSON(t, s)})
		}
	}
	for _, s := range snaps {
		if got := stateJSON(t, s.snap); !bytes.Equal(got, s.js) {
			t.Fatalf("a snapshot changed after it was taken:\n%s\n%s", s.js, got)
		}
	}

	// Applied one by one (one), and through a merging queue, the events
	// that fit must reduce to the same state.
	var queue []protocol.Event
	var m protocol.Merger
	for _, ev := range fit {
		if n := len(queue); n > 0 {
			if merged, ok := m.Merge(queue[n-1], ev); ok {
				queue[n-1] = merged
				continue
			}
		}
		queue = append(queue, ev)
	}
	var merged protocol.List
	for _, ev := range queue {
		if err := merged.Apply(ev); err != nil {
			t.Fatalf("merged %s (seq %d..%d) refused: %v", ev.Method(), ev.Head().From(), ev.Head().Seq, err)
		}
	}
	if a, b := stateJSON(t, one.Snapshot()), stateJSON(t, merged.Snapshot()); !bytes.Equal(a, b) {
		t.Fatalf("merged deltas reduce differently:\none by one %s\nmerged     %s", a, b)
	}
}

// FuzzDecodeApply feeds arbitrary notification lines to the decoder and
// the reducer: whatever arrives on the wire, nothing panics.
func FuzzDecodeApply(f *testing.F) {
	for _, v := range loadVectors(f) {
		var lines [][]byte
		for _, n := range v.Events {
			line, _ := json.Marshal(n)
			lines = append(lines, line)
		}
		f.Add(bytes.Join(lines, []byte("\n")))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var l protocol.List
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			ev, err := protocol.DecodeNotification(line)
			if err != nil {
				continue
			}
			_ = l.Apply(ev)
			_ = l.Snapshot()
		}
	})
}

// FuzzDecodeNotification checks DecodeNotification, which reads a line in
// Encode's shape by its frame, against decoding the envelope as JSON and
// then its params: for any line both fail, or both give the same event.
func FuzzDecodeNotification(f *testing.F) {
	for _, v := range loadVectors(f) {
		for _, n := range v.Events {
			ev, err := protocol.Decode(n.Method, n.Params)
			if err != nil {
				f.Fatal(err)
			}
			line, err := protocol.Encode(ev)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(line)
		}
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","method":"turnEnded","params":{"sessionId":"s","seq":1},"method":"messagesCleared"}`,
		`{"jsonrpc":"2.0","method":"turnEnded","params":{"sessionId":"s","seq":1},"params":{"seq":2}}`,
		`{"jsonrpc":"2.0","method":"turnEnde\u0064","params":{"sessionId":"s","seq":1}}`,
		`{"jsonrpc":"2.0","method":"turnEnded","params":{"sessionId":"s","seq":1} }`,
		`{"jsonrpc":"2.0","method":"turnEnded","params":{"sessionId":"}"}`,
		// Each is one byte or name off the frame, where the frame's own
		// checks (prefix, separator, closing brace) are all that tells it
		// from a line that is not a notification.
		`{"jsonrpc":"2.0","methox":"turnEnded","params":{"sessionId":"s","seq":1}}`,
		`{"jsonrpc":"2.0","method":"turnEnded","paramz":{"sessionId":"s","seq":1}}`,
		`{"jsonrpc":"2.0","method":"turnEnded","params":{"sessionId":"s","seq":1}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, gerr := protocol.DecodeNotification(data)
		var n protocol.Notification
		want, werr := protocol.Event(nil), json.Unmarshal(data, &n)
		if werr == nil {
			want, werr = protocol.Decode(n.Method, n.Params)
		}
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("%s: DecodeNotification error %v, the envelope's decoding %v", data, gerr, werr)
		}
		if gerr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: decoded %#v, the envelope's decoding %#v", data, got, want)
		}
	})
}
