package streamjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/protocol"
)

// A Decoder reads a recorded or live run in the stream-json shape that
// Claude Code prints (claude -p --output-format stream-json --verbose
// --include-partial-messages) and sluice's print mode copies, and turns it
// into the session events of package protocol that the relay routes by.
//
// What it reads:
//   - stream_event lines: message_start opens an assistant message (and
//     discards an earlier one that never stopped: Claude Code retried it),
//     text_delta appends text, content_block_stop ends a text block,
//     message_delta carries the turn's stop reason;
//   - assistant lines: the text of a message for which no stream_event came
//     (a run recorded without --include-partial-messages);
//   - the result line: the run's result text and whether it failed;
//   - system/init: the session id (for --resume);
//   - sluice's own JSON-RPC event notifications, passed through.
//
// Lines of sub-agents (a parent_tool_use_id) are not the user's answer and
// are skipped, as are thinking, tool input and unknown types.

// ErrSyntax wraps a line that is not a JSON object.
var ErrSyntax = errors.New("streamjson: not a JSON object")

// Result is what the result line says.
type Result struct {
	Text    string
	IsError bool
	// Subtype is "success" or the kind of failure ("error_max_turns",
	// "error_during_execution", ...).
	Subtype string
}

// Decoder turns lines into events. It is not safe for concurrent use.
//
// Block indices are the session protocol's: the blocks a message has in
// the reduced list, counted from 0 without gaps. Claude Code's indices
// count every block, also those that make no event (a server tool's
// result), so the decoder maps them.
type Decoder struct {
	seq        int64
	sessionID  string
	open       string          // the message started and not stopped
	streamed   map[string]bool // messages that came as stream events
	blocks     map[string]int  // blocks made so far per message
	index      map[int]int     // the open message's stream index → block index
	isText     map[int]bool    // text blocks of the open message, by stream index
	isThinking map[int]bool    // its thinking blocks
	last       string          // the last assistant message
	result     *Result
}

// NewDecoder returns a decoder at the start of a run.
func NewDecoder() *Decoder {
	return &Decoder{streamed: map[string]bool{}, blocks: map[string]int{}, index: map[int]int{}, isText: map[int]bool{}, isThinking: map[int]bool{}}
}

// SessionID is the session id from system/init (or any line), or "".
func (d *Decoder) SessionID() string { return d.sessionID }

// Result returns the result line's content, if one was read.
func (d *Decoder) Result() (Result, bool) {
	if d.result == nil {
		return Result{}, false
	}
	return *d.result, true
}

// line holds the fields of every line type that the decoder reads.
type line struct {
	Type            string          `json:"type"`
	Subtype         string          `json:"subtype"`
	SessionID       string          `json:"session_id"`
	ParentToolUseID *string         `json:"parent_tool_use_id"`
	Event           *streamEvent    `json:"event"`
	Message         *apiMessage     `json:"message"`
	Result          *string         `json:"result"`
	IsError         bool            `json:"is_error"`
	Errors          []string        `json:"errors"`
	Method          string          `json:"method"`
	Params          json.RawMessage `json:"params"`
}

type streamEvent struct {
	Type         string      `json:"type"`
	Index        int         `json:"index"`
	Message      *apiMessage `json:"message"`
	ContentBlock *block      `json:"content_block"`
	Delta        *delta      `json:"delta"`
	Usage        *protocol.Usage
}

type apiMessage struct {
	ID         string  `json:"id"`
	Content    []block `json:"content"`
	StopReason string  `json:"stop_reason"`
}

type block struct {
	Type string `json:"type"`
	Text string `json:"text"`
	ID   string `json:"id"`
	Name string `json:"name"`
}

type delta struct {
	Type       string `json:"type"`
	Text       string `json:"text"`
	Thinking   string `json:"thinking"`
	StopReason string `json:"stop_reason"`
}

// Line decodes one line and returns the events it makes, in order. A blank
// line makes none; a line that is not a JSON object is an ErrSyntax error.
func (d *Decoder) Line(data []byte) ([]protocol.Event, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	var l line
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSyntax, err)
	}
	if l.SessionID != "" && d.sessionID == "" {
		d.sessionID = l.SessionID
	}
	if l.ParentToolUseID != nil && *l.ParentToolUseID != "" {
		return nil, nil
	}
	var evs []protocol.Event
	switch {
	case l.Method != "":
		ev, err := protocol.Decode(l.Method, l.Params)
		if err != nil {
			return nil, fmt.Errorf("streamjson: %w", err)
		}
		evs = append(evs, ev)
	case l.Type == "system" && l.Subtype == "init":
		d.sessionID = l.SessionID
	case l.Type == "stream_event" && l.Event != nil:
		evs = d.streamEvent(l.Event)
	case l.Type == "assistant" && l.Message != nil:
		evs = d.assistant(l.Message)
	case l.Type == "result":
		evs = d.resultLine(&l)
	}
	for i, ev := range evs {
		d.seq++
		evs[i] = protocol.WithHeader(ev, protocol.Header{SessionID: d.sessionID, Seq: d.seq})
	}
	return evs, nil
}

func (d *Decoder) streamEvent(e *streamEvent) []protocol.Event {
	var evs []protocol.Event
	switch e.Type {
	case "message_start":
		if e.Message == nil {
			return nil
		}
		if d.open != "" {
			// A message that never stopped was an attempt that failed;
			// Claude Code streams the retry as a new message.
			evs = append(evs, protocol.AssistantMessageDiscarded{MessageID: d.open, Reason: "retried"})
		}
		d.open = e.Message.ID
		d.last = e.Message.ID
		d.streamed[e.Message.ID] = true
		d.blocks[e.Message.ID] = 0 // a new message in the list, whatever its id held before
		clear(d.index)
		clear(d.isText)
		clear(d.isThinking)
		evs = append(evs, protocol.AssistantMessageAdded{Message: protocol.Message{ID: e.Message.ID, Role: protocol.RoleAssistant}})
	case "content_block_start":
		if d.open == "" || e.ContentBlock == nil {
			return nil
		}
		if _, started := d.index[e.Index]; started {
			// A repeated start: the block is under way already.
			return nil
		}
		switch e.ContentBlock.Type {
		case "text":
			// The block starts empty whatever the start says (seed 002).
			d.isText[e.Index] = true
			evs = append(evs, protocol.AssistantContentUpdated{MessageID: d.open, BlockIndex: d.block(e.Index), Stage: protocol.StageStreaming})
		case "thinking", "redacted_thinking":
			d.isThinking[e.Index] = true
			evs = append(evs, protocol.AssistantReasoningUpdated{MessageID: d.open, BlockIndex: d.block(e.Index), Stage: protocol.StageStreaming})
		case "tool_use", "server_tool_use":
			evs = append(evs, protocol.ToolBlockUpdated{MessageID: d.open, BlockIndex: d.block(e.Index), ToolID: e.ContentBlock.ID, Name: e.ContentBlock.Name, Stage: protocol.StageStart})
		}
	case "content_block_delta":
		if d.open == "" || e.Delta == nil {
			return nil
		}
		switch {
		case e.Delta.Type == "text_delta" && e.Delta.Text != "":
			if _, started := d.index[e.Index]; !started {
				// A text delta without its start: the block begins here.
				d.isText[e.Index] = true
			} else if !d.isText[e.Index] {
				return nil
			}
			evs = append(evs, protocol.AssistantContentUpdated{MessageID: d.open, BlockIndex: d.block(e.Index), Chunk: e.Delta.Text, Stage: protocol.StageStreaming})
		case e.Delta.Type == "thinking_delta" && e.Delta.Thinking != "" && d.isThinking[e.Index]:
			evs = append(evs, protocol.AssistantReasoningUpdated{MessageID: d.open, BlockIndex: d.block(e.Index), Chunk: e.Delta.Thinking, Stage: protocol.StageStreaming})
		}
	case "content_block_stop":
		switch {
		case d.open == "":
		case d.isText[e.Index]:
			evs = append(evs, protocol.AssistantContentUpdated{MessageID: d.open, BlockIndex: d.block(e.Index), Stage: protocol.StageEnd})
		case d.isThinking[e.Index]:
			evs = append(evs, protocol.AssistantReasoningUpdated{MessageID: d.open, BlockIndex: d.block(e.Index), Stage: protocol.StageEnd})
		}
	case "message_delta":
		if d.open != "" && e.Delta != nil && e.Delta.StopReason != "" {
			evs = append(evs, protocol.TurnEnded{MessageID: d.open, StopReason: e.Delta.StopReason, Usage: e.Usage})
		}
	case "message_stop":
		d.open = ""
	}
	return evs
}

// block returns the block index of the open message's stream index i,
// giving it the next one on first use.
func (d *Decoder) block(i int) int {
	b, ok := d.index[i]
	if !ok {
		b = d.blocks[d.open]
		d.blocks[d.open]++
		d.index[i] = b
	}
	return b
}

// assistant reads an assistant line. With partial messages on, its content
// was streamed already; without, it is the only source of the text.
func (d *Decoder) assistant(m *apiMessage) []protocol.Event {
	if m.ID == "" || d.streamed[m.ID] {
		return nil
	}
	var evs []protocol.Event
	if _, seen := d.blocks[m.ID]; !seen {
		d.blocks[m.ID] = 0
		d.last = m.ID
		evs = append(evs, protocol.AssistantMessageAdded{Message: protocol.Message{ID: m.ID, Role: protocol.RoleAssistant}})
	}
	for _, b := range m.Content {
		if b.Type == "text" && b.Text != "" {
			i := d.blocks[m.ID]
			d.blocks[m.ID]++
			evs = append(evs,
				protocol.AssistantContentUpdated{MessageID: m.ID, BlockIndex: i, Chunk: b.Text, Stage: protocol.StageStreaming},
				protocol.AssistantContentUpdated{MessageID: m.ID, BlockIndex: i, Stage: protocol.StageEnd})
		}
	}
	if m.StopReason != "" {
		evs = append(evs, protocol.TurnEnded{MessageID: m.ID, StopReason: m.StopReason})
	}
	return evs
}

func (d *Decoder) resultLine(l *line) []protocol.Event {
	r := &Result{IsError: l.IsError, Subtype: l.Subtype}
	if l.Result != nil {
		r.Text = *l.Result
	}
	d.result = r
	var evs []protocol.Event
	if r.IsError || (r.Subtype != "" && r.Subtype != "success") {
		msg := r.Subtype
		if len(l.Errors) > 0 {
			msg = l.Errors[0]
		} else if r.Text != "" {
			msg = r.Text
		}
		if msg == "" {
			msg = "the run failed"
		}
		// On failure the result field holds the error, not an answer.
		r.Text = ""
		// After the last message's blocks; with no message, an error of
		// the run as a whole (MessageID "").
		evs = append(evs, protocol.ErrorBlockAdded{MessageID: d.last, BlockIndex: d.blocks[d.last], Error: msg})
		if d.last != "" {
			d.blocks[d.last]++
		}
	}
	return append(evs, protocol.RunStateChanged{State: protocol.RunIdle})
}
