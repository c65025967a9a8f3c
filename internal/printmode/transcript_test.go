package printmode

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/protocol"
)

func TestTranscript(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	out := "step 1\nstep 2\n"
	user := protocol.Message{ID: "u1", Role: protocol.RoleUser, Blocks: []protocol.Block{{Type: protocol.BlockText, Content: "Run it"}}}
	for _, c := range []struct {
		name   string
		color  bool
		events []protocol.Event
		want   string
	}{
		{
			name: "reasoning, text split across deltas, a tool whose output streams",
			events: []protocol.Event{
				protocol.UserMessageAdded{Message: user},
				protocol.AssistantReasoningUpdated{MessageID: "a1", BlockIndex: 0, Chunk: "Let me ", Stage: protocol.StageStreaming},
				protocol.AssistantReasoningUpdated{MessageID: "a1", BlockIndex: 0, Chunk: "think.", Stage: protocol.StageStreaming},
				protocol.AssistantReasoningUpdated{MessageID: "a1", BlockIndex: 0, Stage: protocol.StageEnd},
				protocol.AssistantContentUpdated{MessageID: "a1", BlockIndex: 1, Chunk: "Running ", Stage: protocol.StageStreaming},
				protocol.AssistantContentUpdated{MessageID: "a1", BlockIndex: 1, Chunk: "it.", Stage: protocol.StageStreaming},
				protocol.AssistantContentUpdated{MessageID: "a1", BlockIndex: 1, Stage: protocol.StageEnd},
				protocol.ToolBlockUpdated{MessageID: "a1", BlockIndex: 2, ToolID: "t1", Name: "Bash", Stage: protocol.StageStart},
				protocol.ToolBlockUpdated{MessageID: "a1", BlockIndex: 2, ToolID: "t1", Name: "Bash", Stage: protocol.StageRunning, CompactParams: "loop"},
				protocol.ToolBlockUpdated{MessageID: "a1", BlockIndex: 2, ToolID: "t1", Name: "Bash", Stage: protocol.StageRunning, CompactParams: "loop", ResultChunk: "step 1\nst"},
				protocol.ToolBlockUpdated{MessageID: "a1", BlockIndex: 2, ToolID: "t1", Name: "Bash", Stage: protocol.StageRunning, CompactParams: "loop", ResultChunk: "ep 2\n"},
				protocol.ToolBlockUpdated{MessageID: "a1", BlockIndex: 2, ToolID: "t1", Name: "Bash", Stage: protocol.StageEnd, CompactParams: "loop", Result: &out, Success: &yes},
				protocol.AssistantContentUpdated{MessageID: "a2", BlockIndex: 0, Chunk: "Done.", Stage: protocol.StageStreaming},
			},
			want: "\n> Run it\nThinking…\nLet me think.\n\nRunning it.\n● Bash(loop)\n  │ step 1\n  │ step 2\n  ✓ done\n\nDone.",
		},
		{
			name: "a denied tool, an error, a retry after a discarded attempt",
			events: []protocol.Event{
				protocol.AssistantContentUpdated{MessageID: "a1", BlockIndex: 0, Chunk: "Half an ans", Stage: protocol.StageStreaming},
				protocol.StreamNotice{Kind: protocol.NoticeRetrying, Attempt: 1, DelayMs: 500, Cause: "overloaded"},
				protocol.AssistantMessageDiscarded{MessageID: "a1", Reason: "retried"},
				protocol.ToolBlockUpdated{MessageID: "a2", BlockIndex: 0, ToolID: "t1", Name: "Bash", Stage: protocol.StageEnd, CompactParams: "rm -rf /", Success: &no, Error: "denied"},
				protocol.StreamNotice{Kind: protocol.NoticeStalled, IdleMs: 10000},
				protocol.ErrorBlockAdded{MessageID: "a2", BlockIndex: 1, Error: "reached the maximum number of turns (1)"},
			},
			want: "\nHalf an ans\n(retrying in 500ms, attempt 1: overloaded)\n(the partial answer above was discarded; retrying)\n● Bash(rm -rf /)\n  ✗ denied\n(no data from the model for 10s…)\nError: reached the maximum number of turns (1)\n",
		},
		{
			name:  "color",
			color: true,
			events: []protocol.Event{
				protocol.UserMessageAdded{Message: user},
				protocol.ErrorBlockAdded{MessageID: "a1", Error: "boom"},
			},
			want: "\n\x1b[1m> Run it\x1b[0m\n\x1b[31mError: boom\x1b[0m\n",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var sb strings.Builder
			tr := &Transcript{W: &sb, Color: c.color}
			for _, ev := range c.events {
				tr.Event(ev)
			}
			if sb.String() != c.want {
				t.Errorf("transcript\n%q\nwant\n%q", sb.String(), c.want)
			}
		})
	}
}
