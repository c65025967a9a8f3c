package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/model"
)

type wireRequest struct {
	Model               string         `json:"model"`
	Messages            []wireMessage  `json:"messages"`
	Tools               []wireTool     `json:"tools,omitempty"`
	Stream              bool           `json:"stream,omitempty"`
	StreamOptions       *streamOptions `json:"stream_options,omitempty"`
	MaxTokens           int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
	ReasoningEffort     string         `json:"reasoning_effort,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type wireMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content"` // *string (null only beside tool calls) or []wirePart
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// wirePart is one part of a message whose content is not text alone.
type wirePart struct {
	Type     string        `json:"type"` // "text" or "image_url"
	Text     string        `json:"text,omitempty"`
	ImageURL *wireImageURL `json:"image_url,omitempty"`
}

type wireImageURL struct {
	URL string `json:"url"` // a data: URL
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string      `json:"type"`
	Function wireToolDef `json:"function"`
}

type wireToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// request builds the JSON body for req. Reasoning is not sent back (DeepSeek
// refuses reasoning_content in a request), nor are raw blocks, which only
// Anthropic understands.
func (p *Provider) request(req *model.Request, stream bool) ([]byte, error) {
	w := wireRequest{Model: req.Model, Stream: stream}
	if w.Model == "" {
		w.Model = p.cfg.Model
	}
	if stream {
		w.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	if p.official {
		w.MaxCompletionTokens = req.MaxTokens
	} else {
		w.MaxTokens = req.MaxTokens
	}
	w.ReasoningEffort = reasoningEffort(req.Effort)
	if req.System != "" {
		w.Messages = append(w.Messages, wireMessage{Role: "system", Content: &req.System})
	}
	for _, t := range req.Tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = emptySchema
		}
		w.Tools = append(w.Tools, wireTool{Type: "function", Function: wireToolDef{Name: t.Name, Description: t.Description, Parameters: schema}})
	}
	for _, m := range req.Messages {
		var text []string
		var images []wirePart
		var calls []wireToolCall
		for _, c := range m.Content {
			switch c.Type {
			case model.ContentText:
				if c.Text != "" {
					text = append(text, c.Text)
				}
			case model.ContentImage:
				images = append(images, wirePart{Type: "image_url", ImageURL: &wireImageURL{URL: "data:" + c.MediaType + ";base64," + c.Data}})
			case model.ContentToolUse:
				args := string(c.Input)
				if args == "" {
					args = "{}"
				}
				if !json.Valid([]byte(args)) {
					return nil, fmt.Errorf("openai: %w: tool use %s has invalid JSON input", model.ErrInvalidRequest, c.ID)
				}
				calls = append(calls, wireToolCall{ID: c.ID, Type: "function", Function: wireFunction{Name: c.Name, Arguments: args}})
			case model.ContentToolResult:
				// Tool results answer the assistant's calls, so they come
				// first, each as its own message.
				content := c.Text
				if c.IsError {
					content = "Error: " + content
				}
				w.Messages = append(w.Messages, wireMessage{Role: "tool", ToolCallID: c.ID, Content: &content})
			}
		}
		if len(text) == 0 && len(calls) == 0 && len(images) == 0 {
			continue
		}
		wm := wireMessage{Role: string(m.Role), ToolCalls: calls}
		if len(images) > 0 {
			// Images need the array form of content, the text first.
			var parts []wirePart
			if len(text) > 0 {
				parts = append(parts, wirePart{Type: "text", Text: strings.Join(text, "\n\n")})
			}
			wm.Content = append(parts, images...)
		} else if len(text) > 0 {
			joined := strings.Join(text, "\n\n")
			wm.Content = &joined
		} else if m.Role != model.RoleAssistant {
			empty := ""
			wm.Content = &empty
		}
		w.Messages = append(w.Messages, wm)
	}
	body, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("openai: %w: %v", model.ErrInvalidRequest, err)
	}
	return body, nil
}

// reasoningEffort is an effort level as reasoning_effort takes it: the
// levels above high that Chat Completions servers do not all know are
// asked as high.
func reasoningEffort(effort string) string {
	switch effort {
	case "xhigh", "max":
		return "high"
	}
	return effort
}
