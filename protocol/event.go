package protocol

// Method names of the events on the wire (JSON-RPC notification methods).
const (
	MethodUserMessageAdded          = "userMessageAdded"
	MethodAssistantMessageAdded     = "assistantMessageAdded"
	MethodAssistantContentUpdated   = "assistantContentUpdated"
	MethodAssistantReasoningUpdated = "assistantReasoningUpdated"
	MethodToolBlockUpdated          = "toolBlockUpdated"
	MethodErrorBlockAdded           = "errorBlockAdded"
	MethodCompactBlockAdded         = "compactBlockAdded"
	MethodAssistantMessageDiscarded = "assistantMessageDiscarded"
	MethodTurnEnded                 = "turnEnded"
	MethodMessagesRewound           = "messagesRewound"
	MethodMessagesCleared           = "messagesCleared"
	MethodRunStateChanged           = "runStateChanged"
	MethodStreamNotice              = "streamNotice"
	MethodPermissionRequest         = "permissionRequest"
	MethodPermissionResolved        = "permissionResolved"
	MethodQueueChanged              = "queueChanged"
	MethodTaskUpdated               = "taskUpdated"
	MethodCompactionUpdated         = "compactionUpdated"
)

// Header is carried by every event.
type Header struct {
	SessionID string `json:"sessionId"`
	// Seq numbers the session's events: exactly one more than the event
	// before it.
	Seq int64 `json:"seq"`
	// FirstSeq is set only on an event that a buffering stage merged from
	// several adjacent deltas: it is the seq of the first of them, Seq the
	// seq of the last. A consumer holding a seq in [FirstSeq, Seq) cannot
	// apply the merged event and must resync.
	FirstSeq int64 `json:"firstSeq,omitempty"`
	// ParentToolID is set on every event of a child session (a subagent):
	// the toolId of the tool block, in the list of the session that started
	// the child, whose call runs it. The event applies to that block's
	// nested messages (Block.Messages) instead of the top-level list.
	ParentToolID string `json:"parentToolId,omitempty"`
}

// From returns the first seq the event covers.
func (h Header) From() int64 {
	if h.FirstSeq != 0 {
		return h.FirstSeq
	}
	return h.Seq
}

// Event is one change to a session. The set of events is closed: the
// concrete types are those of this package, passed by value. Events are
// immutable once published; consumers must not modify the slices they hold.
type Event interface {
	// Method is the event's wire name.
	Method() string
	// Head returns the event's header.
	Head() Header
	withHead(Header) Event
}

// WithHeader returns ev with its header replaced.
func WithHeader(ev Event, h Header) Event { return ev.withHead(h) }

// UserMessageAdded appends a whole user message.
type UserMessageAdded struct {
	Header
	Message Message `json:"message"`
}

// AssistantMessageAdded appends a new assistant message, without blocks.
type AssistantMessageAdded struct {
	Header
	Message Message `json:"message"`
}

// AssistantContentUpdated appends Chunk to the text block at BlockIndex of
// message MessageID, creating the block when the index is new. The end of
// the block is an event with Stage end and an empty Chunk.
type AssistantContentUpdated struct {
	Header
	MessageID  string `json:"messageId"`
	BlockIndex int    `json:"blockIndex"`
	Chunk      string `json:"chunk"`
	Stage      Stage  `json:"stage"`

	grown grown // set by List.Publish; never on the wire
}

// AssistantReasoningUpdated is AssistantContentUpdated for a reasoning
// block; StartedAt comes with its first event, EndedAt with its end.
type AssistantReasoningUpdated struct {
	Header
	MessageID  string `json:"messageId"`
	BlockIndex int    `json:"blockIndex"`
	Chunk      string `json:"chunk"`
	Stage      Stage  `json:"stage"`
	StartedAt  int64  `json:"startedAt,omitempty"`
	EndedAt    int64  `json:"endedAt,omitempty"`

	grown grown // set by List.Publish; never on the wire
}

// grown is, on an event that List.Publish applied, its block's content in
// that list before and after the chunk. A list in the same process whose
// content is before (the very same string) takes after as its new content
// instead of appending the chunk to a copy of its own: every face of a
// session in one process shares one copy of a streamed text. Strings are
// immutable, and before and after are the publisher's, so sharing them is
// exact; a decoded event has none and is applied as usual.
type grown struct{ before, after string }

// Plain returns ev without what List.Publish attached to it for the lists
// of this process: an event kept for later (a replay buffer, a journal)
// must not keep the publisher's earlier buffers alive.
func Plain(ev Event) Event {
	switch e := ev.(type) {
	case AssistantContentUpdated:
		e.grown = grown{}
		return e
	case AssistantReasoningUpdated:
		e.grown = grown{}
		return e
	}
	return ev
}

// ToolBlockUpdated moves a tool block forward. By stage:
//   - start: Name;
//   - streaming: ParametersChunk, to append to the parameters;
//   - running: the authoritative Parameters and CompactParams (on every
//     running event), and while output grows ResultChunk (to append to the
//     result) with ShortResult, its last few lines;
//   - end: Parameters, Result (the whole output), ShortResult, Success and
//     Error.
type ToolBlockUpdated struct {
	Header
	MessageID       string `json:"messageId"`
	BlockIndex      int    `json:"blockIndex"`
	ToolID          string `json:"toolId"`
	Name            string `json:"name"`
	Stage           Stage  `json:"stage"`
	ParametersChunk string `json:"parametersChunk,omitempty"`
	Parameters      string `json:"parameters,omitempty"`
	CompactParams   string `json:"compactParams,omitempty"`
	ResultChunk     string `json:"resultChunk,omitempty"`
	ShortResult     string `json:"shortResult,omitempty"`
	// Result is set at end only, even when the output is empty.
	Result  *string `json:"result,omitempty"`
	Success *bool   `json:"success,omitempty"`
	Error   string  `json:"error,omitempty"`
	// OldText, on running and end, is the text a call that replaces a
	// whole file (Write) replaces: the file as it was before the call, so
	// that a face can show the call as a diff. It is a whole value, absent
	// for a new file, a file that is not text or one over the agent's
	// bound (then a face knows only the new content).
	OldText string `json:"oldText,omitempty"`
	// File, on end only, is what a file tool read or changed, as data for
	// a face that shows it so (print mode's tool_use_result). It is not
	// part of the block: a snapshot or a replayed session does not have it.
	File *ToolFile `json:"file,omitempty"`
}

// ToolFile is what a call of a file tool (Read, Write, Edit) read or
// changed.
type ToolFile struct {
	// Path is the file's absolute path.
	Path string `json:"path"`
	// Text, for a read, is the text of the lines read as the model saw
	// them, each followed by a newline where the file has one; StartLine is the first one's number (1-based), Lines how many
	// were read and TotalLines how many the file has. FinalNewline says
	// that the file's last line ends with a newline; Limited that the
	// read stopped at its limit of lines or of output.
	Text         string `json:"text,omitempty"`
	StartLine    int    `json:"startLine,omitempty"`
	Lines        int    `json:"lines,omitempty"`
	TotalLines   int    `json:"totalLines,omitempty"`
	FinalNewline bool   `json:"finalNewline,omitempty"`
	Limited      bool   `json:"limited,omitempty"`
	// Original, for a change, is the file's text before the call; Created
	// says that there was no file.
	Original string `json:"original,omitempty"`
	Created  bool   `json:"created,omitempty"`
	// Patch is the change as the hunks of a unified diff of the file's
	// lines with three lines of context.
	Patch []Hunk `json:"patch,omitempty"`
}

// Hunk is one hunk of a unified diff. Each of Lines is one line of the
// file without its line end, after " " (context), "-" (removed) or "+"
// (added); "\\ No newline at end of file" follows a last line that has none.
type Hunk struct {
	OldStart int      `json:"oldStart"`
	OldLines int      `json:"oldLines"`
	NewStart int      `json:"newStart"`
	NewLines int      `json:"newLines"`
	Lines    []string `json:"lines"`
}

// ErrorBlockAdded appends an error block at BlockIndex.
type ErrorBlockAdded struct {
	Header
	MessageID  string `json:"messageId"`
	BlockIndex int    `json:"blockIndex"`
	Error      string `json:"error"`
}

// CompactBlockAdded appends the message that holds a compaction summary.
// The display list only grows; the model's context is what was folded.
type CompactBlockAdded struct {
	Header
	Message Message `json:"message"`
}

// AssistantMessageDiscarded removes a message of a failed attempt that will
// be retried.
type AssistantMessageDiscarded struct {
	Header
	MessageID string `json:"messageId"`
	Reason    string `json:"reason"`
}

// TurnEnded records why a model response ended.
type TurnEnded struct {
	Header
	MessageID  string `json:"messageId"`
	StopReason string `json:"stopReason"`
	Usage      *Usage `json:"usage,omitempty"`
}

// MessagesRewound removes the last occurrence of AnchorMessageID and
// everything after it.
type MessagesRewound struct {
	Header
	AnchorMessageID string `json:"anchorMessageId"`
}

// MessagesCleared empties the list.
type MessagesCleared struct {
	Header
}

// RunState is whether the agent is working.
type RunState string

// Run states.
const (
	RunRunning RunState = "running"
	RunIdle    RunState = "idle"
)

// RunStateChanged says whether the agent is working.
type RunStateChanged struct {
	Header
	State RunState `json:"state"`
}

// NoticeKind is what a StreamNotice reports.
type NoticeKind string

// Notice kinds.
const (
	NoticeRetrying NoticeKind = "retrying"
	NoticeStalled  NoticeKind = "stalled"
)

// StreamNotice reports trouble with the model stream: a retry (Attempt,
// DelayMs, Cause) or a stall (IdleMs).
type StreamNotice struct {
	Header
	Kind    NoticeKind `json:"kind"`
	Attempt int        `json:"attempt,omitempty"`
	DelayMs int64      `json:"delayMs,omitempty"`
	Cause   string     `json:"cause,omitempty"`
	IdleMs  int64      `json:"idleMs,omitempty"`
}

// PermissionRequest asks whoever is attached whether a tool may run. Any
// face may answer; the first answer wins and is announced as
// PermissionResolved.
type PermissionRequest struct {
	Header
	RequestID     string `json:"requestId"`
	MessageID     string `json:"messageId"`
	BlockIndex    int    `json:"blockIndex"`
	ToolID        string `json:"toolId"`
	Name          string `json:"name"`
	Parameters    string `json:"parameters"`
	CompactParams string `json:"compactParams,omitempty"`
	// Reason says why approval is needed (for example "edits a file").
	Reason string `json:"reason,omitempty"`
	// OldText is what the call would replace, as ToolBlockUpdated.OldText.
	OldText string `json:"oldText,omitempty"`
}

// Decision answers a PermissionRequest.
type Decision string

// Permission decisions.
const (
	DecisionAllow       Decision = "allow"        // this call only
	DecisionAllowAlways Decision = "allow_always" // this tool, for the rest of the session
	DecisionDeny        Decision = "deny"
)

// PermissionResolved closes a PermissionRequest.
type PermissionResolved struct {
	Header
	RequestID string   `json:"requestId"`
	Decision  Decision `json:"decision"`
}

// QueueKind is the kind of a piece of queued work.
type QueueKind string

// Kinds of queued work.
const (
	QueueMessage QueueKind = "message" // a user message (steered into a run at its next model request)
	QueueBang    QueueKind = "bang"    // a !command
	QueueCompact QueueKind = "compact" // a compaction
)

// QueuedWork is work sent while the agent was busy, waiting its turn. A
// queued message's MessageID is the id its userMessageAdded will carry:
// it leaves the queue when it is sent.
type QueuedWork struct {
	MessageID string    `json:"messageId,omitempty"`
	Kind      QueueKind `json:"kind"`
	Text      string    `json:"text,omitempty"`
}

// QueueChanged carries the whole queue of work waiting behind the run in
// progress, oldest first, each time it changes: something was queued,
// sent (a steered message is sent at the run's next model request) or
// dropped (an abort drops the queue). The queue is a few items whatever
// the session's length, so the whole value travels.
type QueueChanged struct {
	Header
	Queued []QueuedWork `json:"queued"`
}

// TaskState is where a background task stands.
type TaskState string

// Task states.
const (
	TaskRunning TaskState = "running"
	TaskEnded   TaskState = "ended"
)

// Task is work a tool left running after its call returned (a command run
// with Bash run_in_background).
type Task struct {
	TaskID      string `json:"taskId"`
	Description string `json:"description"`
	// StartedAt is when it started, Unix ms.
	StartedAt int64 `json:"startedAt,omitempty"`
	// ToolID is the id of the tool call that started it.
	ToolID string `json:"toolId,omitempty"`
	// ShortResult is the last few lines of its output so far, bounded
	// (a whole value, as a tool block's).
	ShortResult string `json:"shortResult,omitempty"`
}

// TaskUpdated says a background task started or printed more (State
// running, with its output's last lines in ShortResult) or ended (State
// ended, with Status saying how: "exited with status 0", "killed", ...).
type TaskUpdated struct {
	Header
	Task
	State  TaskState `json:"state"`
	Status string    `json:"status,omitempty"`
}

// CompactionUpdated reports a compaction (the model summarising the
// conversation) while it runs: stage start with StartedAt (Unix ms; a
// start again, after a retry, sets the summary's length back to 0),
// streaming with Chars (how many characters the summary grew by: a delta),
// and end, whether it succeeded or not (the summary itself arrives as
// compactBlockAdded).
type CompactionUpdated struct {
	Header
	Stage     Stage `json:"stage"`
	StartedAt int64 `json:"startedAt,omitempty"`
	Chars     int   `json:"chars,omitempty"`
}

// Compaction is a compaction in progress, as the view state holds it.
type Compaction struct {
	// StartedAt is when it started, Unix ms.
	StartedAt int64 `json:"startedAt,omitempty"`
	// Chars is the summary's length so far, in characters.
	Chars int `json:"chars"`
}

func (e CompactionUpdated) Method() string          { return MethodCompactionUpdated }
func (e CompactionUpdated) Head() Header            { return e.Header }
func (e CompactionUpdated) withHead(h Header) Event { e.Header = h; return e }

func (e UserMessageAdded) Method() string          { return MethodUserMessageAdded }
func (e AssistantMessageAdded) Method() string     { return MethodAssistantMessageAdded }
func (e AssistantContentUpdated) Method() string   { return MethodAssistantContentUpdated }
func (e AssistantReasoningUpdated) Method() string { return MethodAssistantReasoningUpdated }
func (e ToolBlockUpdated) Method() string          { return MethodToolBlockUpdated }
func (e ErrorBlockAdded) Method() string           { return MethodErrorBlockAdded }
func (e CompactBlockAdded) Method() string         { return MethodCompactBlockAdded }
func (e AssistantMessageDiscarded) Method() string { return MethodAssistantMessageDiscarded }
func (e TurnEnded) Method() string                 { return MethodTurnEnded }
func (e MessagesRewound) Method() string           { return MethodMessagesRewound }
func (e MessagesCleared) Method() string           { return MethodMessagesCleared }
func (e RunStateChanged) Method() string           { return MethodRunStateChanged }
func (e StreamNotice) Method() string              { return MethodStreamNotice }
func (e PermissionRequest) Method() string         { return MethodPermissionRequest }
func (e PermissionResolved) Method() string        { return MethodPermissionResolved }
func (e QueueChanged) Method() string              { return MethodQueueChanged }
func (e TaskUpdated) Method() string               { return MethodTaskUpdated }

func (e UserMessageAdded) Head() Header          { return e.Header }
func (e AssistantMessageAdded) Head() Header     { return e.Header }
func (e AssistantContentUpdated) Head() Header   { return e.Header }
func (e AssistantReasoningUpdated) Head() Header { return e.Header }
func (e ToolBlockUpdated) Head() Header          { return e.Header }
func (e ErrorBlockAdded) Head() Header           { return e.Header }
func (e CompactBlockAdded) Head() Header         { return e.Header }
func (e AssistantMessageDiscarded) Head() Header { return e.Header }
func (e TurnEnded) Head() Header                 { return e.Header }
func (e MessagesRewound) Head() Header           { return e.Header }
func (e MessagesCleared) Head() Header           { return e.Header }
func (e RunStateChanged) Head() Header           { return e.Header }
func (e StreamNotice) Head() Header              { return e.Header }
func (e PermissionRequest) Head() Header         { return e.Header }
func (e PermissionResolved) Head() Header        { return e.Header }
func (e QueueChanged) Head() Header              { return e.Header }
func (e TaskUpdated) Head() Header               { return e.Header }

func (e UserMessageAdded) withHead(h Header) Event          { e.Header = h; return e }
func (e AssistantMessageAdded) withHead(h Header) Event     { e.Header = h; return e }
func (e AssistantContentUpdated) withHead(h Header) Event   { e.Header = h; return e }
func (e AssistantReasoningUpdated) withHead(h Header) Event { e.Header = h; return e }
func (e ToolBlockUpdated) withHead(h Header) Event          { e.Header = h; return e }
func (e ErrorBlockAdded) withHead(h Header) Event           { e.Header = h; return e }
func (e CompactBlockAdded) withHead(h Header) Event         { e.Header = h; return e }
func (e AssistantMessageDiscarded) withHead(h Header) Event { e.Header = h; return e }
func (e TurnEnded) withHead(h Header) Event                 { e.Header = h; return e }
func (e MessagesRewound) withHead(h Header) Event           { e.Header = h; return e }
func (e MessagesCleared) withHead(h Header) Event           { e.Header = h; return e }
func (e RunStateChanged) withHead(h Header) Event           { e.Header = h; return e }
func (e StreamNotice) withHead(h Header) Event              { e.Header = h; return e }
func (e PermissionRequest) withHead(h Header) Event         { e.Header = h; return e }
func (e PermissionResolved) withHead(h Header) Event        { e.Header = h; return e }
func (e QueueChanged) withHead(h Header) Event              { e.Header = h; return e }
func (e TaskUpdated) withHead(h Header) Event               { e.Header = h; return e }
