package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// toResponses writes Anthropic stream events as the events OpenAI's
// Responses API streams for the same answer: each block an output item
// (text a message with one output_text part, thinking a reasoning item
// whose summary is the thinking and whose encrypted_content is the
// signature, a tool use a function_call with its call_id), announced by
// output_item.added, streamed in deltas, finished by the done events; the
// stop reason and usage in response.completed (response.incomplete at
// max_tokens), whose output repeats the items whole.
func toResponses(w io.Writer, events []json.RawMessage) error {
	var (
		id, mdl     string
		input, outp int
		stop        string
		items       []map[string]any
		open        = map[int]*responseItem{} // by block index
		seq         int
	)
	send := func(ev map[string]any) {
		ev["sequence_number"] = seq
		seq++
		data, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], data)
	}
	response := func(status string) map[string]any {
		r := map[string]any{"id": id, "object": "response", "model": mdl, "status": status, "output": []any{}, "usage": nil}
		if status != "in_progress" {
			r["output"] = items
			r["usage"] = map[string]any{
				"input_tokens": input, "input_tokens_details": map[string]any{"cached_tokens": 0},
				"output_tokens": outp, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
				"total_tokens": input + outp,
			}
		}
		if status == "incomplete" {
			r["incomplete_details"] = map[string]any{"reason": "max_output_tokens"}
		}
		return r
	}
	for _, raw := range events {
		var ev anthropicEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return fmt.Errorf("event %s: %w", raw, err)
		}
		switch ev.Type {
		case "message_start":
			id, mdl, input = strings.Replace(ev.Message.ID, "msg_", "resp_", 1), ev.Message.Model, ev.Message.Usage.InputTokens
			send(map[string]any{"type": "response.created", "response": response("in_progress")})
			send(map[string]any{"type": "response.in_progress", "response": response("in_progress")})
		case "content_block_start":
			it := &responseItem{output: len(items) + len(open), kind: ev.ContentBlock.Type}
			itemID := fmt.Sprintf("%s_%s_%d", map[string]string{"text": "msg", "thinking": "rs", "tool_use": "fc"}[it.kind], strings.TrimPrefix(id, "resp_"), ev.Index)
			switch it.kind {
			case "text":
				it.item = map[string]any{"id": itemID, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}
			case "thinking":
				it.item = map[string]any{"id": itemID, "type": "reasoning", "summary": []any{}}
			case "tool_use":
				it.item = map[string]any{"id": itemID, "type": "function_call", "status": "in_progress", "call_id": ev.ContentBlock.ID, "name": ev.ContentBlock.Name, "arguments": ""}
			default:
				continue // blocks the Responses API has no item for
			}
			open[ev.Index] = it
			send(map[string]any{"type": "response.output_item.added", "output_index": it.output, "item": it.item})
			switch it.kind {
			case "text":
				send(map[string]any{"type": "response.content_part.added", "item_id": itemID, "output_index": it.output, "content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			case "thinking":
				send(map[string]any{"type": "response.reasoning_summary_part.added", "item_id": itemID, "output_index": it.output, "summary_index": 0, "part": map[string]any{"type": "summary_text", "text": ""}})
			}
		case "content_block_delta":
			it := open[ev.Index]
			if it == nil {
				continue
			}
			base := map[string]any{"item_id": it.item["id"], "output_index": it.output}
			with := func(kv ...any) map[string]any {
				m := map[string]any{}
				for k, v := range base {
					m[k] = v
				}
				for i := 0; i < len(kv); i += 2 {
					m[kv[i].(string)] = kv[i+1]
				}
				return m
			}
			switch ev.Delta.Type {
			case "text_delta":
				it.text.WriteString(ev.Delta.Text)
				send(with("type", "response.output_text.delta", "content_index", 0, "delta", ev.Delta.Text))
			case "thinking_delta":
				it.text.WriteString(ev.Delta.Thinking)
				send(with("type", "response.reasoning_summary_text.delta", "summary_index", 0, "delta", ev.Delta.Thinking))
			case "signature_delta":
				it.signature += ev.Delta.Signature
			case "input_json_delta":
				it.text.WriteString(ev.Delta.PartialJSON)
				send(with("type", "response.function_call_arguments.delta", "delta", ev.Delta.PartialJSON))
			}
		case "content_block_stop":
			it := open[ev.Index]
			if it == nil {
				continue
			}
			delete(open, ev.Index)
			text := it.text.String()
			base := func(typ string) map[string]any {
				return map[string]any{"type": typ, "item_id": it.item["id"], "output_index": it.output}
			}
			switch it.kind {
			case "text":
				part := map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
				d := base("response.output_text.done")
				d["content_index"], d["text"] = 0, text
				send(d)
				d = base("response.content_part.done")
				d["content_index"], d["part"] = 0, part
				send(d)
				it.item["status"], it.item["content"] = "completed", []any{part}
			case "thinking":
				part := map[string]any{"type": "summary_text", "text": text}
				d := base("response.reasoning_summary_text.done")
				d["summary_index"], d["text"] = 0, text
				send(d)
				d = base("response.reasoning_summary_part.done")
				d["summary_index"], d["part"] = 0, part
				send(d)
				it.item["summary"], it.item["encrypted_content"] = []any{part}, it.signature
			case "tool_use":
				d := base("response.function_call_arguments.done")
				d["arguments"] = text
				send(d)
				it.item["status"], it.item["arguments"] = "completed", text
			}
			send(map[string]any{"type": "response.output_item.done", "output_index": it.output, "item": it.item})
			items = append(items, it.item)
		case "message_delta":
			stop, outp = ev.Delta.StopReason, ev.Usage.OutputTokens
		case "message_stop":
			if stop == "max_tokens" {
				send(map[string]any{"type": "response.incomplete", "response": response("incomplete")})
			} else {
				send(map[string]any{"type": "response.completed", "response": response("completed")})
			}
		}
	}
	return nil
}

// responseItem is an output item being streamed.
type responseItem struct {
	output    int
	kind      string // the Anthropic block's type
	item      map[string]any
	text      strings.Builder
	signature string
}

// summariseResponses describes a Responses request as Summary does the
// others, its input items as blocks; the model line also says whether the
// request asked the server to store nothing and what it included, and a
// reasoning item shows its encrypted content:
//
//	#2 model=gpt-5 store=false include=reasoning.encrypted_content
//	assistant: reasoning "Plan." encrypted_content="enc-1"
//	assistant: tool_use call_1 Bash {"command":"ls"}
//	user: tool_result call_1 "a.txt\n"
func summariseResponses(sb *strings.Builder, n int, body []byte) error {
	var req struct {
		Model   string
		Store   *bool
		Include []string
		Input   []struct {
			Type, Role, Name, Arguments, Output string
			CallID                              string `json:"call_id"`
			ID                                  string
			Encrypted                           string `json:"encrypted_content"`
			Content                             []struct{ Type, Text string }
			Summary                             []struct{ Text string }
		}
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return err
	}
	store := "unset"
	if req.Store != nil {
		store = fmt.Sprint(*req.Store)
	}
	fmt.Fprintf(sb, "#%d model=%s store=%s include=%s\n", n, req.Model, store, strings.Join(req.Include, ","))
	for _, it := range req.Input {
		if it.ID != "" {
			fmt.Fprintf(sb, "%s item id %s (the server stored nothing to refer to)\n", it.Type, it.ID)
		}
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				fmt.Fprintf(sb, "%s: %s %q\n", it.Role, c.Type, c.Text)
			}
		case "reasoning":
			var texts []string
			for _, s := range it.Summary {
				texts = append(texts, s.Text)
			}
			fmt.Fprintf(sb, "assistant: reasoning %q encrypted_content=%q\n", strings.Join(texts, "\n\n"), it.Encrypted)
		case "function_call":
			fmt.Fprintf(sb, "assistant: tool_use %s %s %s\n", it.CallID, it.Name, plainJSON([]byte(it.Arguments)))
		case "function_call_output":
			fmt.Fprintf(sb, "user: tool_result %s %q\n", it.CallID, it.Output)
		default:
			fmt.Fprintf(sb, "%s\n", it.Type)
		}
	}
	return nil
}
