package agent

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
)

// attempt turns one model response's parts into session events: one
// assistant message per attempt, one display block per response block
// (text and reasoning blocks only from their first delta, so an empty block
// shows nothing), each ended exactly once.
type attempt struct {
	s      *Session
	msgID  string
	acc    model.Accumulator
	blocks map[int]*openBlock // by response block index
	order  []int              // response indices in order of appearance
	next   int                // next display block index

	startUsage model.Usage
	usage      model.Usage
	stopReason string
	retries    int
}

type openBlock struct {
	kind    model.BlockType
	display int // display block index; -1 until the block shows
	toolID  string
	name    string
	input   strings.Builder // a tool's streamed JSON input
	raw     json.RawMessage
	ended   bool
}

func newAttempt(s *Session) *attempt {
	a := &attempt{s: s, blocks: map[int]*openBlock{}}
	a.acc.TextFrom = a.shownText
	return a
}

// shownText is the text of response block idx as the display list holds
// it: the accumulator takes it from there rather than keeping a second
// copy of a streamed answer. A text or reasoning block shows every
// non-empty delta of its block, so the two are the same text.
func (a *attempt) shownText(idx int) string {
	b, ok := a.blocks[idx]
	if !ok || b.display < 0 || a.msgID == "" {
		return ""
	}
	a.s.bus.mu.Lock()
	defer a.s.bus.mu.Unlock()
	return a.s.bus.list.BlockContent(a.msgID, b.display)
}

// ensureMessage publishes the attempt's assistant message on first need.
func (a *attempt) ensureMessage() {
	if a.msgID != "" {
		return
	}
	a.msgID = a.s.opts.NewID()
	a.s.publish(protocol.AssistantMessageAdded{Message: protocol.Message{
		ID: a.msgID, Role: protocol.RoleAssistant, CreatedAt: a.s.now(), Blocks: []protocol.Block{},
	}})
}

func (a *attempt) newDisplay(b *openBlock) int {
	b.display = a.next
	a.next++
	return b.display
}

func (a *attempt) block(idx int, kind model.BlockType) *openBlock {
	b, ok := a.blocks[idx]
	if !ok {
		// A delta without its start: some compatible servers skip it.
		b = &openBlock{kind: kind, display: -1}
		a.blocks[idx] = b
		a.order = append(a.order, idx)
	}
	return b
}

// handle applies one part. It reports the retry it carries, if any.
func (a *attempt) handle(p model.Part) {
	switch p.Type {
	case model.PartRetry:
		a.discard(p.Retry)
		return
	case model.PartStalled:
		a.s.publish(protocol.StreamNotice{Kind: protocol.NoticeStalled, IdleMs: p.Idle.Milliseconds()})
		return
	}
	a.acc.Add(p)
	switch p.Type {
	case model.PartMessageStart:
		a.ensureMessage()
		a.startUsage = p.Usage
	case model.PartBlockStart:
		a.ensureMessage()
		b := a.block(p.Index, p.Block)
		b.kind, b.toolID, b.name, b.raw = p.Block, p.ID, p.Name, p.Raw
		switch p.Block {
		case model.BlockToolUse:
			a.s.publish(protocol.ToolBlockUpdated{MessageID: a.msgID, BlockIndex: a.newDisplay(b),
				ToolID: b.toolID, Name: b.name, Stage: protocol.StageStart})
		case model.BlockRaw:
			b.name, b.toolID = rawBlockName(p.Raw, p.Name, p.Index)
			a.s.publish(protocol.ToolBlockUpdated{MessageID: a.msgID, BlockIndex: a.newDisplay(b),
				ToolID: b.toolID, Name: b.name, Stage: protocol.StageStart})
		case model.BlockRedactedReasoning:
			a.s.publish(protocol.AssistantReasoningUpdated{MessageID: a.msgID, BlockIndex: a.newDisplay(b),
				Chunk: "[redacted reasoning]", Stage: protocol.StageStreaming, StartedAt: a.s.now()})
		}
	case model.PartBlockDelta:
		a.ensureMessage()
		switch p.Delta {
		case model.DeltaText:
			b := a.block(p.Index, model.BlockText)
			if p.Text == "" || b.ended {
				return
			}
			if b.display < 0 {
				a.newDisplay(b)
			}
			a.s.publishText(protocol.AssistantContentUpdated{MessageID: a.msgID, BlockIndex: b.display,
				Chunk: p.Text, Stage: protocol.StageStreaming})
		case model.DeltaReasoning:
			b := a.block(p.Index, model.BlockReasoning)
			if p.Text == "" || b.ended {
				return
			}
			ev := protocol.AssistantReasoningUpdated{MessageID: a.msgID, Chunk: p.Text, Stage: protocol.StageStreaming}
			if b.display < 0 {
				a.newDisplay(b)
				ev.StartedAt = a.s.now()
			}
			ev.BlockIndex = b.display
			a.s.publishReasoning(ev)
		case model.DeltaInputJSON:
			b := a.block(p.Index, model.BlockToolUse)
			if p.Text == "" || b.ended {
				return
			}
			b.input.WriteString(p.Text)
			if b.display < 0 {
				// A tool call whose start the server skipped.
				a.s.publish(protocol.ToolBlockUpdated{MessageID: a.msgID, BlockIndex: a.newDisplay(b),
					ToolID: b.toolID, Name: b.name, Stage: protocol.StageStart})
			}
			a.s.publish(protocol.ToolBlockUpdated{MessageID: a.msgID, BlockIndex: b.display,
				ToolID: b.toolID, Name: b.name, Stage: protocol.StageStreaming, ParametersChunk: p.Text})
		}
	case model.PartBlockStop:
		if b, ok := a.blocks[p.Index]; ok {
			a.end(b, "")
		}
	case model.PartMessageDelta:
		if p.StopReason != "" {
			a.stopReason = p.StopReason
		}
		a.usage = p.Usage
	}
}

// end closes a block's display. For a tool call that will not run, fail
// is why (empty for a call that completed its parameters).
func (a *attempt) end(b *openBlock, fail string) {
	if b.ended || b.display < 0 {
		b.ended = true
		return
	}
	b.ended = true
	switch b.kind {
	case model.BlockText:
		a.s.publish(protocol.AssistantContentUpdated{MessageID: a.msgID, BlockIndex: b.display, Stage: protocol.StageEnd})
	case model.BlockReasoning, model.BlockRedactedReasoning:
		a.s.publish(protocol.AssistantReasoningUpdated{MessageID: a.msgID, BlockIndex: b.display,
			Stage: protocol.StageEnd, EndedAt: a.s.now()})
	case model.BlockRaw:
		params := b.input.String()
		if params == "" {
			params = rawInput(b.raw)
		}
		result := summarizeRaw(b.raw)
		ok := true
		a.s.publish(protocol.ToolBlockUpdated{MessageID: a.msgID, BlockIndex: b.display, ToolID: b.toolID,
			Name: b.name, Stage: protocol.StageEnd, Parameters: params, Result: &result,
			ShortResult: firstLine(result, 200), Success: &ok})
	case model.BlockToolUse:
		if fail == "" {
			b.ended = false // stays open: the tool runs next
			return
		}
		a.endTool(b, fail)
	}
}

func (a *attempt) endTool(b *openBlock, fail string) {
	b.ended = true
	empty, no := "", false
	a.s.publish(protocol.ToolBlockUpdated{MessageID: a.msgID, BlockIndex: b.display, ToolID: b.toolID,
		Name: b.name, Stage: protocol.StageEnd, Parameters: orEmptyObject(b.input.String()),
		Result: &empty, Success: &no, Error: fail})
}

// discard throws away the failed attempt's output before the next one.
func (a *attempt) discard(r *model.Retry) {
	cause := "retry"
	if r != nil && r.Err != nil {
		cause = r.Err.Error()
	}
	notice := protocol.StreamNotice{Kind: protocol.NoticeRetrying, Cause: cause}
	if r != nil {
		notice.Attempt, notice.DelayMs = r.Attempt, r.Delay.Milliseconds()
	}
	a.s.publish(notice)
	if a.msgID != "" {
		a.s.publish(protocol.AssistantMessageDiscarded{MessageID: a.msgID, Reason: cause})
	}
	a.retries++
	*a = attempt{s: a.s, blocks: map[int]*openBlock{}, retries: a.retries}
	a.acc.TextFrom = a.shownText
}

// finish ends the attempt. With err == nil the response completed: open
// text is ended, tool calls whose parameters never completed fail, and
// turnEnded is published. With an error, everything open is ended and the
// error is recorded as an error block.
func (a *attempt) finish(err error, aborted bool) {
	if err == nil && a.msgID == "" {
		a.ensureMessage() // an empty response still ends a turn
	}
	for _, idx := range a.order {
		b := a.blocks[idx]
		if b.kind != model.BlockToolUse {
			a.end(b, "")
			continue
		}
		switch {
		case b.ended || b.display < 0:
		case aborted:
			a.endTool(b, ErrAborted.Error())
		case err != nil:
			a.endTool(b, "the response failed before the tool call completed")
		case !json.Valid([]byte(orEmptyObject(b.input.String()))):
			a.endTool(b, fmt.Sprintf("the tool call was cut off (stop reason %s)", a.stopReason))
		}
	}
	if err != nil {
		a.ensureMessage()
		text := "Request was aborted"
		if !aborted {
			text = err.Error()
		}
		a.s.publish(protocol.ErrorBlockAdded{MessageID: a.msgID, BlockIndex: a.next, Error: text})
		a.next++
		return
	}
	u := a.totalUsage()
	a.s.publish(protocol.TurnEnded{MessageID: a.msgID, StopReason: a.stopReason, Usage: &u})
}

// totalUsage merges message_start's usage with message_delta's totals.
func (a *attempt) totalUsage() protocol.Usage {
	u := protocol.Usage{
		InputTokens: a.startUsage.InputTokens, OutputTokens: a.startUsage.OutputTokens,
		CacheCreationInputTokens: a.startUsage.CacheCreationInputTokens,
		CacheReadInputTokens:     a.startUsage.CacheReadInputTokens,
	}
	if a.usage.InputTokens != 0 {
		u.InputTokens = a.usage.InputTokens
	}
	if a.usage.OutputTokens != 0 {
		u.OutputTokens = a.usage.OutputTokens
	}
	if a.usage.CacheCreationInputTokens != 0 {
		u.CacheCreationInputTokens = a.usage.CacheCreationInputTokens
	}
	if a.usage.CacheReadInputTokens != 0 {
		u.CacheReadInputTokens = a.usage.CacheReadInputTokens
	}
	return u
}

// contextTokens is the context's size after the response: the latest
// request's input as the provider measured it (not the billed input, which
// for a turn of server tools adds up every request the server made) plus
// the output; u, the billed totals, when the provider did not say.
func (a *attempt) contextTokens(u protocol.Usage) int {
	input := a.usage.ContextTokens
	if input == 0 {
		input = a.startUsage.ContextTokens
	}
	if input == 0 {
		input = u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	}
	return input + u.OutputTokens
}

// toolCall is a completed tool call of a response, with its display block.
type toolCall struct {
	id, name string
	input    json.RawMessage
	display  int
}

// toolCalls lists the response's tool calls that are to run.
func (a *attempt) toolCalls() []toolCall {
	var calls []toolCall
	for _, idx := range a.order {
		b := a.blocks[idx]
		if b.kind != model.BlockToolUse || b.ended || b.display < 0 {
			continue
		}
		calls = append(calls, toolCall{id: b.toolID, name: b.name,
			input: json.RawMessage(orEmptyObject(b.input.String())), display: b.display})
	}
	return calls
}

func orEmptyObject(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	return s
}

// rawBlockName names a server-side block for display: its tool name when
// it has one (server_tool_use), else its type; and an id.
func rawBlockName(raw json.RawMessage, name string, idx int) (string, string) {
	var head struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		Name      string `json:"name"`
		ToolUseID string `json:"tool_use_id"`
	}
	_ = json.Unmarshal(raw, &head)
	n := head.Name
	if n == "" {
		n = head.Type
	}
	if n == "" {
		n = name
	}
	if n == "" {
		n = "server_block"
	}
	id := head.ID
	if id == "" && head.ToolUseID != "" {
		id = head.ToolUseID + "_result"
	}
	if id == "" {
		id = fmt.Sprintf("block_%d", idx)
	}
	return n, id
}

func rawInput(raw json.RawMessage) string {
	var head struct {
		Input json.RawMessage `json:"input"`
	}
	if json.Unmarshal(raw, &head) == nil && len(head.Input) > 0 {
		return string(head.Input)
	}
	return "{}"
}

// summarizeRaw describes a server-side block's result for people: the
// titles and addresses of search results, else the block's JSON, bounded.
func summarizeRaw(raw json.RawMessage) string {
	var blk struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &blk) != nil {
		return ""
	}
	var items []struct {
		Title string `json:"title"`
		URL   string `json:"url"`
	}
	if json.Unmarshal(blk.Content, &items) == nil && len(items) > 0 {
		var sb strings.Builder
		for _, it := range items {
			if it.Title == "" && it.URL == "" {
				continue
			}
			fmt.Fprintf(&sb, "%s — %s\n", it.Title, it.URL)
		}
		if sb.Len() > 0 {
			return sb.String()
		}
	}
	if len(blk.Content) == 0 {
		return ""
	}
	const max = 2000
	s := string(blk.Content)
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "…"
	}
	return s
}

func firstLine(s string, max int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "…"
	}
	return s
}
