package acp

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/sluicehq/sluice/internal/tools"
	"github.com/sluicehq/sluice/protocol"
)

// toolKind is the ACP kind of a sluice tool, by name: the built-ins by
// what they do, MCP servers' tools as other.
func toolKind(name string) sdk.ToolKind {
	switch name {
	case "Read":
		return sdk.ToolKindRead
	case "Write", "Edit":
		return sdk.ToolKindEdit
	case "Bash":
		return sdk.ToolKindExecute
	case "Glob", "Grep":
		return sdk.ToolKindSearch
	case "WebFetch", "WebSearch":
		return sdk.ToolKindFetch
	case "TodoWrite":
		return sdk.ToolKindThink
	}
	return sdk.ToolKindOther
}

// toolInput is the part of a built-in tool's parameters the client is shown.
type toolInput struct {
	FilePath  string  `json:"file_path"`
	Path      string  `json:"path"`
	Offset    int     `json:"offset"`
	OldString *string `json:"old_string"`
	NewString *string `json:"new_string"`
	Content   *string `json:"content"`
	Command   string  `json:"command"`
}

// toolView is what one tool event shows: its title, raw input, locations
// and, for Write and Edit, the diff.
type toolView struct {
	title     string
	rawInput  any
	locations []sdk.ToolCallLocation
	diff      *sdk.ToolCallContent
	command   string
}

// viewOf reads a tool's authoritative parameters. workDir makes relative
// paths absolute, as ACP locations are. oldText is the text a Write
// replaces (the event's), "" for a new file or one too large to carry.
func viewOf(workDir, name, params, compact, oldText string) toolView {
	v := toolView{title: name}
	if compact != "" {
		v.title = name + " " + compact
	}
	if params == "" {
		return v
	}
	var raw any
	if json.Unmarshal([]byte(params), &raw) == nil {
		v.rawInput = raw
	}
	var in toolInput
	if json.Unmarshal([]byte(params), &in) != nil {
		return v
	}
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) || workDir == "" {
			return p
		}
		return filepath.Join(workDir, p)
	}
	switch name {
	case "Read", "Write", "Edit":
		if in.FilePath == "" {
			break
		}
		loc := sdk.ToolCallLocation{Path: abs(in.FilePath)}
		if name == "Read" && in.Offset > 0 {
			loc.Line = sdk.Ptr(in.Offset)
		}
		v.locations = []sdk.ToolCallLocation{loc}
		switch {
		case name == "Write" && in.Content != nil && oldText != "":
			d := sdk.ToolDiffContent(loc.Path, *in.Content, oldText)
			v.diff = &d
		case name == "Write" && in.Content != nil:
			d := sdk.ToolDiffContent(loc.Path, *in.Content)
			v.diff = &d
		case name == "Edit" && in.OldString != nil && in.NewString != nil:
			d := sdk.ToolDiffContent(loc.Path, *in.NewString, *in.OldString)
			v.diff = &d
		}
	case "Glob", "Grep":
		if in.Path != "" {
			v.locations = []sdk.ToolCallLocation{{Path: abs(in.Path)}}
		}
	case "Bash":
		v.command = in.Command
	}
	return v
}

// textContent is tool call content holding text.
func textContent(s string) sdk.ToolCallContent { return sdk.ToolContent(sdk.TextBlock(s)) }

// translator turns one session's events into ACP session updates.
type translator struct {
	workDir string
	// terminal returns the id of the client terminal a tool call runs in,
	// "" when none (safe for concurrent use).
	terminal func(toolID string) string
	// list is the session's view state, kept by the one reducer from the
	// session's events (session.extra applies each before updates): a
	// subagent's work is shown from the nested messages of its call's
	// block.
	list *protocol.List
}

// updates returns the session/update payloads for ev, in order: none for
// events that an ACP client has no use for (run states, message frames,
// permission traffic, which travels as requests).
func (t *translator) updates(ev protocol.Event) []sdk.SessionUpdate {
	if p := ev.Head().ParentToolID; p != "" {
		return t.subagentUpdates(p, ev)
	}
	switch e := ev.(type) {
	case protocol.AssistantContentUpdated:
		if e.Chunk == "" {
			return nil
		}
		return []sdk.SessionUpdate{sdk.UpdateAgentMessageText(e.Chunk)}
	case protocol.AssistantReasoningUpdated:
		if e.Chunk == "" {
			return nil
		}
		return []sdk.SessionUpdate{sdk.UpdateAgentThoughtText(e.Chunk)}
	case protocol.ToolBlockUpdated:
		return t.toolUpdates(e)
	case protocol.UserMessageAdded:
		// A user message reaches the client as the prompt it sent; only a
		// bang's tool block is news to it.
		return t.messageUpdates(e.Message, false)
	case protocol.CompactBlockAdded:
		return t.messageUpdates(e.Message, false)
	case protocol.MessagesCleared:
		return []sdk.SessionUpdate{notice(clearedNotice, map[string]any{"messagesCleared": map[string]any{}})}
	case protocol.MessagesRewound:
		return []sdk.SessionUpdate{notice(rewoundNotice, map[string]any{"messagesRewound": map[string]any{"anchorMessageId": e.AnchorMessageID}})}
	case protocol.AssistantMessageDiscarded:
		// ACP cannot take back chunks already sent: say why what follows
		// may repeat them.
		return []sdk.SessionUpdate{sdk.UpdateAgentThoughtText("The model's response was interrupted (" + e.Reason + "); it is retried, so its start may appear twice.\n")}
	}
	return nil
}

// ACP v1 has no update that takes messages out of a client's view (a
// truncation is only an RFD for v2), so a clear or a rewind is told in
// words, with a machine-readable _meta for clients that know sluice; a
// session/load replays the conversation as it is now.
const (
	clearedNotice = "Conversation cleared: the model no longer sees the messages above. " +
		"(ACP gives no way to remove them from this view; loading the session again shows it as it is now.)"
	rewoundNotice = "Rewound: your last message and the answer to it are removed from the conversation; the model no longer sees them. " +
		"(ACP gives no way to remove them from this view; loading the session again shows it as it is now.)"
)

// notice is an agent message telling the user what happened to the
// session, with meta under _meta.sluice.
func notice(text string, meta map[string]any) sdk.SessionUpdate {
	u := sdk.UpdateAgentMessageText(text)
	u.AgentMessageChunk.Meta = map[string]any{"sluice": meta}
	return u
}

// toolUpdates translates one tool block event. Every running and end event
// carries the tool's authoritative parameters, so each update is complete
// on its own: the translator keeps no state per tool.
func (t *translator) toolUpdates(e protocol.ToolBlockUpdated) []sdk.SessionUpdate {
	id := sdk.ToolCallId(e.ToolID)
	switch e.Stage {
	case protocol.StageStart:
		return []sdk.SessionUpdate{sdk.StartToolCall(id, e.Name,
			sdk.WithStartKind(toolKind(e.Name)), sdk.WithStartStatus(sdk.ToolCallStatusPending))}
	case protocol.StageStreaming:
		// Partial JSON is of no use to an ACP client; the parameters come
		// whole with running.
		return nil
	case protocol.StageRunning:
		v := viewOf(t.workDir, e.Name, e.Parameters, e.CompactParams, e.OldText)
		opts := []sdk.ToolCallUpdateOpt{
			sdk.WithUpdateStatus(sdk.ToolCallStatusInProgress), sdk.WithUpdateTitle(v.title),
		}
		if v.rawInput != nil {
			opts = append(opts, sdk.WithUpdateRawInput(v.rawInput))
		}
		if v.locations != nil {
			opts = append(opts, sdk.WithUpdateLocations(v.locations))
		}
		switch term := t.terminalOf(e.ToolID); {
		case term != "":
			opts = append(opts, sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolTerminalRef(term)}))
		case v.diff != nil:
			opts = append(opts, sdk.WithUpdateContent([]sdk.ToolCallContent{*v.diff}))
		case e.ShortResult != "":
			// ACP replaces a tool call's content on each update, so the
			// live view is the bounded last lines, never the whole output.
			opts = append(opts, sdk.WithUpdateContent([]sdk.ToolCallContent{textContent(e.ShortResult)}))
		}
		return []sdk.SessionUpdate{sdk.UpdateToolCall(id, opts...)}
	case protocol.StageEnd:
		v := viewOf(t.workDir, e.Name, e.Parameters, e.CompactParams, e.OldText)
		ok := e.Success != nil && *e.Success
		result := ""
		if e.Result != nil {
			result = *e.Result
		}
		return withPlan(e.Name, e.Parameters, ok, sdk.UpdateToolCall(id, t.endOpts(e.ToolID, e.Name, v, ok, result, e.ShortResult, e.Error)...))
	}
	return nil
}

// withPlan adds a plan update after a successful TodoWrite's final update:
// the list is the call's parameters, so the plan needs no state here.
func withPlan(name, params string, ok bool, final sdk.SessionUpdate) []sdk.SessionUpdate {
	out := []sdk.SessionUpdate{final}
	if name != "TodoWrite" || !ok {
		return out
	}
	todos, err := tools.Todos(json.RawMessage(params))
	if err != nil {
		return out
	}
	entries := make([]sdk.PlanEntry, 0, len(todos))
	for _, td := range todos {
		entries = append(entries, sdk.PlanEntry{Content: td.Content, Priority: sdk.PlanEntryPriorityMedium, Status: sdk.PlanEntryStatus(td.Status)})
	}
	return append(out, sdk.UpdatePlan(entries...))
}

// endOpts is the final update of a tool call.
func (t *translator) endOpts(toolID, name string, v toolView, ok bool, result, short, errText string) []sdk.ToolCallUpdateOpt {
	status := sdk.ToolCallStatusCompleted
	if !ok {
		status = sdk.ToolCallStatusFailed
	}
	opts := []sdk.ToolCallUpdateOpt{sdk.WithUpdateStatus(status), sdk.WithUpdateTitle(v.title)}
	if v.rawInput != nil {
		opts = append(opts, sdk.WithUpdateRawInput(v.rawInput))
	}
	if v.locations != nil {
		opts = append(opts, sdk.WithUpdateLocations(v.locations))
	}
	var content []sdk.ToolCallContent
	switch term := t.terminalOf(toolID); {
	case term != "":
		content = []sdk.ToolCallContent{sdk.ToolTerminalRef(term)}
	case ok && v.diff != nil:
		content = []sdk.ToolCallContent{*v.diff}
	case !ok && errText != "" && result == "":
		content = []sdk.ToolCallContent{textContent(errText)}
	case name == "Read" && ok:
		// The file is the client's to show; the numbered lines are for
		// the model.
		if short != "" {
			content = []sdk.ToolCallContent{textContent(short)}
		}
	case result != "":
		content = []sdk.ToolCallContent{textContent(result)}
	}
	if content != nil {
		opts = append(opts, sdk.WithUpdateContent(content))
	}
	return opts
}

func (t *translator) terminalOf(toolID string) string {
	if t.terminal == nil {
		return ""
	}
	return t.terminal(toolID)
}

// messageUpdates replays a whole message: for a loaded session every
// block, as the client would have seen it stream (withUser: the user's
// text too); for a live one only tool blocks (a bang's) and compaction
// summaries, which the client has not seen.
func (t *translator) messageUpdates(m protocol.Message, withUser bool) []sdk.SessionUpdate {
	var out []sdk.SessionUpdate
	for _, b := range m.Blocks {
		switch b.Type {
		case protocol.BlockText:
			switch {
			case m.Role == protocol.RoleUser && withUser:
				out = append(out, sdk.UpdateUserMessageText(b.Content))
			case m.Role == protocol.RoleAssistant && withUser && b.Content != "":
				out = append(out, sdk.UpdateAgentMessageText(b.Content))
			}
		case protocol.BlockReasoning:
			if withUser && b.Content != "" {
				out = append(out, sdk.UpdateAgentThoughtText(b.Content))
			}
		case protocol.BlockCompact:
			out = append(out, sdk.UpdateAgentThoughtText("Conversation compacted:\n\n"+b.Content))
		case protocol.BlockError:
			if withUser {
				out = append(out, sdk.UpdateAgentMessageText("\n\nError: "+b.Content))
			}
		case protocol.BlockTool:
			if !withUser && m.Role != protocol.RoleUser {
				continue // live assistant tools arrive as their own events
			}
			out = append(out, t.wholeTool(b)...)
		}
	}
	return out
}

// wholeTool is a finished (or interrupted) tool block as a tool_call
// followed by its final update.
func (t *translator) wholeTool(b protocol.Block) []sdk.SessionUpdate {
	id := sdk.ToolCallId(b.ToolID)
	start := sdk.StartToolCall(id, b.Name, sdk.WithStartKind(toolKind(b.Name)), sdk.WithStartStatus(sdk.ToolCallStatusPending))
	if b.Stage != protocol.StageEnd {
		return []sdk.SessionUpdate{start}
	}
	v := viewOf(t.workDir, b.Name, b.Parameters, b.CompactParams, b.OldText)
	ok := b.Success != nil && *b.Success
	return append([]sdk.SessionUpdate{start}, withPlan(b.Name, b.Parameters, ok, sdk.UpdateToolCall(id, t.endOpts(b.ToolID, b.Name, v, ok, b.Result, b.ShortResult, b.Error)...))...)
}

// title is the session's title: the start of its first user message.
func title(m protocol.Message) string {
	s := strings.TrimSpace(m.Text())
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if r := []rune(s); len(r) > 80 {
		s = string(r[:80]) + "…"
	}
	return s
}

// subagentUpdates shows a subagent's progress as the content of the
// Agent call it runs in: ACP has no nested sessions, so the call's
// content lists the subagent's tool calls and its last words, replaced
// whenever one of them changes (never per streamed chunk).
func (t *translator) subagentUpdates(parent string, ev protocol.Event) []sdk.SessionUpdate {
	switch e := ev.(type) {
	case protocol.ToolBlockUpdated:
		if e.Stage == protocol.StageStreaming || (e.Stage == protocol.StageRunning && e.ResultChunk != "") {
			return nil
		}
	case protocol.AssistantContentUpdated:
		if e.Stage != protocol.StageEnd {
			return nil
		}
	case protocol.UserMessageAdded:
	default:
		return nil
	}
	if t.list == nil {
		return nil
	}
	msgs, ok := nestedOf(t.list, parent)
	if !ok {
		return nil
	}
	text := subagentSummary(msgs)
	if text == "" {
		return nil
	}
	return []sdk.SessionUpdate{sdk.UpdateToolCall(sdk.ToolCallId(parent),
		sdk.WithUpdateStatus(sdk.ToolCallStatusInProgress),
		sdk.WithUpdateContent([]sdk.ToolCallContent{textContent(text)}))}
}

// nestedOf returns the nested messages of the top-level tool block with
// the given id, searching from the latest message.
func nestedOf(l *protocol.List, toolID string) ([]protocol.Message, bool) {
	for i := l.Len() - 1; i >= 0; i-- {
		for _, b := range l.At(i).Blocks {
			if b.Type == protocol.BlockTool && b.ToolID == toolID {
				return b.Messages, true
			}
		}
	}
	return nil, false
}

// subagentSummary is a subagent's work in a few lines: one per tool call
// (the latest ones), then the last line of its latest text.
func subagentSummary(msgs []protocol.Message) string {
	d := protocol.DigestOf(msgs)
	var calls []string
	for _, b := range d.Tools {
		mark := "…"
		switch {
		case b.Stage == protocol.StageEnd && b.Success != nil && *b.Success:
			mark = "✓"
		case b.Stage == protocol.StageEnd:
			mark = "✗"
		}
		line := mark + " " + b.Name
		if b.CompactParams != "" {
			line += " " + b.CompactParams
		}
		calls = append(calls, line)
	}
	const shown = 8
	var lines []string
	if n := len(calls) - shown; n > 0 {
		lines = append(lines, fmt.Sprintf("(%d earlier tool calls)", n))
		calls = calls[n:]
	}
	lines = append(lines, calls...)
	if d.LastLine != "" {
		lines = append(lines, d.LastLine)
	}
	return strings.Join(lines, "\n")
}
