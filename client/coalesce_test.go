package client

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/protocol"
)

// manualTimer lets a test fire the coalescer's windows.
type manualTimer struct {
	fns []func()
}

func (m *manualTimer) afterFunc(d time.Duration, f func()) func() bool {
	m.fns = append(m.fns, f)
	return func() bool { return true }
}

// fire runs the latest window's timer (older ones are stale and ignored
// by the coalescer, which this also exercises).
func (m *manualTimer) fire() {
	if n := len(m.fns); n > 0 {
		m.fns[n-1]()
	}
}

type recorder struct{ batches [][]Update }

func (r *recorder) emit(b []Update) { r.batches = append(r.batches, append([]Update(nil), b...)) }

func (r *recorder) describe() string {
	var out []string
	for _, b := range r.batches {
		var parts []string
		for _, u := range b {
			if u.Snapshot != nil {
				parts = append(parts, fmt.Sprintf("snapshot@%d", u.Snapshot.Seq))
				continue
			}
			h := u.Event.Head()
			s := fmt.Sprintf("%s@%d", u.Event.Method(), h.Seq)
			if h.FirstSeq != 0 {
				s = fmt.Sprintf("%s@%d-%d", u.Event.Method(), h.FirstSeq, h.Seq)
			}
			switch e := u.Event.(type) {
			case protocol.AssistantContentUpdated:
				s += fmt.Sprintf("%q", e.Chunk)
			case protocol.ToolBlockUpdated:
				s += fmt.Sprintf("%q", e.ResultChunk)
			}
			parts = append(parts, s)
		}
		out = append(out, "["+strings.Join(parts, " ")+"]")
	}
	return strings.Join(out, " ")
}

func hdr(seq int64) protocol.Header { return protocol.Header{SessionID: "s", Seq: seq} }

func text(seq int64, chunk string) Update {
	return Update{Event: protocol.AssistantContentUpdated{Header: hdr(seq), MessageID: "a", BlockIndex: 0, Chunk: chunk, Stage: protocol.StageStreaming}}
}

func running(seq int64, block int, chunk string) Update {
	return Update{Event: protocol.ToolBlockUpdated{Header: hdr(seq), MessageID: "a", BlockIndex: block, ToolID: fmt.Sprint("t", block), Name: "Bash", Stage: protocol.StageRunning, ResultChunk: chunk}}
}

func TestCoalescerWindows(t *testing.T) {
	t.Parallel()
	end := Update{Event: protocol.AssistantContentUpdated{Header: hdr(5), MessageID: "a", Stage: protocol.StageEnd}}
	cases := []struct {
		name string
		run  func(c *Coalescer, tm *manualTimer)
		want string
	}{
		{"leading edge then one batch per window", func(c *Coalescer, tm *manualTimer) {
			c.Push(text(1, "a"))
			c.Push(text(2, "b"))
			c.Push(text(3, "c"))
			tm.fire()
			c.Push(text(4, "d"))
			tm.fire()
			tm.fire() // an empty window closes it
			c.Push(text(5, "e"))
		}, `[assistantContentUpdated@1"a"] [assistantContentUpdated@2-3"bc"] [assistantContentUpdated@4"d"] [assistantContentUpdated@5"e"]`},
		{"a structural event flushes first, in the same batch", func(c *Coalescer, tm *manualTimer) {
			c.Push(text(1, "a"))
			c.Push(text(2, "b"))
			c.Push(text(3, "c"))
			c.Push(text(4, "d"))
			c.Push(end)
			c.Push(text(6, "x")) // a new window opens at once
		}, `[assistantContentUpdated@1"a"] [assistantContentUpdated@2-4"bcd" assistantContentUpdated@5""] [assistantContentUpdated@6"x"]`},
		{"interleaved blocks keep their order, never last-value-wins", func(c *Coalescer, tm *manualTimer) {
			c.Push(running(1, 0, "A1"))
			c.Push(running(2, 1, "B1"))
			c.Push(running(3, 1, "B2"))
			c.Push(running(4, 0, "A2"))
			c.Push(running(5, 0, "A3"))
			tm.fire()
		}, `[toolBlockUpdated@1"A1"] [toolBlockUpdated@2-3"B1B2" toolBlockUpdated@4-5"A2A3"]`},
		{"a snapshot drops the queued deltas", func(c *Coalescer, tm *manualTimer) {
			c.Push(text(1, "a"))
			c.Push(text(2, "b"))
			c.Push(Update{Snapshot: &protocol.Snapshot{Seq: 2}})
			tm.fire() // the old window's timer is stale
			c.Push(text(3, "c"))
		}, `[assistantContentUpdated@1"a"] [snapshot@2] [assistantContentUpdated@3"c"]`},
		{"stop flushes", func(c *Coalescer, tm *manualTimer) {
			c.Push(text(1, "a"))
			c.Push(text(2, "b"))
			c.Stop()
			c.Push(text(3, "c"))
			tm.fire()
		}, `[assistantContentUpdated@1"a"] [assistantContentUpdated@2"b"]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rec recorder
			tm := &manualTimer{}
			c := newCoalescer(16*time.Millisecond, rec.emit, tm.afterFunc)
			tc.run(c, tm)
			if got := rec.describe(); got != tc.want {
				t.Fatalf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// stream generates a valid random session: user and assistant messages,
// text and reasoning deltas, two tools whose running output interleaves.
func stream(r *rand.Rand, turns int) []protocol.Event {
	var evs []protocol.Event
	seq := int64(0)
	add := func(ev protocol.Event) {
		seq++
		evs = append(evs, protocol.WithHeader(ev, hdr(seq)))
	}
	chunk := func() string { return strings.Repeat(string(rune('a'+r.IntN(26))), 1+r.IntN(4)) }
	for turn := range turns {
		uid, aid := fmt.Sprint("u", turn), fmt.Sprint("a", turn)
		add(protocol.UserMessageAdded{Message: protocol.Message{ID: uid, Role: protocol.RoleUser, Blocks: []protocol.Block{{Type: protocol.BlockText, Content: "q"}}}})
		add(protocol.AssistantMessageAdded{Message: protocol.Message{ID: aid, Role: protocol.RoleAssistant, Blocks: []protocol.Block{}}})
		for range 1 + r.IntN(20) {
			add(protocol.AssistantReasoningUpdated{MessageID: aid, BlockIndex: 0, Chunk: chunk(), Stage: protocol.StageStreaming})
		}
		add(protocol.AssistantReasoningUpdated{MessageID: aid, BlockIndex: 0, Stage: protocol.StageEnd})
		for range 1 + r.IntN(20) {
			add(protocol.AssistantContentUpdated{MessageID: aid, BlockIndex: 1, Chunk: chunk(), Stage: protocol.StageStreaming})
		}
		add(protocol.AssistantContentUpdated{MessageID: aid, BlockIndex: 1, Stage: protocol.StageEnd})
		for b := 2; b <= 3; b++ {
			add(protocol.ToolBlockUpdated{MessageID: aid, BlockIndex: b, ToolID: fmt.Sprint("t", b), Name: "Read", Stage: protocol.StageStart})
			add(protocol.ToolBlockUpdated{MessageID: aid, BlockIndex: b, ToolID: fmt.Sprint("t", b), Name: "Read", Stage: protocol.StageStreaming, ParametersChunk: `{"p":`})
			add(protocol.ToolBlockUpdated{MessageID: aid, BlockIndex: b, ToolID: fmt.Sprint("t", b), Name: "Read", Stage: protocol.StageStreaming, ParametersChunk: `1}`})
		}
		for range r.IntN(30) {
			b := 2 + r.IntN(2)
			add(protocol.ToolBlockUpdated{MessageID: aid, BlockIndex: b, ToolID: fmt.Sprint("t", b), Name: "Read", Stage: protocol.StageRunning,
				Parameters: `{"p":1}`, CompactParams: "p", ResultChunk: chunk(), ShortResult: chunk()})
		}
		for b := 2; b <= 3; b++ {
			res, ok := "done", true
			add(protocol.ToolBlockUpdated{MessageID: aid, BlockIndex: b, ToolID: fmt.Sprint("t", b), Name: "Read", Stage: protocol.StageEnd,
				Parameters: `{"p":1}`, Result: &res, Success: &ok, ShortResult: "done"})
		}
		add(protocol.TurnEnded{MessageID: aid, StopReason: "end_turn"})
	}
	return evs
}

// TestCoalescerIsLossless pushes random sessions through a coalescer with
// random window ends and snapshots: a UI applying the batches with the
// reducer ends with exactly the session's list, every event applying
// cleanly.
func TestCoalescerIsLossless(t *testing.T) {
	t.Parallel()
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		evs := stream(r, 1+r.IntN(4))
		var ref protocol.List // the session
		ui := protocol.NewList(protocol.Snapshot{})
		tm := &manualTimer{}
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d: "+format, append([]any{seed}, args...)...)
		}
		c := newCoalescer(time.Millisecond, func(batch []Update) {
			for _, u := range batch {
				if u.Snapshot != nil {
					ui.Reset(*u.Snapshot)
					continue
				}
				if err := ui.Apply(u.Event); err != nil {
					fail("UI cannot apply %s %+v: %v", u.Event.Method(), u.Event.Head(), err)
				}
			}
		}, tm.afterFunc)
		for _, ev := range evs {
			if err := ref.Apply(ev); err != nil {
				fail("generator: %v", err)
			}
			c.Push(Update{Event: ev})
			switch r.IntN(20) {
			case 0, 1, 2:
				tm.fire()
			case 3:
				snap := ref.Snapshot()
				c.Push(Update{Snapshot: &snap})
			}
		}
		c.Stop()
		got, _ := json.Marshal(ui.Snapshot())
		want, _ := json.Marshal(ref.Snapshot())
		if string(got) != string(want) {
			fail("UI list differs\n got %s\nwant %s", got, want)
		}
	}
}
