package anthropic

import (
	"encoding/json"
	"fmt"

	"github.com/sluicehq/sluice/internal/provider/anthropic/api"
	"github.com/sluicehq/sluice/model"
)

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// request builds the JSON body for req.
func (p *Provider) request(req *model.Request, stream bool) ([]byte, error) {
	w := api.Request{Model: req.Model, MaxTokens: req.MaxTokens, System: req.System, Stream: stream}
	if w.Model == "" {
		w.Model = p.cfg.Model
	}
	if w.MaxTokens <= 0 {
		w.MaxTokens = p.cfg.MaxTokens
	}
	if req.ThinkingBudget > 0 {
		w.Thinking = &api.Thinking{Type: "enabled", BudgetTokens: req.ThinkingBudget}
		if w.MaxTokens <= req.ThinkingBudget {
			// The budget is part of max_tokens: leave room for the answer.
			w.MaxTokens += req.ThinkingBudget
		}
	} else if req.AdaptiveThinking {
		w.Thinking = &api.Thinking{Type: "adaptive"}
	}
	if req.Effort != "" {
		w.OutputConfig = &api.OutputConfig{Effort: req.Effort}
	}
	for _, t := range req.Tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = emptySchema
		}
		w.Tools = append(w.Tools, api.Tool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	w.Messages = make([]api.MessageParam, 0, len(req.Messages))
	for _, m := range req.Messages {
		wm := api.MessageParam{Role: string(m.Role)}
		for _, c := range m.Content {
			if b := block(c); b != nil {
				wm.Content = append(wm.Content, b)
			}
		}
		if len(wm.Content) > 0 {
			w.Messages = append(w.Messages, wm)
		}
	}
	body, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("anthropic: %w: %v", model.ErrInvalidRequest, err)
	}
	return body, nil
}

// block is c as the API takes it, or nil for what it would refuse: an
// empty text block, reasoning without the signature that authenticates it
// (another provider's).
func block(c model.Content) any {
	switch c.Type {
	case model.ContentText:
		if c.Text == "" {
			return nil
		}
		return api.TextBlock{Type: "text", Text: c.Text, Citations: c.Citations}
	case model.ContentReasoning:
		if c.Signature == "" {
			return nil
		}
		return api.ThinkingBlock{Type: "thinking", Thinking: c.Text, Signature: c.Signature}
	case model.ContentImage:
		return api.ImageBlock{Type: "image", Source: api.ImageSource{Type: "base64", MediaType: c.MediaType, Data: c.Data}}
	case model.ContentRedactedReasoning:
		return api.RedactedBlock{Type: "redacted_thinking", Data: c.Data}
	case model.ContentToolUse:
		input := c.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		return api.ToolUseBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: input, Caller: c.Caller}
	case model.ContentToolResult:
		return api.ToolResultBlock{Type: "tool_result", ToolUseID: c.ID, Content: c.Text, IsError: c.IsError}
	case model.ContentRaw:
		if len(c.Raw) == 0 {
			return nil
		}
		return c.Raw
	}
	return nil
}

// wireResponse is a non-streaming answer.
type wireResponse struct {
	Type         string            `json:"type"`
	ID           string            `json:"id"`
	Model        string            `json:"model"`
	Content      []json.RawMessage `json:"content"`
	StopReason   string            `json:"stop_reason"`
	StopSequence string            `json:"stop_sequence"`
	Usage        model.Usage       `json:"usage"`
}

func (w *wireResponse) response() (*model.Response, error) {
	r := &model.Response{ID: w.ID, Model: w.Model, StopReason: w.StopReason, StopSequence: w.StopSequence, Usage: w.Usage}
	r.Usage.ContextTokens = w.Usage.InputTokens + w.Usage.CacheReadInputTokens + w.Usage.CacheCreationInputTokens
	for _, raw := range w.Content {
		c, err := contentOf(raw)
		if err != nil {
			return nil, err
		}
		r.Content = append(r.Content, c)
	}
	return r, nil
}

// contentOf reads one whole content block, as a non-streaming answer and
// a message_start that carries its content give it.
func contentOf(raw json.RawMessage) (model.Content, error) {
	var b struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		Thinking  string          `json:"thinking"`
		Signature string          `json:"signature"`
		Data      string          `json:"data"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		Citations json.RawMessage `json:"citations"`
		Caller    json.RawMessage `json:"caller"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return model.Content{}, fmt.Errorf("anthropic: %w: content block: %v", model.ErrMalformedEvent, err)
	}
	switch b.Type {
	case "text":
		c := model.Content{Type: model.ContentText, Text: b.Text}
		if len(b.Citations) > 0 && string(b.Citations) != "null" {
			c.Citations = b.Citations
		}
		return c, nil
	case "thinking":
		return model.Content{Type: model.ContentReasoning, Text: b.Thinking, Signature: b.Signature}, nil
	case "redacted_thinking":
		return model.Content{Type: model.ContentRedactedReasoning, Data: b.Data}, nil
	case "tool_use":
		return model.Content{Type: model.ContentToolUse, ID: b.ID, Name: b.Name, Input: b.Input, Caller: nonNull(b.Caller)}, nil
	}
	return model.Content{Type: model.ContentRaw, Name: b.Type, Raw: append(json.RawMessage(nil), raw...)}, nil
}

// nonNull is v, or nil for an absent or null value.
func nonNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	return append(json.RawMessage(nil), v...)
}
