package model

import "encoding/json"

// Role of a message in the model's context.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// ContentType is the kind of a content block in the model's context.
type ContentType string

const (
	ContentText              ContentType = "text"
	ContentReasoning         ContentType = "reasoning"          // Anthropic "thinking"; DeepSeek reasoning_content
	ContentRedactedReasoning ContentType = "redacted_reasoning" // Anthropic "redacted_thinking"
	ContentToolUse           ContentType = "tool_use"
	ContentToolResult        ContentType = "tool_result"
	// ContentImage is an image the user gave: MediaType and Data (base64).
	ContentImage ContentType = "image"
	// ContentRaw is a block the provider produced that sluice passes back
	// unchanged (server_tool_use, web_search_tool_result, compaction, MCP
	// blocks, kinds not known yet).
	ContentRaw ContentType = "raw"
)

// Content is one block of a message in the model's context.
type Content struct {
	Type ContentType `json:"type"`
	// Text is the text of text and reasoning blocks and of a tool result.
	Text string `json:"text,omitempty"`
	// Signature authenticates a reasoning block (Anthropic); on a text or
	// tool use block it is Gemini's thoughtSignature, which goes back on
	// the same part.
	Signature string `json:"signature,omitempty"`
	// Data is the opaque payload of a redacted reasoning block, and an
	// image's bytes in base64.
	Data string `json:"data,omitempty"`
	// MediaType is an image's type: image/png, image/jpeg, image/gif or
	// image/webp.
	MediaType string `json:"mediaType,omitempty"`
	// ID is a tool use's id; for a tool result, the id of the tool use it
	// answers.
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	// Input is a tool use's complete JSON input.
	Input json.RawMessage `json:"input,omitempty"`
	// Caller is who called a tool use that code running on the server
	// made (programmatic tool calling), as the server said; the server
	// wants it back with the call.
	Caller json.RawMessage `json:"caller,omitempty"`
	// IsError marks a failed tool result.
	IsError bool `json:"isError,omitempty"`
	// Citations are a text block's citations as the server sent them.
	Citations json.RawMessage `json:"citations,omitempty"`
	// Raw is the whole block of a ContentRaw, as the server sent it (with a
	// streamed input filled in).
	Raw json.RawMessage `json:"raw,omitempty"`
}

// Message is one message of the model's context.
type Message struct {
	Role    Role      `json:"role"`
	Content []Content `json:"content"`
}

// Tool describes a tool the model may call.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Request is one model call.
type Request struct {
	Model     string    `json:"model"`
	System    string    `json:"system,omitempty"`
	Messages  []Message `json:"messages"`
	Tools     []Tool    `json:"tools,omitempty"`
	MaxTokens int       `json:"max_tokens,omitempty"`
	// ThinkingBudget enables extended thinking with that many tokens when
	// positive (providers without it ignore it).
	ThinkingBudget int `json:"thinking_budget,omitempty"`
	// AdaptiveThinking, without a ThinkingBudget, lets the model decide
	// how much to think (Anthropic's adaptive thinking; providers without
	// it ignore it).
	AdaptiveThinking bool `json:"adaptive_thinking,omitempty"`
	// Effort is how much effort the model spends: one of Efforts, or ""
	// for the provider's default (Anthropic's output_config.effort,
	// OpenAI's reasoning_effort).
	Effort string `json:"effort,omitempty"`
}

// Efforts are the effort levels, from least to most.
var Efforts = []string{"low", "medium", "high", "xhigh", "max"}

// Response is a whole model response, as the non-streaming fallback returns
// it and as Accumulator builds it from parts.
type Response struct {
	ID           string    `json:"id"`
	Model        string    `json:"model"`
	Content      []Content `json:"content"`
	StopReason   string    `json:"stop_reason"`
	StopSequence string    `json:"stop_sequence,omitempty"`
	Usage        Usage     `json:"usage"`
}

// Usage counts tokens.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens,omitempty"`
	// ContextTokens is the size of the context (input, cache read and
	// cache creation) of the latest model request behind the response, when
	// the provider knows it: the request sluice sent, or the last one the
	// server made itself (after compacting it server-side). It differs
	// from the billed InputTokens of a response that ran server tools,
	// which add up every request the server made. 0 when unknown.
	ContextTokens int `json:"context_tokens,omitempty"`
}

// Stop reasons (Anthropic's names; other providers' are translated).
const (
	StopEndTurn      = "end_turn"
	StopToolUse      = "tool_use"
	StopMaxTokens    = "max_tokens"
	StopSequence     = "stop_sequence"
	StopPauseTurn    = "pause_turn"
	StopRefusal      = "refusal"
	StopContextLimit = "model_context_window_exceeded"
)
