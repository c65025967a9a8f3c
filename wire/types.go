package wire

import "github.com/sluicehq/sluice/protocol"

// ProtocolVersion is the version of the host protocol this package speaks.
// Additions (a new method, a new optional member, a new event) keep the
// version; a change that an existing host could misread bumps it.
const ProtocolVersion = 1

// Method names of the requests.
const (
	MethodInitialize         = "initialize"
	MethodSendMessage        = "sendMessage"
	MethodAbort              = "abort"
	MethodGetMessages        = "getMessages"
	MethodRewind             = "rewind"
	MethodClear              = "clear"
	MethodCompact            = "compact"
	MethodListSessions       = "listSessions"
	MethodRestoreSession     = "restoreSession"
	MethodBang               = "bang"
	MethodSetModel           = "setModel"
	MethodSetPermissionMode  = "setPermissionMode"
	MethodPermissionResponse = "permissionResponse"
	MethodDetach             = "detach"
	MethodAsk                = "ask"
)

// Methods lists the request methods, as capabilities announce them.
var Methods = []string{
	MethodInitialize, MethodSendMessage, MethodAbort, MethodGetMessages, MethodRewind,
	MethodClear, MethodCompact, MethodListSessions, MethodRestoreSession, MethodBang,
	MethodSetModel, MethodSetPermissionMode, MethodPermissionResponse, MethodDetach,
	MethodAsk,
}

// Events lists the notification methods (package protocol's events).
var Events = []string{
	protocol.MethodUserMessageAdded, protocol.MethodAssistantMessageAdded,
	protocol.MethodAssistantContentUpdated, protocol.MethodAssistantReasoningUpdated,
	protocol.MethodToolBlockUpdated, protocol.MethodErrorBlockAdded, protocol.MethodCompactBlockAdded,
	protocol.MethodAssistantMessageDiscarded, protocol.MethodTurnEnded, protocol.MethodMessagesRewound,
	protocol.MethodMessagesCleared, protocol.MethodRunStateChanged, protocol.MethodStreamNotice,
	protocol.MethodPermissionRequest, protocol.MethodPermissionResolved,
	protocol.MethodQueueChanged, protocol.MethodTaskUpdated, protocol.MethodCompactionUpdated,
}

// InitializeParams are initialize's params. Every member is optional.
// Without SessionID a new session starts; with it the connection attaches
// to that session (restoring it from the session store if it is not
// running).
type InitializeParams struct {
	// ProtocolVersion is the version the host speaks (informational: the
	// server answers with its own and the host decides).
	ProtocolVersion int `json:"protocolVersion,omitempty"`
	// ClientInfo names the host, for the server's log.
	ClientInfo *Info `json:"clientInfo,omitempty"`
	// WorkingDirectory is where a new session's tools run, or the project
	// whose stored session SessionID is (default: the server's).
	WorkingDirectory string `json:"workingDirectory,omitempty"`
	// PermissionMode and Model set a new session's, or change an attached
	// session's.
	PermissionMode protocol.PermissionMode `json:"permissionMode,omitempty"`
	Model          string                  `json:"model,omitempty"`
	// SessionID attaches to a running session or restores a stored one.
	SessionID string `json:"sessionId,omitempty"`
	// LastSeq asks for exactly the events after it instead of a snapshot,
	// when the session is the one the host saw (Epoch, if given, matches)
	// and the server still has them. Otherwise the result carries a
	// snapshot.
	LastSeq *int64 `json:"lastSeq,omitempty"`
	// Epoch is the epoch of the initialize result LastSeq belongs to.
	Epoch string `json:"epoch,omitempty"`
}

// Info names a program.
type Info struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// InitializeResult is the result of initialize and restoreSession.
type InitializeResult struct {
	ProtocolVersion int          `json:"protocolVersion"`
	ServerInfo      Info         `json:"serverInfo"`
	Capabilities    Capabilities `json:"capabilities"`

	SessionID string `json:"sessionId"`
	// Epoch identifies this run of the session: seq numbers are only
	// comparable within one epoch (a session restored by a new server
	// process counts its events from 0 again).
	Epoch            string                  `json:"epoch"`
	WorkingDirectory string                  `json:"workingDirectory"`
	Model            string                  `json:"model,omitempty"`
	PermissionMode   protocol.PermissionMode `json:"permissionMode"`
	Tools            []string                `json:"tools"`
	// Busy is the run state at Seq: Snapshot.Running with a snapshot.
	Busy bool `json:"busy"`
	// Owner is the node that runs the session (its --node-id) when the
	// server is a node of a cluster; absent otherwise.
	Owner string `json:"owner,omitempty"`

	// Snapshot is the session's state: replace the host's list with it.
	// It is absent when the server resumed from the host's LastSeq.
	Snapshot *protocol.Snapshot `json:"snapshot,omitempty"`
	// PendingPermissions repeats Snapshot.PendingPermissions for hosts
	// that read it here: the permissionRequest events up to the snapshot
	// that are not resolved yet; later ones arrive as notifications. Only
	// with a snapshot.
	PendingPermissions []protocol.PermissionRequest `json:"pendingPermissions,omitempty"`
	// Seq is the seq after which the notifications for this session start
	// (the snapshot's seq, or LastSeq when resumed).
	Seq int64 `json:"seq"`
	// Resumed is true when the notifications continue from LastSeq.
	Resumed bool `json:"resumed"`
}

// Capabilities says what the server offers.
type Capabilities struct {
	Methods []string `json:"methods"`
	Events  []string `json:"events"`
	// MergedEvents: notifications may carry firstSeq (adjacent deltas of a
	// block merged for a slow reader).
	MergedEvents bool `json:"mergedEvents"`
	// Resume: initialize honours lastSeq while the events are buffered.
	Resume bool `json:"resume"`
	// RewindReceipts: rewind with a requestId answers with a receipt only.
	RewindReceipts bool `json:"rewindReceipts"`
	// MaxMessageBytes is the largest request the server reads (0: no
	// limit of its own).
	MaxMessageBytes int `json:"maxMessageBytes,omitempty"`
}

// SessionParams name a session: the params of getMessages, clear, compact
// and detach. SessionID may be omitted when the connection is attached to
// exactly one session; the same holds for every request below.
type SessionParams struct {
	SessionID string `json:"sessionId,omitempty"`
}

// SendMessageParams are sendMessage's params.
type SendMessageParams struct {
	SessionID string `json:"sessionId,omitempty"`
	Text      string `json:"text"`
	// Force aborts the work in progress (and drops queued work) first;
	// otherwise the message is queued (queueChanged) and joins the run in
	// progress at its next model request (steering), or runs after it.
	Force bool `json:"force,omitempty"`
}

// SendMessageResult is sendMessage's result: the id of the user message
// (published as userMessageAdded when its turn starts).
type SendMessageResult struct {
	MessageID string `json:"messageId"`
}

// AbortParams are abort's params.
type AbortParams struct {
	SessionID string `json:"sessionId,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// RewindParams are rewind's params.
type RewindParams struct {
	SessionID string `json:"sessionId,omitempty"`
	// MessageID is the user message to rewind to: its last occurrence and
	// everything after it are removed.
	MessageID string `json:"messageId"`
	// RequestID makes the answer a receipt. Without it the answer carries
	// a snapshot (older hosts).
	RequestID string `json:"requestId,omitempty"`
}

// RewindResult is rewind's result. With a requestId it is a receipt
// (RequestID, OK, Error): the list is cut by the messagesRewound event,
// which every attached connection receives, the requester's before this
// answer. Without a
// requestId, Snapshot carries the whole list after the rewind. OK false
// means nothing was published and nothing is to be cut.
type RewindResult struct {
	RequestID string             `json:"requestId,omitempty"`
	OK        bool               `json:"ok"`
	Error     string             `json:"error,omitempty"`
	Snapshot  *protocol.Snapshot `json:"snapshot,omitempty"`
}

// BangParams are bang's params: a shell command run as the user.
type BangParams struct {
	SessionID string `json:"sessionId,omitempty"`
	Command   string `json:"command"`
}

// BangResult is bang's result, sent when the command has ended.
type BangResult struct {
	MessageID string `json:"messageId"`
}

// AskParams are ask's params: a side question (/btw) answered from the
// session's context without entering it.
type AskParams struct {
	SessionID string `json:"sessionId,omitempty"`
	Question  string `json:"question"`
}

// AskResult is ask's result, sent when the answer is complete. Nothing of
// the exchange is published, stored or kept for the session's next model
// request.
type AskResult struct {
	Answer string `json:"answer"`
}

// SetModelParams are setModel's params.
type SetModelParams struct {
	SessionID string `json:"sessionId,omitempty"`
	Model     string `json:"model"`
}

// SetPermissionModeParams are setPermissionMode's params.
type SetPermissionModeParams struct {
	SessionID      string                  `json:"sessionId,omitempty"`
	PermissionMode protocol.PermissionMode `json:"permissionMode"`
}

// PermissionResponseParams answer a permissionRequest notification.
type PermissionResponseParams struct {
	SessionID string            `json:"sessionId,omitempty"`
	RequestID string            `json:"requestId"`
	Decision  protocol.Decision `json:"decision"`
}

// ListSessionsParams are listSessions' params.
type ListSessionsParams struct {
	// WorkingDirectory is the project to list (default: the server's).
	WorkingDirectory string `json:"workingDirectory,omitempty"`
}

// ListSessionsResult is listSessions' result.
type ListSessionsResult struct {
	Sessions []SessionInfo `json:"sessions"`
}

// SessionInfo describes a stored or running session. Sessions without a
// message are not listed.
type SessionInfo struct {
	ID string `json:"id"`
	// Title is the session's first prompt (its first 80 characters), or
	// the title the session was given.
	Title string `json:"title"`
	// FirstLine is the title's first line that is not blank, trimmed: the
	// label of a one-line list.
	FirstLine        string `json:"firstLine,omitempty"`
	WorkingDirectory string `json:"workingDirectory"`
	Model            string `json:"model,omitempty"`
	// Modified is the time of the session file's last write, or of a
	// running session's last message when it is not stored (Unix ms).
	Modified int64 `json:"modified"`
	Size     int64 `json:"size"`
	// Live is true when the session is running in this server.
	Live bool `json:"live"`
	// Owner is the cluster node that runs the session, when the server is
	// a node of a cluster and a node holds the session's lease.
	Owner string `json:"owner,omitempty"`
}

// RestoreSessionParams are restoreSession's params.
type RestoreSessionParams struct {
	SessionID        string `json:"sessionId"`
	WorkingDirectory string `json:"workingDirectory,omitempty"`
}

// Empty is the result of requests that return nothing.
type Empty struct{}
