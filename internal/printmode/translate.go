package printmode

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
)

// translator turns a run's items into stream-json lines in Claude Code's
// shapes: stream_event (each model part in Anthropic's event shape, with
// --include-partial-messages), assistant (one per finished content block),
// user (one per tool result), system/api_retry.
type translator struct {
	w   *writer
	cfg Config

	msgID  string
	model  string
	usage  model.Usage
	blocks map[int]*blockAcc
	tools  map[string]bool // ids of the tool calls of this run
}

type blockAcc struct {
	kind      model.BlockType
	id, name  string
	raw       json.RawMessage
	text      strings.Builder // text, reasoning, redacted data, tool input
	signature string
	citations []json.RawMessage
}

func newTranslator(w *writer, cfg Config) *translator {
	return &translator{w: w, cfg: cfg, blocks: map[int]*blockAcc{}, tools: map[string]bool{}}
}

func (t *translator) stream() bool { return t.cfg.OutputFormat == FormatStreamJSON }

func (t *translator) item(it agent.Item) {
	if !t.stream() {
		return
	}
	if it.Part != nil {
		t.part(*it.Part)
		return
	}
	if e, ok := it.Event.(protocol.ToolBlockUpdated); ok && e.Stage == protocol.StageEnd && t.tools[e.ToolID] {
		content := ""
		if e.Result != nil {
			content = *e.Result
		}
		if content == "" && e.Error != "" {
			content = e.Error
		}
		t.w.line(map[string]any{
			"type": "user",
			"message": map[string]any{"role": "user", "content": []any{map[string]any{
				"tool_use_id": e.ToolID, "type": "tool_result", "content": content,
				"is_error": e.Success == nil || !*e.Success,
			}}},
			"parent_tool_use_id": nil, "session_id": t.w.session, "uuid": uuid.NewString(),
			"timestamp": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
		})
	}
}

func (t *translator) event(ev map[string]any) {
	if !t.cfg.IncludePartial {
		return
	}
	t.w.line(map[string]any{
		"type": "stream_event", "event": ev, "session_id": t.w.session,
		"parent_tool_use_id": nil, "uuid": uuid.NewString(),
	})
}

func (t *translator) part(p model.Part) {
	switch p.Type {
	case model.PartMessageStart:
		t.msgID, t.model, t.usage = p.ID, p.Model, p.Usage
		if t.msgID == "" {
			t.msgID = "msg_" + strings.ReplaceAll(uuid.NewString(), "-", "")
		}
		clear(t.blocks)
		t.event(map[string]any{"type": "message_start", "message": t.message([]any{})})
	case model.PartBlockStart:
		b := &blockAcc{kind: p.Block, id: p.ID, name: p.Name, raw: p.Raw}
		t.blocks[p.Index] = b
		if p.Block == model.BlockToolUse {
			t.tools[p.ID] = true
		}
		t.event(map[string]any{"type": "content_block_start", "index": p.Index, "content_block": b.startShape()})
	case model.PartBlockDelta:
		b := t.blocks[p.Index]
		if b == nil {
			b = &blockAcc{kind: kindOfDelta(p.Delta)}
			t.blocks[p.Index] = b
		}
		var delta map[string]any
		switch p.Delta {
		case model.DeltaText:
			b.text.WriteString(p.Text)
			delta = map[string]any{"type": "text_delta", "text": p.Text}
		case model.DeltaReasoning:
			b.text.WriteString(p.Text)
			delta = map[string]any{"type": "thinking_delta", "thinking": p.Text}
		case model.DeltaSignature:
			b.signature = p.Text
			delta = map[string]any{"type": "signature_delta", "signature": p.Text}
		case model.DeltaInputJSON:
			b.text.WriteString(p.Text)
			delta = map[string]any{"type": "input_json_delta", "partial_json": p.Text}
		case model.DeltaCitation:
			b.citations = append(b.citations, json.RawMessage(p.Text))
			delta = map[string]any{"type": "citations_delta", "citation": json.RawMessage(p.Text)}
		case model.DeltaRedacted:
			b.text.WriteString(p.Text)
			return
		case model.DeltaRaw:
			if json.Valid([]byte(p.Text)) {
				t.event(map[string]any{"type": "content_block_delta", "index": p.Index, "delta": json.RawMessage(p.Text)})
			}
			return
		default:
			return
		}
		t.event(map[string]any{"type": "content_block_delta", "index": p.Index, "delta": delta})
	case model.PartBlockStop:
		if b := t.blocks[p.Index]; b != nil {
			// Claude Code writes the finished block before its stop event.
			t.w.line(map[string]any{
				"type": "assistant", "message": t.message([]any{b.finalShape()}),
				"parent_tool_use_id": nil, "session_id": t.w.session, "uuid": uuid.NewString(),
			})
		}
		t.event(map[string]any{"type": "content_block_stop", "index": p.Index})
	case model.PartMessageDelta:
		t.event(map[string]any{
			"type":  "message_delta",
			"delta": map[string]any{"stop_reason": nullable(p.StopReason), "stop_sequence": nullable(p.StopSequence)},
			"usage": p.Usage,
		})
	case model.PartMessageStop:
		t.event(map[string]any{"type": "message_stop"})
	case model.PartRetry:
		line := map[string]any{"type": "system", "subtype": "api_retry", "session_id": t.w.session, "uuid": uuid.NewString()}
		if r := p.Retry; r != nil {
			line["attempt"], line["retry_delay_ms"] = r.Attempt, r.Delay.Milliseconds()
			line["error"] = errText(r.Err)
			var apiErr *model.APIError
			if errors.As(r.Err, &apiErr) && apiErr.Status != 0 {
				line["error_status"] = apiErr.Status
			} else {
				line["error_status"] = nil
			}
		}
		t.w.line(line)
	}
}

func (t *translator) message(content []any) map[string]any {
	return map[string]any{
		"id": t.msgID, "type": "message", "role": "assistant", "model": t.model, "content": content,
		"stop_reason": nil, "stop_sequence": nil, "usage": t.usage,
	}
}

func kindOfDelta(d model.DeltaType) model.BlockType {
	switch d {
	case model.DeltaReasoning, model.DeltaSignature:
		return model.BlockReasoning
	case model.DeltaInputJSON:
		return model.BlockToolUse
	}
	return model.BlockText
}

func (b *blockAcc) startShape() any {
	switch b.kind {
	case model.BlockReasoning:
		return map[string]any{"type": "thinking", "thinking": "", "signature": ""}
	case model.BlockRedactedReasoning:
		return map[string]any{"type": "redacted_thinking", "data": ""}
	case model.BlockToolUse:
		return map[string]any{"type": "tool_use", "id": b.id, "name": b.name, "input": map[string]any{}}
	case model.BlockRaw:
		if len(b.raw) > 0 {
			return b.raw
		}
		return map[string]any{"type": b.name}
	}
	return map[string]any{"type": "text", "text": ""}
}

func (b *blockAcc) finalShape() any {
	switch b.kind {
	case model.BlockReasoning:
		return map[string]any{"type": "thinking", "thinking": b.text.String(), "signature": b.signature}
	case model.BlockRedactedReasoning:
		return map[string]any{"type": "redacted_thinking", "data": b.text.String()}
	case model.BlockToolUse:
		input := json.RawMessage(b.text.String())
		if !json.Valid(input) {
			input = json.RawMessage("{}")
		}
		return map[string]any{"type": "tool_use", "id": b.id, "name": b.name, "input": input}
	case model.BlockRaw:
		return b.startShape()
	}
	out := map[string]any{"type": "text", "text": b.text.String()}
	if len(b.citations) > 0 {
		out["citations"] = b.citations
	}
	return out
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
