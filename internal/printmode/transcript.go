package printmode

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/protocol"
)

// Transcript writes a session's events as a plain, append-only live
// transcript: each delta is printed as it arrives (the events are pure
// deltas, so nothing is ever printed twice), tool output indented under
// its tool. It is what `sluice demo` shows, and works on any terminal or
// pipe.
type Transcript struct {
	W     io.Writer
	Color bool

	open  string // "messageID/block" of the block being printed, if any
	col   int    // column of the cursor (0: at a line start)
	tools map[string]bool
}

const (
	dim   = "\x1b[2m"
	bold  = "\x1b[1m"
	red   = "\x1b[31m"
	green = "\x1b[32m"
	reset = "\x1b[0m"
)

func (t *Transcript) style(s, code string) string {
	if !t.Color || s == "" {
		return s
	}
	return code + s + reset
}

func (t *Transcript) write(s string) {
	if s == "" {
		return
	}
	io.WriteString(t.W, s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		t.col = len(s) - i - 1
	} else {
		t.col += len(s)
	}
}

// newline ends the current line if it has text.
func (t *Transcript) newline() {
	if t.col > 0 {
		t.write("\n")
	}
}

// Follow prints the subscription's events until ctx is done or the
// subscription closes.
func (t *Transcript) Follow(ctx context.Context, sub *agent.Subscription) error {
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			return err
		}
		t.Event(ev)
	}
}

// Event prints one event.
func (t *Transcript) Event(ev protocol.Event) {
	if t.tools == nil {
		t.tools = map[string]bool{}
	}
	switch e := ev.(type) {
	case protocol.UserMessageAdded:
		t.newline()
		t.write("\n" + t.style("> "+e.Message.Text(), bold) + "\n")
		t.open = ""
	case protocol.AssistantReasoningUpdated:
		key := fmt.Sprintf("%s/%d", e.MessageID, e.BlockIndex)
		if t.open != key {
			t.newline()
			t.write(t.style("Thinking…", dim) + "\n")
			t.open = key
		}
		t.write(t.style(e.Chunk, dim))
		if e.Stage == protocol.StageEnd {
			t.newline()
			t.open = ""
		}
	case protocol.AssistantContentUpdated:
		key := fmt.Sprintf("%s/%d", e.MessageID, e.BlockIndex)
		if t.open != key {
			t.newline()
			t.write("\n")
			t.open = key
		}
		t.write(e.Chunk)
		if e.Stage == protocol.StageEnd {
			t.newline()
			t.open = ""
		}
	case protocol.ToolBlockUpdated:
		key := e.MessageID + "/" + e.ToolID
		switch e.Stage {
		case protocol.StageRunning:
			if !t.tools[key] {
				t.tools[key] = true
				t.newline()
				t.write(t.style("● "+e.Name, bold) + "(" + e.CompactParams + ")\n")
				t.open = key
			}
			if e.ResultChunk != "" {
				if t.open != key {
					t.newline()
					t.open = key
				}
				t.writeIndented(e.ResultChunk)
			}
		case protocol.StageEnd:
			if !t.tools[key] {
				t.newline()
				t.write(t.style("● "+e.Name, bold) + "(" + e.CompactParams + ")\n")
			}
			t.newline()
			if e.Success != nil && *e.Success {
				t.write("  " + t.style("✓ done", green) + "\n")
			} else {
				t.write("  " + t.style("✗ "+e.Error, red) + "\n")
			}
			t.open = ""
		}
	case protocol.ErrorBlockAdded:
		t.newline()
		t.write(t.style("Error: "+e.Error, red) + "\n")
		t.open = ""
	case protocol.CompactBlockAdded:
		t.newline()
		t.write(t.style("── compacted: "+firstLineOf(e.Message), dim) + "\n")
	case protocol.StreamNotice:
		t.newline()
		switch e.Kind {
		case protocol.NoticeRetrying:
			t.write(t.style(fmt.Sprintf("(retrying in %s, attempt %d: %s)", time.Duration(e.DelayMs)*time.Millisecond, e.Attempt, e.Cause), dim) + "\n")
		case protocol.NoticeStalled:
			t.write(t.style(fmt.Sprintf("(no data from the model for %s…)", time.Duration(e.IdleMs)*time.Millisecond), dim) + "\n")
		}
		t.open = ""
	case protocol.AssistantMessageDiscarded:
		t.newline()
		t.write(t.style("(the partial answer above was discarded; retrying)", dim) + "\n")
		t.open = ""
	}
}

func (t *Transcript) writeIndented(s string) {
	for len(s) > 0 {
		if t.col == 0 {
			t.write("  " + t.style("│ ", dim))
		}
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			t.write(s)
			return
		}
		t.write(s[:i+1])
		s = s[i+1:]
	}
}

func firstLineOf(m protocol.Message) string {
	if len(m.Blocks) == 0 {
		return ""
	}
	s := m.Blocks[0].Content
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
