package responses

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/model"
)

type wireRequest struct {
	Model           string         `json:"model"`
	Instructions    string         `json:"instructions,omitempty"`
	Input           []any          `json:"input"`
	Tools           []wireTool     `json:"tools,omitempty"`
	ToolChoice      string         `json:"tool_choice,omitempty"`
	Reasoning       *wireReasoning `json:"reasoning,omitempty"`
	MaxOutputTokens int            `json:"max_output_tokens,omitempty"`
	// Store is always sent, as false: nothing is kept on the server, the
	// whole context goes with each request.
	Store   bool     `json:"store"`
	Stream  bool     `json:"stream"`
	Include []string `json:"include,omitempty"`
}

type wireReasoning struct {
	Effort  string `json:"effort,omitempty"`
	Summary string `json:"summary,omitempty"`
}

type wireTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Input items, in the shapes Codex CLI sends with store false: no item
// ids, which would name items the server did not keep.
type (
	wireMessage struct {
		Type    string     `json:"type"` // "message"
		Role    string     `json:"role"`
		Content []wirePart `json:"content"`
	}
	wirePart struct {
		Type     string `json:"type"` // input_text, output_text, input_image
		Text     string `json:"text,omitempty"`
		ImageURL string `json:"image_url,omitempty"`
	}
	wireReasoningItem struct {
		Type             string        `json:"type"` // "reasoning"
		Summary          []wireSummary `json:"summary"`
		EncryptedContent string        `json:"encrypted_content"`
	}
	wireSummary struct {
		Type string `json:"type"` // "summary_text"
		Text string `json:"text"`
	}
	wireCall struct {
		Type      string `json:"type"` // "function_call"
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	wireCallOutput struct {
		Type   string `json:"type"` // "function_call_output"
		CallID string `json:"call_id"`
		Output string `json:"output"`
	}
)

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// reasoningModel reports whether a model reasons, and so takes the
// reasoning parameter and can return encrypted reasoning: other models
// (gpt-4.1, gpt-4o) refuse both.
func reasoningModel(name string) bool {
	name = strings.ToLower(name[strings.LastIndex(name, "/")+1:])
	for _, p := range []string{"gpt-5", "o1", "o3", "o4", "codex", "gpt-oss"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// request builds the JSON body for req. Reasoning goes back as reasoning
// items only with its encrypted content (the signature): without it the
// server, which kept nothing, could not use it. Raw blocks (built-in tool
// calls) are not sent back: their outcome is in the text that followed,
// and with store false the server refuses references to its items.
func (p *Provider) request(req *model.Request, stream bool) ([]byte, error) {
	w := wireRequest{Model: req.Model, Instructions: req.System, Stream: stream, MaxOutputTokens: req.MaxTokens, Input: []any{}}
	if w.Model == "" {
		w.Model = p.cfg.Model
	}
	if reasoningModel(w.Model) || req.Effort != "" {
		w.Reasoning = &wireReasoning{Effort: effort(req.Effort), Summary: "auto"}
		w.Include = []string{"reasoning.encrypted_content"}
	}
	for _, t := range req.Tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = emptySchema
		}
		w.Tools = append(w.Tools, wireTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: schema})
	}
	if len(w.Tools) > 0 {
		w.ToolChoice = "auto"
	}
	for _, m := range req.Messages {
		var parts []wirePart
		flush := func() {
			if len(parts) > 0 {
				w.Input = append(w.Input, wireMessage{Type: "message", Role: string(m.Role), Content: parts})
				parts = nil
			}
		}
		textType := "input_text"
		if m.Role == model.RoleAssistant {
			textType = "output_text"
		}
		for _, c := range m.Content {
			switch c.Type {
			case model.ContentText:
				if c.Text != "" {
					parts = append(parts, wirePart{Type: textType, Text: c.Text})
				}
			case model.ContentImage:
				parts = append(parts, wirePart{Type: "input_image", ImageURL: "data:" + c.MediaType + ";base64," + c.Data})
			case model.ContentReasoning:
				if c.Signature == "" || m.Role != model.RoleAssistant {
					continue
				}
				flush()
				r := wireReasoningItem{Type: "reasoning", Summary: []wireSummary{}, EncryptedContent: c.Signature}
				if c.Text != "" {
					r.Summary = append(r.Summary, wireSummary{Type: "summary_text", Text: c.Text})
				}
				w.Input = append(w.Input, r)
			case model.ContentToolUse:
				args := string(c.Input)
				if args == "" {
					args = "{}"
				}
				if !json.Valid([]byte(args)) {
					return nil, fmt.Errorf("%s: %w: tool use %s has invalid JSON input", Name, model.ErrInvalidRequest, c.ID)
				}
				flush()
				w.Input = append(w.Input, wireCall{Type: "function_call", CallID: c.ID, Name: c.Name, Arguments: args})
			case model.ContentToolResult:
				flush()
				out := c.Text
				if c.IsError {
					out = "Error: " + out
				}
				w.Input = append(w.Input, wireCallOutput{Type: "function_call_output", CallID: c.ID, Output: out})
			}
		}
		flush()
	}
	body, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", Name, model.ErrInvalidRequest, err)
	}
	return body, nil
}

// effort is an effort level as reasoning.effort takes it: "" leaves the
// model's default, max is asked as xhigh, the highest level the API knows.
func effort(e string) string {
	if e == "max" {
		return "xhigh"
	}
	return e
}
