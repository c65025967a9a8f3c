package agent

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/store"
	"github.com/sluicehq/sluice/tool"
)

// Approver answers a permission request without waiting for a face (print
// mode, tests).
type Approver func(ctx context.Context, req protocol.PermissionRequest) protocol.Decision

// MemoryFile is one of the project's instruction files, as read.
type MemoryFile struct {
	Path    string // absolute
	Content string
}

// Options configure a session.
type Options struct {
	// Provider is the model API. Required.
	Provider model.Provider
	// Model is the model name; empty lets the provider choose.
	Model string
	// SystemPrompt is added to the built-in system prompt.
	SystemPrompt string
	// Memory are the project's instruction files (AGENTS.md, CLAUDE.md),
	// joined to the system prompt after SystemPrompt, most general first.
	Memory []MemoryFile
	// BaseSystemPrompt, when set, replaces the built-in system prompt
	// (claude --system-prompt); SystemPrompt is still added to it.
	BaseSystemPrompt string
	// WorkDir is where tools run (default: the process's directory).
	WorkDir string
	// AllowedDirs are more directories file tools may touch.
	AllowedDirs []string
	// PermissionMode is the initial mode (default protocol.ModeDefault).
	PermissionMode protocol.PermissionMode
	// Approve, when set, answers permission requests instead of waiting
	// for AnswerPermission.
	Approve Approver
	// SessionID is the id of a session New starts (default: NewID()).
	SessionID string
	// Hooks take part in tool calls (see Hooks).
	Hooks Hooks
	// Tools replaces the built-in tools when non-nil.
	Tools []tool.Tool
	// ChildEnv is how tools' commands (Bash, !commands, and the same in
	// subagents) get their environment from this process's (see the
	// policy in the README: by default variables such as GITHUB_TOKEN,
	// ANTHROPIC_API_KEY or a DATABASE_URL with a password are removed).
	ChildEnv EnvPolicy
	// ExtraTools are added to the tools (MCP servers' tools, your own).
	ExtraTools []tool.Tool
	// Subagents, when non-nil, give the session the Agent tool (which the
	// model may also call Task): it runs a child session of one of these
	// kinds, or of the built-in general-purpose kind (GeneralPurpose; a
	// definition with its name replaces it). Pass an empty slice for the
	// general-purpose kind alone.
	Subagents []Subagent
	// MaxTurns bounds the model responses for one user message (0: 100).
	MaxTurns int
	// MaxTokens is the output limit per response (0: the provider's).
	MaxTokens int
	// ThinkingBudget enables extended thinking when positive.
	ThinkingBudget int
	// AdaptiveThinking, without a ThinkingBudget, lets the model decide
	// how much it thinks (model.Request.AdaptiveThinking).
	AdaptiveThinking bool
	// Title names a new session in session lists (Claude Code's --name);
	// "" titles it with the start of its first message. A resumed session
	// keeps the title it has.
	Title string
	// Effort is the effort level of the requests (model.Efforts; "": the
	// provider's default).
	Effort string
	// MaxContinuations bounds automatic continuations after max_tokens
	// (0: 3; negative: none).
	MaxContinuations int
	// ContextWindow is the model's context in tokens (0: the model's in
	// Catalogue, else model.DefaultContextWindow).
	ContextWindow int
	// Catalogue holds the models' context windows and list prices, as the
	// providers state them (sluice's faces set the providers' catalogue);
	// nil knows no model: windows are the default and costs 0.
	Catalogue model.Catalogue
	// AutoCompact is the share of the context window past which the
	// session compacts before the next request (0: 0.85; negative: never).
	AutoCompact float64
	// Stream configures retries, the stall watchdog and the fallback.
	Stream model.StreamOptions
	// Store persists the session when set (store.NewJSONL is the default
	// one; any store.Store works). Streamed content is appended as it
	// streams, in small synced batches, so a crash loses at most the last
	// fraction of a second.
	Store store.Store
	// Now is the clock (default time.Now).
	Now func() time.Time
	// NewID makes ids for sessions, messages and requests (default:
	// random UUIDs).
	NewID func() string
	// Logger receives diagnostics (default: discarded).
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	if o.MaxTurns <= 0 {
		o.MaxTurns = 100
	}
	if o.MaxContinuations == 0 {
		o.MaxContinuations = 3
	}
	if o.ContextWindow <= 0 {
		o.ContextWindow = o.Catalogue.ContextWindow(o.Model)
	}
	if o.AutoCompact == 0 {
		o.AutoCompact = 0.85
	}
	if o.PermissionMode == "" {
		o.PermissionMode = protocol.ModeDefault
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewID == nil {
		o.NewID = uuid.NewString
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}
