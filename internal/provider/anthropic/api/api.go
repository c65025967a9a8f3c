// Package api holds the JSON shapes of Anthropic's Messages API that sluice
// writes: the request the provider sends, and the content blocks, stream
// events and message that print mode re-emits in Claude Code's stream-json
// lines. One set of structs, so that both sides write a block the same way
// (field order included: a program that diffs two runs sees no noise).
//
// Reading the API's answers is the provider's decoder, which scans the
// events without these structs.
package api

import "encoding/json"

// Request is a Messages API request body.
type Request struct {
	Model     string         `json:"model"`
	MaxTokens int            `json:"max_tokens"`
	System    string         `json:"system,omitempty"`
	Messages  []MessageParam `json:"messages"`
	Tools     []Tool         `json:"tools,omitempty"`
	Thinking  *Thinking      `json:"thinking,omitempty"`
	// OutputConfig carries the effort level.
	OutputConfig *OutputConfig `json:"output_config,omitempty"`
	Stream       bool          `json:"stream,omitempty"`
}

// OutputConfig shapes the answer: how much effort goes into it.
type OutputConfig struct {
	Effort string `json:"effort,omitempty"`
}

// MessageParam is one message of a request; its content holds the block
// types of this package (or a block kept raw).
type MessageParam struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

// Tool is a tool offered to the model.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Thinking enables extended thinking: "enabled" with a budget, or
// "adaptive" (the model decides, no budget).
type Thinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
}

// Content blocks.

// TextBlock is a "text" block. Citations is a JSON array, or empty.
type TextBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Citations json.RawMessage `json:"citations,omitempty"`
}

// ImageBlock is an "image" block with its bytes inline.
type ImageBlock struct {
	Type   string      `json:"type"`
	Source ImageSource `json:"source"`
}

// ImageSource is an image block's base64 source.
type ImageSource struct {
	Type      string `json:"type"` // "base64"
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// ThinkingBlock is a "thinking" block with the signature that
// authenticates it.
type ThinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

// RedactedBlock is a "redacted_thinking" block.
type RedactedBlock struct {
	Type string `json:"type"`
	Data string `json:"data"`
}

// ToolUseBlock is a "tool_use" block. Caller is the server tool that made
// the call, when one did.
type ToolUseBlock struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Input  json.RawMessage `json:"input"`
	Caller json.RawMessage `json:"caller,omitempty"`
}

// ToolResultBlock is a "tool_result" block of a user message.
type ToolResultBlock struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
	Content   string `json:"content,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
}

// TypeOnly is a block of a type this package does not know, as it starts.
type TypeOnly struct {
	Type string `json:"type"`
}

// Deltas of content_block_delta.

// TextDelta is a "text_delta".
type TextDelta struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// ThinkingDelta is a "thinking_delta".
type ThinkingDelta struct {
	Type     string `json:"type"`
	Thinking string `json:"thinking"`
}

// SignatureDelta is a "signature_delta".
type SignatureDelta struct {
	Type      string `json:"type"`
	Signature string `json:"signature"`
}

// InputJSONDelta is an "input_json_delta".
type InputJSONDelta struct {
	Type        string `json:"type"`
	PartialJSON string `json:"partial_json"`
}

// CitationsDelta is a "citations_delta".
type CitationsDelta struct {
	Type     string          `json:"type"`
	Citation json.RawMessage `json:"citation"`
}

// Usage is the usage object with every field present.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

// Message is a model response as message_start carries it.
type Message struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"`
	Role         string  `json:"role"`
	Model        string  `json:"model"`
	Content      []any   `json:"content"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        Usage   `json:"usage"`
}

// Stream events.

// MessageStartEvent is "message_start".
type MessageStartEvent struct {
	Type    string  `json:"type"`
	Message Message `json:"message"`
}

// ContentBlockStartEvent is "content_block_start".
type ContentBlockStartEvent struct {
	Type         string `json:"type"`
	Index        int    `json:"index"`
	ContentBlock any    `json:"content_block"`
}

// ContentBlockDeltaEvent is "content_block_delta".
type ContentBlockDeltaEvent struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta any    `json:"delta"`
}

// ContentBlockStopEvent is "content_block_stop".
type ContentBlockStopEvent struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

// MessageDeltaEvent is "message_delta".
type MessageDeltaEvent struct {
	Type  string       `json:"type"`
	Delta MessageDelta `json:"delta"`
	Usage Usage        `json:"usage"`
}

// MessageDelta is the delta of a message_delta.
type MessageDelta struct {
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// MessageStopEvent is "message_stop".
type MessageStopEvent struct {
	Type string `json:"type"`
}
