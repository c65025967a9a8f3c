package gemini

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/model"
)

type wireRequest struct {
	Contents          []wireContent `json:"contents"`
	SystemInstruction *wireContent  `json:"systemInstruction,omitempty"`
	Tools             []wireTool    `json:"tools,omitempty"`
	GenerationConfig  *genConfig    `json:"generationConfig,omitempty"`
}

type wireContent struct {
	Role  string     `json:"role,omitempty"`
	Parts []wirePart `json:"parts"`
}

// wirePart is one Part: exactly one of its data fields is set. Text is a
// pointer so that an empty text that carries a signature is sent.
type wirePart struct {
	Text             *string       `json:"text,omitempty"`
	Thought          bool          `json:"thought,omitempty"`
	ThoughtSignature string        `json:"thoughtSignature,omitempty"`
	InlineData       *inlineData   `json:"inlineData,omitempty"`
	FunctionCall     *functionCall `json:"functionCall,omitempty"`
	FunctionResponse *functionResp `json:"functionResponse,omitempty"`
}

type inlineData struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"` // base64
}

type functionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type functionResp struct {
	ID       string         `json:"id,omitempty"`
	Name     string         `json:"name"`
	Response map[string]any `json:"response"`
}

type wireTool struct {
	FunctionDeclarations []functionDecl `json:"functionDeclarations"`
}

type functionDecl struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
}

type genConfig struct {
	MaxOutputTokens int             `json:"maxOutputTokens,omitempty"`
	ThinkingConfig  *thinkingConfig `json:"thinkingConfig,omitempty"`
}

type thinkingConfig struct {
	IncludeThoughts bool   `json:"includeThoughts"`
	ThinkingBudget  *int   `json:"thinkingBudget,omitempty"`
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
}

// Body builds the JSON body of a generateContent or streamGenerateContent
// request for req, asking modelName (the model goes in the URL, not the
// body). Reasoning goes back only when it carries a signature (Gemini
// reads nothing from unsigned thought summaries); every signature goes
// back on the part that carried it; raw and redacted blocks, which only
// Anthropic understands, are left out.
func Body(req *model.Request, modelName string) ([]byte, error) {
	w := wireRequest{Contents: []wireContent{}}
	if req.System != "" {
		s := req.System
		w.SystemInstruction = &wireContent{Parts: []wirePart{{Text: &s}}}
	}
	if len(req.Tools) > 0 {
		decls := make([]functionDecl, 0, len(req.Tools))
		for _, t := range req.Tools {
			params, err := Schema(t.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("gemini: %w: the input schema of tool %s: %v", model.ErrInvalidRequest, t.Name, err)
			}
			decls = append(decls, functionDecl{Name: t.Name, Description: t.Description, Parameters: params})
		}
		w.Tools = []wireTool{{FunctionDeclarations: decls}}
	}
	w.GenerationConfig = generationConfig(req, modelName)
	names := map[string]string{} // tool use id → function name, for the responses
	for _, m := range req.Messages {
		var parts, results []wirePart
		for _, c := range m.Content {
			switch c.Type {
			case model.ContentText:
				if c.Text == "" && c.Signature == "" {
					continue
				}
				text := c.Text
				parts = append(parts, wirePart{Text: &text, ThoughtSignature: c.Signature})
			case model.ContentReasoning:
				if c.Signature == "" || m.Role != model.RoleAssistant {
					continue
				}
				text := c.Text
				parts = append(parts, wirePart{Text: &text, Thought: true, ThoughtSignature: c.Signature})
			case model.ContentImage:
				parts = append(parts, wirePart{InlineData: &inlineData{MimeType: c.MediaType, Data: c.Data}})
			case model.ContentToolUse:
				args := c.Input
				if len(args) == 0 {
					args = json.RawMessage("{}")
				}
				if !json.Valid(args) || strings.TrimSpace(string(args))[0] != '{' {
					return nil, fmt.Errorf("gemini: %w: tool use %s has an input that is not a JSON object", model.ErrInvalidRequest, c.ID)
				}
				names[c.ID] = c.Name
				fc := &functionCall{Name: c.Name, Args: args}
				if !isGenerated(c.ID) {
					fc.ID = c.ID
				}
				parts = append(parts, wirePart{FunctionCall: fc, ThoughtSignature: c.Signature})
			case model.ContentToolResult:
				// The responses answer the model's calls, so they come
				// before the user's other parts.
				fr := &functionResp{Name: names[c.ID]}
				if fr.Name == "" {
					fr.Name = c.Name
				}
				if !isGenerated(c.ID) {
					fr.ID = c.ID
				}
				// Google's guidance: "output" for a result, "error" for
				// a failure.
				if c.IsError {
					fr.Response = map[string]any{"error": c.Text}
				} else {
					fr.Response = map[string]any{"output": c.Text}
				}
				results = append(results, wirePart{FunctionResponse: fr})
			}
		}
		parts = append(results, parts...)
		if len(parts) == 0 {
			continue
		}
		role := "user"
		if m.Role == model.RoleAssistant {
			role = "model"
		}
		if n := len(w.Contents); n > 0 && w.Contents[n-1].Role == role {
			// Turns alternate: consecutive messages of one role are one
			// turn.
			w.Contents[n-1].Parts = append(w.Contents[n-1].Parts, parts...)
			continue
		}
		w.Contents = append(w.Contents, wireContent{Role: role, Parts: parts})
	}
	body, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("gemini: %w: %v", model.ErrInvalidRequest, err)
	}
	return body, nil
}

// generationConfig asks for maxOutputTokens and thought summaries. A
// thinking budget is sent when reasoning is on (ThinkingBudget, or -1,
// Gemini's dynamic thinking, for adaptive thinking); an effort level is
// Gemini 3's thinkingLevel. Models before 2.5 do not think and refuse a
// thinkingConfig.
func generationConfig(req *model.Request, modelName string) *genConfig {
	g := &genConfig{MaxOutputTokens: req.MaxTokens}
	name := strings.TrimPrefix(modelName, "models/")
	if strings.HasPrefix(name, "gemini-1") || strings.HasPrefix(name, "gemini-2.0") {
		if g.MaxOutputTokens == 0 {
			return nil
		}
		return g
	}
	tc := &thinkingConfig{IncludeThoughts: true}
	switch {
	case req.ThinkingBudget > 0:
		b := req.ThinkingBudget
		tc.ThinkingBudget = &b
	case req.Effort != "" && strings.HasPrefix(name, "gemini-3"):
		// thinkingLevel and thinkingBudget exclude each other.
		tc.ThinkingLevel = thinkingLevel(req.Effort)
	case req.AdaptiveThinking:
		dynamic := -1
		tc.ThinkingBudget = &dynamic
	}
	g.ThinkingConfig = tc
	return g
}

// thinkingLevel is an effort level as Gemini 3 takes it: low, medium or
// high.
func thinkingLevel(effort string) string {
	switch effort {
	case "low", "medium":
		return effort
	}
	return "high"
}
