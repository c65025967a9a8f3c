package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
)

// Echo is a local model server that speaks the Anthropic Messages
// streaming API (server-sent events) with scripted answers, chosen from the
// request's last message:
//
//   - a tool result → the text "Done." (the turn ends);
//   - a compaction request ("Summarize this conversation") → a summary;
//   - a user text starting with "tool:" → a Bash tool call running the
//     rest of the text as the command, after a line of text;
//   - "bg:" → the same, with run_in_background (a background task);
//   - "kill:" → a KillShell call stopping the background task named by
//     the rest of the text;
//   - "agent:" → an Agent call (a subagent) whose prompt is the rest of
//     the text, after a line of text;
//   - "think:" → a thinking block, then the text after the prefix;
//   - "long:N" → an answer of N bytes in chunks of 64;
//   - anything else → "You said: " and the text, in three chunks.
//
// Usage is fixed so that transcripts are stable.
type Echo struct {
	*httptest.Server
}

// NewEcho starts the server; Close stops it.
func NewEcho() *Echo {
	f := &Echo{}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

type echoRequest struct {
	Messages []struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	} `json:"messages"`
}

type echoContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (f *Echo) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/messages" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	var req echoRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	last := req.Messages[len(req.Messages)-1]
	var text string
	toolResult := false
	for _, raw := range last.Content {
		var c echoContent
		json.Unmarshal(raw, &c)
		switch c.Type {
		case "tool_result":
			toolResult = true
		case "text":
			text = c.Text
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	sse := &sseWriter{w: w}
	sse.event("message_start", `{"type":"message_start","message":{"id":"msg_fake","type":"message","role":"assistant","model":"fake-model","content":[],"stop_reason":null,"usage":{"input_tokens":12,"output_tokens":1}}}`)
	stop := "end_turn"
	switch {
	case toolResult:
		sse.text(0, "Done.")
	case strings.Contains(text, "Summarize this conversation"):
		sse.text(0, "Summary: the user talked to a fake model.")
	case strings.HasPrefix(text, "tool:"), strings.HasPrefix(text, "bg:"), strings.HasPrefix(text, "kill:"):
		prefix, rest, _ := strings.Cut(text, ":")
		name, input := "Bash", map[string]any{"command": strings.TrimSpace(rest)}
		switch prefix {
		case "bg":
			input["run_in_background"] = true
		case "kill":
			name, input = "KillShell", map[string]any{"shell_id": strings.TrimSpace(rest)}
		}
		sse.text(0, "Running it.")
		raw, _ := json.Marshal(input)
		sse.event("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_fake1","name":"`+name+`","input":{}}}`)
		half := len(raw) / 2
		for _, part := range []string{string(raw[:half]), string(raw[half:])} {
			chunk, _ := json.Marshal(part)
			sse.event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":`+string(chunk)+`}}`)
		}
		sse.event("content_block_stop", `{"type":"content_block_stop","index":1}`)
		stop = "tool_use"
	case strings.HasPrefix(text, "agent:"):
		sse.text(0, "Delegating.")
		raw, _ := json.Marshal(map[string]any{"description": "delegate", "prompt": strings.TrimSpace(strings.TrimPrefix(text, "agent:"))})
		chunk, _ := json.Marshal(string(raw))
		sse.event("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_fake_agent","name":"Agent","input":{}}}`)
		sse.event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":`+string(chunk)+`}}`)
		sse.event("content_block_stop", `{"type":"content_block_stop","index":1}`)
		stop = "tool_use"
	case strings.HasPrefix(text, "think:"):
		sse.event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`)
		for _, c := range []string{"Let me ", "think."} {
			sse.event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"`+c+`"}}`)
		}
		sse.event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}`)
		sse.event("content_block_stop", `{"type":"content_block_stop","index":0}`)
		sse.text(1, strings.TrimSpace(strings.TrimPrefix(text, "think:")))
	case strings.HasPrefix(text, "long:"):
		var n int
		fmt.Sscan(strings.TrimPrefix(text, "long:"), &n)
		sse.text(0, LongAnswer(n))
	default:
		sse.text(0, "You said: "+text)
	}
	sse.event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":{"output_tokens":7}}`)
	sse.event("message_stop", `{"type":"message_stop"}`)
}

// LongAnswer is the deterministic text of n bytes that "long:N" streams:
// lines of 63 letters and a newline.
func LongAnswer(n int) string {
	var sb strings.Builder
	for i := 0; sb.Len() < n; i++ {
		if i%64 == 63 {
			sb.WriteByte('\n')
		} else {
			sb.WriteByte(byte('a' + i%26))
		}
	}
	return sb.String()[:n]
}

type sseWriter struct {
	w http.ResponseWriter
}

func (s *sseWriter) event(name, data string) {
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, data)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// text streams a text block: in three chunks, or in chunks of 64 bytes
// when it is long.
func (s *sseWriter) text(index int, text string) {
	s.event("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, index))
	size := max(1, (len(text)+2)/3)
	if len(text) > 192 {
		size = 64
	}
	for i := 0; i < len(text); i += size {
		chunk, _ := json.Marshal(text[i:min(i+size, len(text))])
		s.event("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, index, chunk))
	}
	s.event("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, index))
}
