package cclines

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/provider/anthropic/api"
	"github.com/sluicehq/sluice/internal/streamjson"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
)

// Translator turns a run's items into stream-json lines in Claude Code's
// shapes: stream_event (each model part in Anthropic's event shape, with
// --include-partial-messages), assistant (one per finished content block),
// user (one per tool result), system/api_retry.
type Translator struct {
	w    *Writer
	opts Options
	now  func() time.Time

	msgID string
	model string
	// sessMsg is the session's id of the assistant message the model's
	// response shows as, lines how many assistant lines it has had: the
	// lines' uuids derive from both (LineUUID).
	sessMsg string
	lines   int
	// requestModel is the model the requests ask: the session's, until
	// the run falls back to another.
	requestModel string
	usage        model.Usage
	// contextTokens is the input of the last response: the context's size.
	contextTokens int
	// acc holds the response's blocks as they stream, from which each
	// finished block is written. Their text and reasoning it takes from
	// view (Accumulator.TextFrom): the answer is held once in the
	// process, by the session's reduced list, not again here.
	acc model.Accumulator
	// view is print mode's reduced list of the session: when an item is
	// translated, every event before it has been applied to it.
	view *TaskLines
	// display maps the response's block indices to the blocks of message
	// sessMsg that show them, learnt from the events that follow each
	// text or reasoning delta; lastDelta is the index of the delta just
	// taken (-1 after any other part).
	display   map[int]int
	lastDelta int
	starts    map[int]blockStart
	// open are the indices of the blocks started and not stopped.
	open  map[int]bool
	tools map[string]bool // ids of the tool calls of this run

	// parent is the Agent call whose subagent's lines this Translator
	// writes (nil for the session's own).
	parent *string
	// subagents translate the streams of the subagents of this run's
	// Agent calls, by call id.
	subagents map[string]*Translator
	// For a subagent's Translator: when it started, the usage its
	// responses reported (turnEnded) and its tool calls, for the call's
	// tool_use_result.
	started  time.Time
	spent    protocol.Usage
	toolUses int
	prompt   string
	call     string // the Agent call's parameters
	who      streamjson.SubagentFields
	// calls are the parameters of this stream's tool calls once they run.
	calls map[string]string
	// spliced keeps a retried attempt's stream events from repeating what
	// the failed one showed (with --include-partial-messages).
	spliced splice
}

// blockStart is what a block's start said: enough to write its start
// shape, and its final shape when the accumulator has none.
type blockStart struct {
	kind     model.BlockType
	id, name string
	raw      json.RawMessage
}

// Options say how a Translator writes.
type Options struct {
	// IncludePartial adds stream_event lines (--include-partial-messages).
	IncludePartial bool
	// MaxRetries is the model stream's retry bound, as
	// model.StreamOptions.MaxRetries says it (0: the default), for the
	// api_retry lines.
	MaxRetries int
	// RequestModel is the model the run's requests ask (the session's),
	// which a model_fallback line names as the one left.
	RequestModel string
	// Decided, when set, is the permission decision the control host made
	// about a tool call (tool_result_meta).
	Decided func(toolID string) (Decision, bool)
}

// Decision is a permission decision the control host made about a tool
// call, and whether the denial also stopped the turn (Stopped: the
// denial's interrupt: true), which Claude Code reports as a user
// rejection, not a decision.
type Decision struct {
	streamjson.PermissionDecision
	Stopped bool
}

// NewTranslator returns a translator that writes to w the lines of a run
// whose events, up to each item it takes, view has applied.
func NewTranslator(w *Writer, opts Options, view *TaskLines) *Translator {
	t := &Translator{w: w, opts: opts, requestModel: opts.RequestModel, now: time.Now, view: view, display: map[int]int{}, lastDelta: -1,
		starts: map[int]blockStart{}, open: map[int]bool{}, tools: map[string]bool{}, subagents: map[string]*Translator{}, calls: map[string]string{}}
	t.acc.TextFrom = t.shownText
	return t
}

// ContextTokens is the input of the run's last response: the context's
// size (0 before any).
func (t *Translator) ContextTokens() int { return t.contextTokens }

// shownText is the text of response block index as the view shows it.
// The agent shows every non-empty text or reasoning delta of a block in
// one display block, in order, so that text is the block's deltas.
func (t *Translator) shownText(index int) string {
	d, ok := t.display[index]
	if !ok {
		return ""
	}
	return t.view.blockContent(t.sessMsg, d)
}

// shows learns which display block a text or reasoning event grows: the
// one showing the delta part just before it. The agent publishes a
// part's events right after the part; other events in between (a
// background task's, a permission request) are not of this message.
func (t *Translator) shows(msgID string, block int, chunk string) {
	if t.lastDelta >= 0 && chunk != "" && msgID == t.sessMsg {
		t.display[t.lastDelta] = block
	}
}

// subagent returns the Translator of the subagent that Agent call id runs.
func (t *Translator) subagent(id string) *Translator {
	sub := t.subagents[id]
	if sub == nil {
		// Claude Code streams only the session's own events; the subagent's
		// requests do not ask the session's model.
		sub = NewTranslator(t.w, Options{MaxRetries: t.opts.MaxRetries, Decided: t.opts.Decided}, t.view)
		sub.now = t.now
		sub.parent = &id
		sub.call = t.calls[id]
		var in struct {
			Description  string `json:"description"`
			SubagentType string `json:"subagent_type"`
		}
		_ = json.Unmarshal([]byte(sub.call), &in)
		sub.who = streamjson.SubagentFields{AgentID: id, SubagentType: cmp.Or(in.SubagentType, agent.GeneralPurpose.Name), TaskDescription: in.Description}
		sub.started = t.now()
		t.subagents[id] = sub
	}
	return sub
}

// Item writes the lines of one item of the run's subscription.
func (t *Translator) Item(it agent.Item) {
	if it.Part != nil {
		if it.ParentToolID != "" {
			t.subagent(it.ParentToolID).part(*it.Part)
			return
		}
		t.part(*it.Part)
		return
	}
	if p := it.Event.Head().ParentToolID; p != "" {
		t.subagent(p).childEvent(it)
		return
	}
	switch e := it.Event.(type) {
	case protocol.AssistantMessageAdded:
		t.sessMsg, t.lines = e.Message.ID, 0
	case protocol.AssistantContentUpdated:
		t.shows(e.MessageID, e.BlockIndex, e.Chunk)
	case protocol.AssistantReasoningUpdated:
		t.shows(e.MessageID, e.BlockIndex, e.Chunk)
	}
	if e, ok := it.Event.(protocol.ToolBlockUpdated); ok && e.Stage == protocol.StageRunning && e.Parameters != "" {
		t.calls[e.ToolID] = e.Parameters
	}
	if e, ok := it.Event.(protocol.ToolBlockUpdated); ok && e.Stage == protocol.StageEnd && t.tools[e.ToolID] {
		content := ""
		if e.Result != nil {
			content = *e.Result
		}
		if content == "" && e.Error != "" {
			content = e.Error
		}
		failed := e.Success == nil || !*e.Success
		meta := streamjson.ToolResultMeta{ID: e.ToolID}
		d, ok := Decision{}, false
		if t.opts.Decided != nil {
			d, ok = t.opts.Decided(e.ToolID)
		}
		switch {
		case ok:
			meta.PermissionDecision = &d.PermissionDecision
		case !failed || (e.Result != nil && *e.Result != ""):
			// It ran: the permission mode let it.
			meta.PermissionDecision = &streamjson.PermissionDecision{Decision: "accept", Source: "config", ReasonType: "mode"}
		default:
			// Refused before it ran, by the mode (a call that cannot
			// run at all, an unknown tool, is refused the same way).
			d = Decision{PermissionDecision: streamjson.PermissionDecision{Decision: "reject", Source: "config", ReasonType: "mode"}}
			meta.PermissionDecision = &d.PermissionDecision
		}
		if meta.PermissionDecision.Decision == "reject" {
			meta.NonExecutionKind = "permission-rule"
		}
		var shown any = content
		switch {
		case failed:
			shown = "Error: " + content
		case e.Name == "Bash":
			// Claude Code's Bash result object; its stdout holds the
			// command's output, stderr merged in, as sluice's does.
			shown = streamjson.BashResult{Stdout: content}
		case e.File != nil:
			if r := fileResult(e.Name, e.Parameters, e.File); r != nil {
				shown = r
			}
		}
		if d.Stopped {
			meta.NonExecutionKind, meta.PermissionDecision, shown = "user-rejected", nil, "User rejected tool use"
		}
		if sub := t.subagents[e.ToolID]; sub != nil && (e.Name == "Agent" || e.Name == "Task") {
			r := sub.result(e, content, failed)
			shown = r
			t.w.Line(streamjson.TaskNotificationLine{
				Type: "system", Subtype: "task_notification", TaskID: e.ToolID, ToolUseID: e.ToolID,
				Status: r.Status, Summary: FirstLine(content),
				Usage:     streamjson.TaskUsage{TotalTokens: r.TotalTokens, ToolUses: r.TotalToolUseCount, DurationMs: r.TotalDurationMs},
				SessionID: t.w.session, UUID: uuid.NewString(),
			})
		}
		t.w.Line(streamjson.UserLine{
			Type: "user",
			Message: streamjson.UserMessage{Role: "user", Content: []streamjson.ToolResult{{
				ToolUseID: e.ToolID, Type: "tool_result", Content: content,
				IsError: failed,
			}}},
			ParentToolUseID: t.parent,
			SessionID:       t.w.session, UUID: ToolResultUUID(e.MessageID, e.ToolID), Timestamp: streamjson.Timestamp(t.now()),
			ToolUseResult: shown, ToolResultMeta: []streamjson.ToolResultMeta{meta},
			SubagentFields: t.who,
		})
	}
}

// childEvent takes an event of the subagent this Translator writes: its
// prompt becomes a user line, and what its responses used and called
// counts for the Agent call's result.
func (t *Translator) childEvent(it agent.Item) {
	switch e := it.Event.(type) {
	case protocol.UserMessageAdded:
		if t.prompt == "" {
			t.prompt = e.Message.Text()
			t.w.Line(streamjson.TaskStartedLine{
				Type: "system", Subtype: "task_started", TaskID: *t.parent, ToolUseID: *t.parent,
				Description: t.who.TaskDescription, SubagentType: t.who.SubagentType,
				TaskType: "local_agent", SpawnDepth: 1, Prompt: t.prompt,
				UUID: uuid.NewString(), SessionID: t.w.session,
			})
		}
		t.w.Line(streamjson.PromptLine{
			Type:            "user",
			Message:         streamjson.PromptMessage{Role: "user", Content: []streamjson.TextBlock{{Type: "text", Text: e.Message.Text()}}},
			ParentToolUseID: t.parent, SessionID: t.w.session, UUID: uuid.NewString(), Timestamp: streamjson.Timestamp(t.now()),
			SubagentFields: t.who,
		})
		return
	case protocol.TurnEnded:
		if e.Usage != nil {
			t.spent = t.spent.Add(*e.Usage)
		}
	case protocol.ToolBlockUpdated:
		if e.Stage == protocol.StageStart {
			t.toolUses++
		}
	}
	t.Item(agent.Item{Event: protocol.WithHeader(it.Event, protocol.Header{})})
}

// result is an Agent call's tool_use_result, from what its subagent's
// events said.
func (t *Translator) result(e protocol.ToolBlockUpdated, content string, failed bool) streamjson.SubagentResult {
	var in struct {
		SubagentType string `json:"subagent_type"`
	}
	_ = json.Unmarshal([]byte(e.Parameters), &in)
	r := streamjson.SubagentResult{
		Status: "completed", Prompt: t.prompt, AgentType: cmp.Or(in.SubagentType, agent.GeneralPurpose.Name),
		Content:           []streamjson.TextBlock{{Type: "text", Text: content}},
		TotalDurationMs:   t.now().Sub(t.started).Milliseconds(),
		TotalTokens:       t.spent.InputTokens + t.spent.CacheReadInputTokens + t.spent.CacheCreationInputTokens + t.spent.OutputTokens,
		TotalToolUseCount: t.toolUses,
		Usage:             sessionUsageOf(t.spent),
	}
	if failed {
		r.Status = "failed"
	}
	return r
}

// event writes a stream_event line (with --include-partial-messages).
func (t *Translator) event(ev any) {
	if !t.opts.IncludePartial {
		return
	}
	t.w.Line(streamjson.StreamEventLine{
		Type: "stream_event", Event: ev, SessionID: t.w.session,
		UUID: uuid.NewString(), APIMessageID: t.msgID,
	})
}

func (t *Translator) part(p model.Part) {
	// A part that does not fit the stream (a delta of a block never
	// started) is still shown as an event; its block is not accumulated.
	t.acc.Add(p)
	t.lastDelta = -1
	switch p.Type {
	case model.PartMessageStart:
		clear(t.display)
		t.msgID, t.model, t.usage = p.ID, p.Model, p.Usage
		t.contextTokens = p.Usage.InputTokens + p.Usage.CacheReadInputTokens + p.Usage.CacheCreationInputTokens
		if t.msgID == "" {
			t.msgID = "msg_" + strings.ReplaceAll(uuid.NewString(), "-", "")
		}
		clear(t.starts)
		clear(t.open)
		if t.spliced.messageStart() {
			t.event(api.MessageStartEvent{Type: "message_start", Message: t.message([]any{})})
		}
	case model.PartBlockStart:
		b := blockStart{kind: p.Block, id: p.ID, name: p.Name, raw: p.Raw}
		t.starts[p.Index] = b
		t.open[p.Index] = true
		if p.Block == model.BlockToolUse {
			t.tools[p.ID] = true
		}
		if t.spliced.started(p.Index, p.Block) {
			t.event(api.ContentBlockStartEvent{Type: "content_block_start", Index: p.Index, ContentBlock: b.shape()})
		}
	case model.PartBlockDelta:
		if p.Delta == model.DeltaText || p.Delta == model.DeltaReasoning {
			t.lastDelta = p.Index
		}
		if !t.opts.IncludePartial {
			return
		}
		if p.Delta == model.DeltaSignature && t.starts[p.Index].kind != model.BlockReasoning {
			// Gemini's signatures of text and tool blocks stay in the
			// session: Anthropic's stream has signature_delta only in
			// thinking blocks.
			return
		}
		if p.Delta == model.DeltaText {
			if p.Text = t.spliced.text(p.Index, p.Text); p.Text == "" {
				return
			}
		}
		// A long delta (a whole answer from the non-streaming fallback)
		// goes through Line, which holds a long string once.
		if head := deltaHead(p.Delta); head != "" && len(p.Text) < longText {
			t.w.deltaLine(p.Index, head, p.Text, t.msgID)
			return
		}
		var delta any
		switch p.Delta {
		case model.DeltaText:
			delta = api.TextDelta{Type: "text_delta", Text: p.Text}
		case model.DeltaReasoning:
			delta = api.ThinkingDelta{Type: "thinking_delta", Thinking: p.Text}
		case model.DeltaSignature:
			delta = api.SignatureDelta{Type: "signature_delta", Signature: p.Text}
		case model.DeltaInputJSON:
			delta = api.InputJSONDelta{Type: "input_json_delta", PartialJSON: p.Text}
		case model.DeltaCitation:
			delta = api.CitationsDelta{Type: "citations_delta", Citation: json.RawMessage(p.Text)}
		case model.DeltaRaw:
			if !json.Valid([]byte(p.Text)) {
				return
			}
			delta = json.RawMessage(p.Text)
		default:
			// Redacted data comes whole in Anthropic's block start; the
			// finished block carries it.
			return
		}
		t.event(api.ContentBlockDeltaEvent{Type: "content_block_delta", Index: p.Index, Delta: delta})
	case model.PartBlockStop:
		// A subagent's text and thinking stay out, as Claude Code leaves
		// them (without --forward-subagent-text): its report is the call's
		// result; its tool calls are written.
		delete(t.open, p.Index)
		if b, ok := t.starts[p.Index]; ok && (t.parent == nil || b.kind == model.BlockToolUse) {
			// Claude Code writes the finished block before its stop event.
			block, text := t.finished(p.Index, b)
			line := streamjson.AssistantLine{
				Type: "assistant", Message: streamjson.AssistantMessage{Message: t.message([]any{block})},
				ParentToolUseID: t.parent,
				SessionID:       t.w.session, UUID: AssistantUUID(t.sessMsg, t.lines), Timestamp: streamjson.Timestamp(t.now()),
				SubagentFields: t.who,
			}
			t.w.LineWith(&line, text)
			t.lines++
		}
		t.event(api.ContentBlockStopEvent{Type: "content_block_stop", Index: p.Index})
	case model.PartMessageDelta:
		t.event(api.MessageDeltaEvent{
			Type:  "message_delta",
			Delta: api.MessageDelta{StopReason: nullable(p.StopReason), StopSequence: nullable(p.StopSequence)},
			Usage: modelUsageOf(p.Usage),
		})
	case model.PartMessageStop:
		t.event(api.MessageStopEvent{Type: "message_stop"})
	case model.PartRetry:
		clear(t.display)
		if r := p.Retry; r != nil && r.Model != "" {
			trigger, _ := errorKind(r.Err)
			t.w.Line(streamjson.ModelFallbackLine{
				Type: "system", Subtype: "model_fallback", UUID: uuid.NewString(), Trigger: trigger,
				OriginalModel: t.requestModel, FallbackModel: r.Model,
				Content:   fmt.Sprintf("Switched to %s: %s is unavailable (%s)", r.Model, t.requestModel, errText(r.Err)),
				SessionID: t.w.session,
			})
			t.requestModel = r.Model
			return
		}
		t.spliced.retry()
		line := streamjson.APIRetryLine{
			Type: "system", Subtype: "api_retry", MaxRetries: t.opts.maxRetries(),
			SessionID: t.w.session, UUID: uuid.NewString(),
		}
		if r := p.Retry; r != nil {
			line.Attempt, line.RetryDelayMs = r.Attempt, r.Delay.Milliseconds()
			line.Error, line.ErrorStatus = errorKind(r.Err)
			line.ErrorMessage = errText(r.Err)
		}
		t.w.Line(line)
	}
}

// Aborted writes, for a response cut by an interrupt, Claude Code's lines:
// the text it had streamed, as an assistant line marked aborted, and the
// user line that says the user interrupted.
func (t *Translator) Aborted(note string) {
	for _, i := range slices.Sorted(maps.Keys(t.open)) {
		b := t.starts[i]
		if b.kind != model.BlockText {
			continue
		}
		block, text := t.finished(i, b)
		line := streamjson.AbortedLine{AssistantLine: streamjson.AssistantLine{
			Type: "assistant", Message: streamjson.AssistantMessage{Message: t.message([]any{block})},
			SessionID: t.w.session, UUID: AssistantUUID(t.sessMsg, t.lines), Timestamp: streamjson.Timestamp(t.now()),
		}, Aborted: true}
		t.w.LineWith(&line, text)
		t.lines++
	}
	clear(t.open)
	t.w.Line(streamjson.PromptLine{
		Type:      "user",
		Message:   streamjson.PromptMessage{Role: "user", Content: []streamjson.TextBlock{{Type: "text", Text: note}}},
		SessionID: t.w.session, UUID: uuid.NewString(), Timestamp: streamjson.Timestamp(t.now()),
	})
}

// The text of the user line after an interrupt, as Claude Code writes it:
// by the host, or by a denial that asked to stop the turn.
const (
	InterruptedByUser = "[Request interrupted by user]"
	InterruptedForUse = "[Request interrupted by user for tool use]"
)

// finished is a finished block in Anthropic's shape, from the accumulator;
// a tool use whose input is not valid JSON (cut by max_tokens) shows an
// empty input, as it started. text points to the text of a text or
// thinking block (for Writer.LineWith), nil for other blocks.
func (t *Translator) finished(index int, b blockStart) (block any, text *string) {
	c, ok := t.acc.Block(index)
	if !ok {
		return b.shape(), nil
	}
	switch c.Type {
	case model.ContentReasoning:
		tb := &api.ThinkingBlock{Type: "thinking", Thinking: c.Text, Signature: c.Signature}
		return tb, &tb.Thinking
	case model.ContentRedactedReasoning:
		return api.RedactedBlock{Type: "redacted_thinking", Data: c.Data}, nil
	case model.ContentToolUse:
		return api.ToolUseBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: c.Input}, nil
	case model.ContentRaw:
		return c.Raw, nil
	}
	tb := &api.TextBlock{Type: "text", Text: c.Text, Citations: c.Citations}
	return tb, &tb.Text
}

func (t *Translator) message(content []any) api.Message {
	return api.Message{
		ID: t.msgID, Type: "message", Role: "assistant", Model: t.model, Content: content,
		Usage: modelUsageOf(t.usage),
	}
}

// shape is the block as its start shows it.
func (b blockStart) shape() any {
	switch b.kind {
	case model.BlockReasoning:
		return api.ThinkingBlock{Type: "thinking"}
	case model.BlockRedactedReasoning:
		return api.RedactedBlock{Type: "redacted_thinking"}
	case model.BlockToolUse:
		return api.ToolUseBlock{Type: "tool_use", ID: b.id, Name: b.name, Input: json.RawMessage("{}")}
	case model.BlockRaw:
		if len(b.raw) > 0 {
			return b.raw
		}
		return api.TypeOnly{Type: b.name}
	}
	return api.TextBlock{Type: "text"}
}

// errorKind names a model API failure as Claude Code's api_retry lines
// do, with its HTTP status when there was one.
func errorKind(err error) (string, *int) {
	var apiErr *model.APIError
	if !errors.As(err, &apiErr) {
		// An answer sluice could not read (or that broke off, or grew
		// past the bound) is the server's failure, whatever the network.
		if errors.Is(err, model.ErrMalformedEvent) || errors.Is(err, model.ErrNotEventStream) ||
			errors.Is(err, model.ErrIncomplete) || errors.Is(err, model.ErrResponseTooLarge) {
			return "server_error", nil
		}
		return "unknown", nil
	}
	var status *int
	if apiErr.Status != 0 {
		s := apiErr.Status
		status = &s
	}
	switch {
	case apiErr.Status == 529 || apiErr.Type == "overloaded_error":
		return "overloaded", status
	case apiErr.Status == 429 || apiErr.Type == "rate_limit_error":
		return "rate_limit", status
	case apiErr.Status == 401 || apiErr.Status == 403 || apiErr.Type == "authentication_error" || apiErr.Type == "permission_error":
		return "authentication_failed", status
	case apiErr.Status == 402 || apiErr.Type == "billing_error":
		return "billing_error", status
	case apiErr.Status >= 500 || apiErr.Status == 408 || apiErr.Status == 409 || apiErr.Type == "api_error":
		return "server_error", status
	case apiErr.Status >= 400 || apiErr.Type == "invalid_request_error":
		return "invalid_request", status
	}
	return "unknown", status
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// fileResult is the tool_use_result of a file tool's call that read or
// changed f, in Claude Code's shape (nil for another tool).
func fileResult(name, params string, f *protocol.ToolFile) any {
	var in struct {
		Content    string `json:"content"`
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	}
	_ = json.Unmarshal([]byte(params), &in) // the tool ran: they are valid
	patch := f.Patch
	if patch == nil {
		patch = []protocol.Hunk{}
	}
	switch name {
	case "Read":
		// Claude Code splits the text at newlines: a file that ends with
		// one has an empty last line, which a read to the end includes,
		// and the lines read are joined with newlines.
		r := streamjson.ReadFile{FilePath: f.Path, Content: f.Text, NumLines: f.Lines, StartLine: f.StartLine, TotalLines: f.TotalLines}
		if f.FinalNewline {
			r.TotalLines++
		}
		if f.FinalNewline && !f.Limited {
			r.NumLines++
		} else {
			r.Content = strings.TrimSuffix(r.Content, "\n")
		}
		return streamjson.ReadResult{Type: "text", File: r}
	case "Write":
		w := streamjson.WriteResult{Type: "create", FilePath: f.Path, Content: in.Content, StructuredPatch: patch}
		if !f.Created {
			w.Type, w.OriginalFile = "update", &f.Original
		}
		return w
	case "Edit":
		return streamjson.EditResult{
			FilePath: f.Path, OldString: in.OldString, NewString: in.NewString, OriginalFile: f.Original,
			StructuredPatch: patch, ReplaceAll: in.ReplaceAll,
		}
	}
	return nil
}
