// Package streamjson is Claude Code's stream-json, in one place: the lines
// that `claude -p --output-format stream-json` writes and sluice's print
// mode copies (lines.go, control.go), the decoder that reads a run in that
// shape back into session events (the chat relay's claude-code backend,
// decode.go), and the checks that compare a run's lines with Claude Code's
// recordings (shape.go).
//
// The lines are structs so that every line starts with its "type" and
// keeps its fields in one order (Claude Code's where it has the field),
// whatever reads it: a program that looks at the start of a line, a diff
// of two runs.
package streamjson

import (
	"encoding/json"
	"time"

	"github.com/sluicehq/sluice/internal/provider/anthropic/api"
	"github.com/sluicehq/sluice/protocol"
)

// InitLine is system/init, the first line.
type InitLine struct {
	Type           string      `json:"type"`
	Subtype        string      `json:"subtype"`
	CWD            string      `json:"cwd"`
	SessionID      string      `json:"session_id"`
	Tools          []string    `json:"tools"`
	MCPServers     []MCPServer `json:"mcp_servers"`
	Model          string      `json:"model"`
	PermissionMode string      `json:"permissionMode"`
	SlashCommands  []string    `json:"slash_commands"`
	APIKeySource   string      `json:"apiKeySource"`
	SluiceVersion  string      `json:"sluice_version"`
	OutputStyle    string      `json:"output_style"`
	Agents         []string    `json:"agents"`
	Skills         []string    `json:"skills"`
	Plugins        []any       `json:"plugins"`
	UUID           string      `json:"uuid"`
	AdditionalDirs []string    `json:"additional_directories"`
	// The rest are keys of Claude Code's init that have a meaning for
	// sluice (see sdktest/shapes.test.mjs for those left out, and why).
	//
	// ClaudeCodeVersion is the Claude Code release whose headless protocol
	// sluice speaks (the SDK names it in its messages).
	ClaudeCodeVersion string `json:"claude_code_version"`
	// Capabilities are the protocol features the host may detect: those of
	// Claude Code's list that sluice has.
	Capabilities            []string `json:"capabilities"`
	OriginalCWD             string   `json:"original_cwd"`
	AnalyticsDisabled       bool     `json:"analytics_disabled"`        // sluice sends none
	ProductFeedbackDisabled bool     `json:"product_feedback_disabled"` // nor asks for any
	FastModeState           string   `json:"fast_mode_state"`           // sluice has no fast mode: "off"
	TerminalSlashCommands   []string `json:"terminal_slash_commands"`   // none
	ViewMode                string   `json:"view_mode"`
	UltrathinkAvailable     bool     `json:"ultrathink_available"` // no ultrathink keyword
	UltrathinkTypedRaises   bool     `json:"ultrathink_typed_raises"`
	PerTurnEffortActive     bool     `json:"per_turn_effort_active"` // an effort level is sent
	Betas                   []string `json:"betas,omitempty"`
	Effort                  string   `json:"effort,omitempty"`
}

// ClaudeCodeVersion is the Claude Code release whose headless protocol
// (stream-json lines, control requests) sluice's print mode speaks.
const ClaudeCodeVersion = "2.1.328"

// Capabilities are the entries of Claude Code's capabilities list that
// sluice's print mode honours: tool manifests of the host's in-process
// MCP servers in initialize (sdkMcpServerManifests).
var Capabilities = []string{"sdk_mcp_manifests"}

// MCPServer is an MCP server as system/init lists it.
type MCPServer struct {
	Name string `json:"name"`
	// Status is "connected" or "failed", as Claude Code reports it.
	Status string `json:"status"`
	// Source is where the server came from, in Claude Code's words:
	// SourceDynamic or SourceSDK.
	Source string `json:"source"`
}

// MCP servers' sources, as Claude Code 2.1.328 names them in system/init
// and mcp_status.
const (
	// SourceDynamic: --mcp-config, or the host's initialize.
	SourceDynamic = "dynamic"
	// SourceSDK: a server in the host's process (type sdk).
	SourceSDK = "sdk"
)

// StreamEventLine wraps one model stream event in Anthropic's shape.
type StreamEventLine struct {
	Type            string  `json:"type"`
	Event           any     `json:"event"`
	SessionID       string  `json:"session_id"`
	ParentToolUseID *string `json:"parent_tool_use_id"`
	UUID            string  `json:"uuid"`
	APIMessageID    string  `json:"api_message_id"`
}

// AssistantLine carries one finished content block of a model response.
type AssistantLine struct {
	Type            string           `json:"type"`
	Message         AssistantMessage `json:"message"`
	ParentToolUseID *string          `json:"parent_tool_use_id"`
	SessionID       string           `json:"session_id"`
	UUID            string           `json:"uuid"`
	Timestamp       string           `json:"timestamp"`
	SubagentFields
}

// AbortedLine is the assistant line of a response cut by an interrupt:
// what it had streamed.
type AbortedLine struct {
	AssistantLine
	Aborted bool `json:"aborted"`
}

// SubagentFields name the subagent whose line it is, as Claude Code's
// lines of a subagent do (absent on the session's own lines).
type SubagentFields struct {
	AgentID         string `json:"agent_id,omitempty"`
	SubagentType    string `json:"subagent_type,omitempty"`
	TaskDescription string `json:"task_description,omitempty"`
}

// UserLine carries one tool result.
type UserLine struct {
	Type            string      `json:"type"`
	Message         UserMessage `json:"message"`
	ParentToolUseID *string     `json:"parent_tool_use_id"`
	SessionID       string      `json:"session_id"`
	UUID            string      `json:"uuid"`
	Timestamp       string      `json:"timestamp"`
	// ToolUseResult is the result as the SDK's user sees it: the output,
	// or "Error: " and the cause; for a Bash call, a BashResult; for an
	// Agent call, a SubagentResult.
	ToolUseResult any `json:"tool_use_result"`
	// ToolResultMeta says who decided that the call could run, or not.
	ToolResultMeta []ToolResultMeta `json:"tool_result_meta"`
	SubagentFields
}

// ToolResultMeta is one tool result's permission decision, in Claude
// Code's words: decision accept or reject; source config (the mode or a
// rule), hook, user_temporary (the host allowed it once), user_reject.
type ToolResultMeta struct {
	ID                 string              `json:"id"`
	NonExecutionKind   string              `json:"non_execution_kind,omitempty"`
	PermissionDecision *PermissionDecision `json:"permission_decision,omitempty"`
}

type PermissionDecision struct {
	Decision   string `json:"decision"`
	Source     string `json:"source"`
	ReasonType string `json:"reason_type,omitempty"`
}

// BashResult is a Bash call's tool_use_result, in Claude Code's shape
// (testdata/claude-code/tool_use_results.json).
type BashResult struct {
	Stdout           string `json:"stdout"`
	Stderr           string `json:"stderr"`
	Interrupted      bool   `json:"interrupted"`
	IsImage          bool   `json:"isImage"`
	NoOutputExpected bool   `json:"noOutputExpected"`
}

// ReadResult is a Read call's tool_use_result, in Claude Code's shape
// (testdata/claude-code/tool_use_results.json).
type ReadResult struct {
	Type string   `json:"type"` // "text"
	File ReadFile `json:"file"`
}

type ReadFile struct {
	FilePath   string `json:"filePath"`
	Content    string `json:"content"`
	NumLines   int    `json:"numLines"`
	StartLine  int    `json:"startLine"`
	TotalLines int    `json:"totalLines"`
}

// WriteResult is a Write call's tool_use_result, in Claude Code's shape.
type WriteResult struct {
	Type            string          `json:"type"` // "create" or "update"
	FilePath        string          `json:"filePath"`
	Content         string          `json:"content"`
	StructuredPatch []protocol.Hunk `json:"structuredPatch"`
	OriginalFile    *string         `json:"originalFile"` // null for a new file
	UserModified    bool            `json:"userModified"`
}

// EditResult is an Edit call's tool_use_result, in Claude Code's shape.
type EditResult struct {
	FilePath        string          `json:"filePath"`
	OldString       string          `json:"oldString"`
	NewString       string          `json:"newString"`
	OriginalFile    string          `json:"originalFile"`
	StructuredPatch []protocol.Hunk `json:"structuredPatch"`
	UserModified    bool            `json:"userModified"`
	ReplaceAll      bool            `json:"replaceAll"`
}

// SubagentResult is an Agent call's tool_use_result, in Claude Code's
// shape: what the subagent answered and used.
type SubagentResult struct {
	Status            string      `json:"status"` // "completed" or "failed"
	Prompt            string      `json:"prompt"`
	AgentType         string      `json:"agentType"`
	Content           []TextBlock `json:"content"`
	TotalDurationMs   int64       `json:"totalDurationMs"`
	TotalTokens       int         `json:"totalTokens"`
	TotalToolUseCount int         `json:"totalToolUseCount"`
	Usage             ResultUsage `json:"usage"`
}

type TextBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// TaskStartedLine says a subagent started (Claude Code's system/task_started;
// sluice's task id is the Agent call's id).
type TaskStartedLine struct {
	Type           string `json:"type"`
	Subtype        string `json:"subtype"`
	TaskID         string `json:"task_id"`
	ToolUseID      string `json:"tool_use_id"`
	Description    string `json:"description"`
	SubagentType   string `json:"subagent_type"`
	IsBackgrounded bool   `json:"is_backgrounded"`
	SpawnDepth     int    `json:"spawn_depth"`
	TaskType       string `json:"task_type"`
	Prompt         string `json:"prompt"`
	UUID           string `json:"uuid"`
	SessionID      string `json:"session_id"`
}

// TaskNotificationLine says a subagent ended (system/task_notification).
type TaskNotificationLine struct {
	Type      string    `json:"type"`
	Subtype   string    `json:"subtype"`
	TaskID    string    `json:"task_id"`
	ToolUseID string    `json:"tool_use_id"`
	Status    string    `json:"status"`
	Summary   string    `json:"summary"`
	Usage     TaskUsage `json:"usage"`
	UUID      string    `json:"uuid"`
	SessionID string    `json:"session_id"`
}

type TaskUsage struct {
	TotalTokens int   `json:"total_tokens"`
	ToolUses    int   `json:"tool_uses"`
	DurationMs  int64 `json:"duration_ms"`
}

// PromptLine is the prompt a subagent starts with, as Claude Code writes
// it: a user line of the subagent (parent_tool_use_id set).
type PromptLine struct {
	Type            string        `json:"type"`
	Message         PromptMessage `json:"message"`
	ParentToolUseID *string       `json:"parent_tool_use_id"`
	SessionID       string        `json:"session_id"`
	UUID            string        `json:"uuid"`
	Timestamp       string        `json:"timestamp"`
	SubagentFields
}

type PromptMessage struct {
	Role    string      `json:"role"`
	Content []TextBlock `json:"content"`
}

type UserMessage struct {
	Role    string       `json:"role"`
	Content []ToolResult `json:"content"`
}

type ToolResult struct {
	ToolUseID string `json:"tool_use_id"`
	Type      string `json:"type"`
	Content   string `json:"content"`
	IsError   bool   `json:"is_error"`
}

// SubagentStats counts a run's subagents as Claude Code's result does
// (the counts sluice keeps).
type SubagentStats struct {
	Spawned   int            `json:"spawned"`
	Completed int            `json:"completed"`
	Failed    int            `json:"failed"`
	ByType    map[string]int `json:"by_type"`
}

// APIRetryLine comes before a retried attempt.
type APIRetryLine struct {
	Type         string `json:"type"`
	Subtype      string `json:"subtype"`
	Attempt      int    `json:"attempt"`
	MaxRetries   int    `json:"max_retries"`
	RetryDelayMs int64  `json:"retry_delay_ms"`
	ErrorStatus  *int   `json:"error_status"`
	// Error is the kind of failure as Claude Code names it
	// ("overloaded", "rate_limit", "server_error", ...), ErrorMessage the
	// whole cause.
	Error        string `json:"error"`
	ErrorMessage string `json:"error_message"`
	SessionID    string `json:"session_id"`
	UUID         string `json:"uuid"`
}

// ModelFallbackLine says that the run switched to a fallback model
// (--fallback-model) because its model was unavailable; Trigger names the
// failure as api_retry's error does.
type ModelFallbackLine struct {
	Type          string `json:"type"`
	Subtype       string `json:"subtype"`
	UUID          string `json:"uuid"`
	Trigger       string `json:"trigger"`
	OriginalModel string `json:"original_model"`
	FallbackModel string `json:"fallback_model"`
	Content       string `json:"content"`
	SessionID     string `json:"session_id"`
}

// ResultLine is the last line of a run (the whole output with --output-format
// json).
type ResultLine struct {
	Type          string `json:"type"`
	Subtype       string `json:"subtype"`
	IsError       bool   `json:"is_error"`
	DurationMs    int64  `json:"duration_ms"`
	DurationAPIMs int64  `json:"duration_api_ms"`
	NumTurns      int    `json:"num_turns"`
	// Result is the answer, or an API failure's text; absent when the run
	// stopped on one of its own limits or was aborted (an error_*
	// subtype), as in Claude Code.
	Result            *string               `json:"result,omitempty"`
	StopReason        *string               `json:"stop_reason"`
	ContinuedAfter    string                `json:"continued_after,omitempty"` // sluice's: a cut answer was continued
	SessionID         string                `json:"session_id"`
	TotalCostUSD      float64               `json:"total_cost_usd"`
	Usage             ResultUsage           `json:"usage"`
	ModelUsage        map[string]ModelUsage `json:"modelUsage"`
	PermissionDenials []Denial              `json:"permission_denials"`
	SubagentStats     *SubagentStats        `json:"subagent_stats,omitempty"`
	APIErrorStatus    *int                  `json:"api_error_status"`
	APIErrorType      string                `json:"api_error_type,omitempty"`
	Errors            []string              `json:"errors,omitempty"`
	// TerminalReason says why the run ended, in Claude Code's words
	// (completed, max_turns, aborted_streaming, api_error, model_error).
	TerminalReason string `json:"terminal_reason"`
	// StructuredOutput is the structured answer (--json-schema).
	StructuredOutput json.RawMessage `json:"structured_output,omitempty"`
	// StoppedTasks are sluice's: background commands the run started that
	// were still running when it ended, and were stopped.
	StoppedTasks []string `json:"stopped_background_tasks,omitempty"`
	// FastModeState is "off": sluice has no fast mode.
	FastModeState string `json:"fast_mode_state"`
	// ResultIndex counts the result lines before this one in the process.
	ResultIndex int    `json:"result_index"`
	UUID        string `json:"uuid"`
}

type ModelUsage struct {
	InputTokens              int     `json:"inputTokens"`
	OutputTokens             int     `json:"outputTokens"`
	CacheReadInputTokens     int     `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int     `json:"cacheCreationInputTokens"`
	CostUSD                  float64 `json:"costUSD"`
}

// Denial is a tool call refused by permissions; its input is the tool's
// JSON input, as an object.
type Denial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
}

// ResultUsage is the result's usage with the fields the Agent SDK's types
// declare beside Anthropic's four counts.
type ResultUsage struct {
	api.Usage
	ServerToolUse ServerToolUse `json:"server_tool_use"`
	ServiceTier   string        `json:"service_tier"`
	CacheCreation CacheCreation `json:"cache_creation"`
}

type ServerToolUse struct {
	WebSearchRequests int `json:"web_search_requests"`
	WebFetchRequests  int `json:"web_fetch_requests"`
}

type CacheCreation struct {
	Ephemeral1hInputTokens int `json:"ephemeral_1h_input_tokens"`
	Ephemeral5mInputTokens int `json:"ephemeral_5m_input_tokens"`
}

// AssistantMessage is a model response as Claude Code's assistant lines
// carry it.
type AssistantMessage struct {
	api.Message
	ContextManagement *struct{} `json:"context_management"`
}

// Timestamp formats t as Claude Code's lines do.
func Timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// APIErrorLine is the assistant line of a run that failed on the API.
type APIErrorLine struct {
	Type            string           `json:"type"`
	Message         AssistantMessage `json:"message"`
	ParentToolUseID *string          `json:"parent_tool_use_id"`
	SessionID       string           `json:"session_id"`
	UUID            string           `json:"uuid"`
	Timestamp       string           `json:"timestamp"`
	// Error is the kind of failure, in the Agent SDK's words
	// (SDKAssistantMessageError).
	Error             string `json:"error"`
	IsAPIErrorMessage bool   `json:"is_api_error_message"`
	APIErrorStatus    *int   `json:"api_error_status,omitempty"`
	APIErrorType      string `json:"api_error_type,omitempty"`
}

// SyntheticModel is the model Claude Code names on a message no model wrote.
const SyntheticModel = "<synthetic>"

// ControlRequestLine is a control_request, either way.
type ControlRequestLine struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	Request   any    `json:"request"`
}

// ControlResponseLine answers a control_request, either way.
type ControlResponseLine struct {
	Type     string          `json:"type"`
	Response ControlResponse `json:"response"`
}

type ControlResponse struct {
	Subtype   string          `json:"subtype"` // success or error
	RequestID json.RawMessage `json:"request_id"`
	Response  any             `json:"response,omitempty"`
	Error     string          `json:"error,omitempty"`
}

// HookStartedLine and HookResponseLine are a hook command's start and end,
// as Claude Code writes them with --include-hook-events.
type HookStartedLine struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	HookID    string `json:"hook_id"`
	HookName  string `json:"hook_name"`
	HookEvent string `json:"hook_event"`
	UUID      string `json:"uuid"`
	SessionID string `json:"session_id"`
}

type HookResponseLine struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	HookID    string `json:"hook_id"`
	HookName  string `json:"hook_name"`
	HookEvent string `json:"hook_event"`
	// Output is stderr then stdout, as Claude Code joins them.
	Output    string `json:"output"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	ExitCode  int    `json:"exit_code"`
	Outcome   string `json:"outcome"`
	UUID      string `json:"uuid"`
	SessionID string `json:"session_id"`
}

type SessionStateLine struct {
	Type        string `json:"type"`
	Subtype     string `json:"subtype"`
	State       string `json:"state"`
	SDKHostOnly bool   `json:"sdk_host_only,omitempty"`
	UUID        string `json:"uuid"`
	SessionID   string `json:"session_id"`
}

type BackgroundTasksLine struct {
	Type      string           `json:"type"`
	Subtype   string           `json:"subtype"`
	Tasks     []BackgroundTask `json:"tasks"`
	UUID      string           `json:"uuid"`
	SessionID string           `json:"session_id"`
}

type BackgroundTask struct {
	TaskID      string `json:"task_id"`
	TaskType    string `json:"task_type"`
	Description string `json:"description"`
}

type BashTaskStartedLine struct {
	Type           string `json:"type"`
	Subtype        string `json:"subtype"`
	TaskID         string `json:"task_id"`
	ToolUseID      string `json:"tool_use_id"`
	Description    string `json:"description"`
	IsBackgrounded bool   `json:"is_backgrounded"`
	TaskType       string `json:"task_type"`
	UUID           string `json:"uuid"`
	SessionID      string `json:"session_id"`
}

type TaskUpdatedLine struct {
	Type      string    `json:"type"`
	Subtype   string    `json:"subtype"`
	TaskID    string    `json:"task_id"`
	Patch     TaskPatch `json:"patch"`
	UUID      string    `json:"uuid"`
	SessionID string    `json:"session_id"`
}

type TaskPatch struct {
	Status  string `json:"status"`
	EndTime int64  `json:"end_time"`
}

type BashTaskNotificationLine struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	TaskID    string `json:"task_id"`
	ToolUseID string `json:"tool_use_id"`
	Status    string `json:"status"`
	// OutputFile is "": sluice keeps a command's output for BashOutput,
	// in no file.
	OutputFile string `json:"output_file"`
	Summary    string `json:"summary"`
	UUID       string `json:"uuid"`
	SessionID  string `json:"session_id"`
}
