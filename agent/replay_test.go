package agent

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/protocol"
)

// plainReplay is the replay buffer as it was before runs of text deltas
// were kept compact: every event boxed, in seq order, under the same
// bounds. replayBuffer must answer exactly as it does.
type plainReplay struct {
	evs   []protocol.Event
	bytes int
}

func (p *plainReplay) add(ev protocol.Event) {
	p.evs = append(p.evs, ev)
	p.bytes += eventSize(ev)
	for len(p.evs) > replayMaxEvents || (p.bytes > replayMaxBytes && len(p.evs) > 1) {
		p.bytes -= eventSize(p.evs[0])
		p.evs = p.evs[1:]
	}
}

func (p *plainReplay) after(seq int64) ([]protocol.Event, bool) {
	for i, ev := range p.evs {
		if ev.Head().Seq > seq {
			if ev.Head().From() != seq+1 {
				return nil, false
			}
			return p.evs[i:], true
		}
	}
	return nil, false
}

// queued is what a subscriber's queue holds once evs are pushed to it:
// adjacent deltas merged.
func queued(evs []protocol.Event) []protocol.Event {
	var out []protocol.Event
	var m protocol.Merger
	for _, ev := range evs {
		if n := len(out); n > 0 {
			if merged, ok := m.Merge(out[n-1], ev); ok {
				out[n-1] = merged
				continue
			}
		}
		m.Reset()
		out = append(out, ev)
	}
	return out
}

// replayEvents generates n events of one session as its bus publishes
// them: mostly runs of text deltas (a few bytes each, sometimes large),
// broken by other blocks and messages, a subagent's deltas, block ends,
// tool deltas and, as a Mirror receives them, deltas merged elsewhere.
func replayEvents(rng *rand.Rand, n int, large int) []protocol.Event {
	var evs []protocol.Event
	seq := int64(0)
	msg, block := "m0", 0
	text := func() string {
		if large > 0 && rng.IntN(50) == 0 {
			return strings.Repeat("L", large)
		}
		return strings.Repeat(string(rune('a'+rng.IntN(26))), rng.IntN(24))
	}
	for len(evs) < n {
		h := protocol.Header{SessionID: "s", Seq: seq + 1}
		switch k := rng.IntN(40); {
		case k == 0:
			msg, block = "m"+string(rune('0'+rng.IntN(10))), 0
			continue
		case k == 1:
			block++
			continue
		case k == 2:
			evs = append(evs, protocol.AssistantContentUpdated{Header: h, MessageID: msg, BlockIndex: block, Stage: protocol.StageEnd})
		case k == 3:
			evs = append(evs, protocol.ToolBlockUpdated{Header: h, MessageID: msg, BlockIndex: block, ToolID: "t", Stage: protocol.StageStreaming, ParametersChunk: text()})
		case k == 4:
			h.ParentToolID = "agent1"
			evs = append(evs, protocol.AssistantContentUpdated{Header: h, MessageID: "sub", BlockIndex: 0, Chunk: text(), Stage: protocol.StageStreaming})
		case k == 5:
			// Merged elsewhere: covers several seqs.
			span := int64(2 + rng.IntN(5))
			h.FirstSeq, h.Seq = seq+1, seq+span
			evs = append(evs, protocol.AssistantContentUpdated{Header: h, MessageID: msg, BlockIndex: block, Chunk: text() + text(), Stage: protocol.StageStreaming})
		default:
			evs = append(evs, protocol.AssistantContentUpdated{Header: h, MessageID: msg, BlockIndex: block, Chunk: text(), Stage: protocol.StageStreaming})
		}
		seq = evs[len(evs)-1].Head().Seq
	}
	return evs
}

// TestReplayBufferAnswersAsPlain feeds both buffers the same events and,
// along the way and at the end, asks both for the events after every seq:
// what a subscriber's queue would then hold must be the same, and so must
// the bounds (events and bytes held).
func TestReplayBufferAnswersAsPlain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		n     int
		large int
	}{
		{"short", 300, 0},
		{"over the event bound", replayMaxEvents + 3000, 0},
		{"over the byte bound", 1500, 400 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.large)))
			evs := replayEvents(rng, tc.n, tc.large)
			var got replayBuffer
			var want plainReplay
			check := func(at int) {
				t.Helper()
				if got.events != len(want.evs) || got.bytes != want.bytes {
					t.Fatalf("after %d events: holds %d events, %d bytes; want %d, %d", at, got.events, got.bytes, len(want.evs), want.bytes)
				}
				// Every seq of a short buffer; else those around its
				// start and end, and a sample between.
				last := evs[at-1].Head().Seq
				first := want.evs[0].Head().From()
				var seqs []int64
				for seq := int64(0); seq <= last; seq++ {
					if last < 400 || seq < first+8 && seq > first-8 || seq > last-16 || rng.IntN(int(last)/16+1) == 0 {
						seqs = append(seqs, seq)
					}
				}
				for _, seq := range seqs {
					g, gok := got.after(seq)
					w, wok := want.after(seq)
					if gok != wok {
						t.Fatalf("after %d events, seq %d: ok %v, want %v", at, seq, gok, wok)
					}
					if qg, qw := queued(g), queued(w); !reflect.DeepEqual(qg, qw) {
						t.Fatalf("after %d events, seq %d: queue\n%#v\nwant\n%#v", at, seq, qg, qw)
					}
				}
			}
			for i, ev := range evs {
				got.add(ev)
				want.add(ev)
				if i%2999 == 0 || i == len(evs)-1 {
					check(i + 1)
				}
			}
		})
	}
}

// TestReplayBufferKeepsDeltasCompact: a long answer's deltas are one
// entry, and a run longer than the bounds keeps only its live deltas.
func TestReplayBufferKeepsDeltasCompact(t *testing.T) {
	t.Parallel()
	var b replayBuffer
	const n = 3 * replayMaxEvents
	for i := range n {
		b.add(protocol.AssistantContentUpdated{Header: protocol.Header{SessionID: "s", Seq: int64(i + 1)},
			MessageID: "m", BlockIndex: 0, Chunk: "sixteen bytes..!", Stage: protocol.StageStreaming})
	}
	if len(b.entries) != 1 || b.events != replayMaxEvents {
		t.Fatalf("%d entries holding %d events, want 1 run of %d", len(b.entries), b.events, replayMaxEvents)
	}
	if r := b.entries[0].run; len(r.chunks) > 2*replayMaxEvents {
		t.Errorf("run holds %d chunks for %d live deltas", len(r.chunks), replayMaxEvents)
	}
	evs, ok := b.after(n - 2)
	if !ok || len(evs) != 1 || evs[0].(protocol.AssistantContentUpdated).Chunk != "sixteen bytes..!sixteen bytes..!" || evs[0].Head().From() != n-1 {
		t.Errorf("after(%d) = %#v, %v", n-2, evs, ok)
	}
	if _, ok := b.after(n - replayMaxEvents); !ok {
		t.Error("the oldest delta held is not replayed")
	}
	if _, ok := b.after(n - replayMaxEvents - 1); ok {
		t.Error("a delta gone from the buffer is replayed")
	}
}
