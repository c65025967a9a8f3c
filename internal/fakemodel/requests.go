package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Summary describes the conversation each request carried, one line per
// content block, the same for both wire formats so that a script asserts
// what the model was sent whatever the provider:
//
//	#2 model=fake-model
//	user: text "list the files"
//	assistant: tool_use toolu_fake_0001 Bash {"command":"ls"}
//	user: tool_result toolu_fake_0001 "a.txt\n"
//
// The system prompt and the tool definitions are left out.
func Summary(format string, reqs []Received) (string, error) {
	var sb strings.Builder
	for i, r := range reqs {
		var err error
		switch format {
		case OpenAI:
			err = summariseOpenAI(&sb, i+1, r.Body)
		case OpenAIResponses:
			err = summariseResponses(&sb, i+1, r.Body)
		default:
			err = summariseAnthropic(&sb, i+1, r.Body)
		}
		if err != nil {
			return "", fmt.Errorf("request %d: %w", i+1, err)
		}
	}
	return sb.String(), nil
}

func summariseAnthropic(sb *strings.Builder, n int, body []byte) error {
	var req struct {
		Model    string
		Messages []struct {
			Role    string
			Content json.RawMessage
		}
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return err
	}
	fmt.Fprintf(sb, "#%d model=%s\n", n, req.Model)
	for _, m := range req.Messages {
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			fmt.Fprintf(sb, "%s: text %q\n", m.Role, s)
			continue
		}
		var blocks []struct {
			Type, Text, Thinking, ID, Name string
			Input                          json.RawMessage
			ToolUseID                      string          `json:"tool_use_id"`
			Content                        json.RawMessage `json:"content"`
			IsError                        bool            `json:"is_error"`
		}
		if err := json.Unmarshal(m.Content, &blocks); err != nil {
			return err
		}
		for _, b := range blocks {
			switch b.Type {
			case "text":
				fmt.Fprintf(sb, "%s: text %q\n", m.Role, b.Text)
			case "thinking":
				fmt.Fprintf(sb, "%s: thinking %q\n", m.Role, b.Thinking)
			case "tool_use":
				fmt.Fprintf(sb, "%s: tool_use %s %s %s\n", m.Role, b.ID, b.Name, plainJSON(b.Input))
			case "tool_result":
				var content string
				if json.Unmarshal(b.Content, &content) != nil {
					content = string(b.Content)
				}
				fmt.Fprintf(sb, "%s: tool_result %s%s %q\n", m.Role, b.ToolUseID, errMark(b.IsError), content)
			default:
				fmt.Fprintf(sb, "%s: %s\n", m.Role, b.Type)
			}
		}
	}
	return nil
}

func summariseOpenAI(sb *strings.Builder, n int, body []byte) error {
	var req struct {
		Model    string
		Messages []struct {
			Role             string
			Content          *string
			ReasoningContent string `json:"reasoning_content"`
			ToolCalls        []struct {
				ID       string
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
			ToolCallID string `json:"tool_call_id"`
		}
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return err
	}
	fmt.Fprintf(sb, "#%d model=%s\n", n, req.Model)
	for _, m := range req.Messages {
		switch {
		case m.Role == "system":
		case m.Role == "tool":
			fmt.Fprintf(sb, "user: tool_result %s %q\n", m.ToolCallID, deref(m.Content))
		default:
			if m.ReasoningContent != "" {
				fmt.Fprintf(sb, "%s: thinking %q\n", m.Role, m.ReasoningContent)
			}
			if m.Content != nil && *m.Content != "" {
				fmt.Fprintf(sb, "%s: text %q\n", m.Role, *m.Content)
			}
			for _, c := range m.ToolCalls {
				fmt.Fprintf(sb, "%s: tool_use %s %s %s\n", m.Role, c.ID, c.Function.Name, plainJSON([]byte(c.Function.Arguments)))
			}
		}
	}
	return nil
}

// plainJSON re-encodes a tool input without escaping <, > and &, which
// encoding/json escapes and other encoders do not, so that the summary
// shows what the input means.
func plainJSON(raw []byte) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSpace(buf.String())
}

func errMark(isErr bool) string {
	if isErr {
		return " (error)"
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
