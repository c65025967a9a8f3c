package fakemodel

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Wire formats the fake server speaks.
const (
	Anthropic = "anthropic"
	OpenAI    = "openai"
	// OpenAIResponses is OpenAI's Responses API (POST /v1/responses).
	OpenAIResponses = "openai-responses"
)

// Reply is what the server does with one request.
type Reply struct {
	// Status, when non-zero, answers with this HTTP error status and the
	// provider's error body.
	Status int
	// Events are Anthropic stream events (message_start ... message_stop),
	// sent as they are to Anthropic clients and translated into chat
	// completion chunks or Responses events for OpenAI clients.
	Events []json.RawMessage
	// Raw is a recorded body, sent verbatim whatever the wire format.
	Raw []byte
	// Hang keeps the stream open after Events until the client goes away:
	// a model that stalls mid-answer.
	Hang bool
}

// Received is one request a server received (Script, Recorder).
type Received struct {
	// URL is the request's path and query.
	URL    *url.URL
	Header http.Header
	Body   []byte
}

// Script is a fake model API speaking Anthropic's Messages stream, OpenAI's
// Chat Completions chunks or OpenAI's Responses events from one script of
// replies, written as Anthropic events. Each request gets the next reply;
// past the last, a 418 that says the script ran out (4xx: never retried).
type Script struct {
	// URL is the base URL to give the client: the root for Anthropic
	// (ANTHROPIC_BASE_URL), the root plus /v1 for OpenAI's APIs (OPENAI_BASE_URL).
	URL    string
	format string
	srv    *httptest.Server

	mu       sync.Mutex
	answers  []Reply
	requests []Received
}

// NewScript starts a server speaking format (Anthropic, OpenAI or
// OpenAIResponses) that answers the requests with answers, in order.
func NewScript(format string, answers []Reply) (*Script, error) {
	if format != Anthropic && format != OpenAI && format != OpenAIResponses {
		return nil, fmt.Errorf("fake model: unknown wire format %q (want %s, %s or %s)", format, Anthropic, OpenAI, OpenAIResponses)
	}
	s := &Script{format: format, answers: answers}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	if format != Anthropic {
		s.URL += "/v1"
	}
	return s, nil
}

// Close stops the server; a hanging answer ends when its client leaves.
func (s *Script) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Requests returns the requests received so far.
func (s *Script) Requests() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.requests...)
}

func (s *Script) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	want := map[string]string{Anthropic: "/v1/messages", OpenAI: "/v1/chat/completions", OpenAIResponses: "/v1/responses"}[s.format]
	if r.Method != http.MethodPost || r.URL.Path != want {
		http.Error(w, fmt.Sprintf("fake model: want POST %s, got %s %s", want, r.Method, r.URL.Path), http.StatusNotFound)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, Received{URL: r.URL, Header: r.Header, Body: body})
	n := len(s.requests)
	var a Reply
	ok := n <= len(s.answers)
	if ok {
		a = s.answers[n-1]
	}
	s.mu.Unlock()
	if !ok {
		http.Error(w, fmt.Sprintf("fake model: no answer scripted for request %d", n), http.StatusTeapot)
		return
	}
	switch {
	case a.Status != 0:
		s.serveError(w, r, a.Status)
	case a.Raw != nil:
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(a.Raw)
	default:
		s.serveEvents(w, r, a)
	}
}

// serveError answers with status and a body in the provider's shape. A
// 401 from OpenAI names the key masked, as the real API does.
func (s *Script) serveError(w http.ResponseWriter, r *http.Request, status int) {
	typ, msg := "api_error", "Internal server error"
	switch status {
	case 401:
		typ, msg = "authentication_error", "invalid x-api-key"
		if s.format != Anthropic {
			msg = "Incorrect API key provided: " + mask(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")) + "."
		}
	case 429:
		typ, msg = "rate_limit_error", "Rate limited"
	case 529:
		typ, msg = "overloaded_error", "Overloaded"
	case 400:
		typ, msg = "invalid_request_error", "Bad request"
	case 404:
		typ, msg = "not_found_error", "model: no such model"
	}
	var body any = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	if s.format != Anthropic {
		body = map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": nil}}
	}
	data, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	// Retry soon: the tests wait for no real backoff.
	w.Header().Set("retry-after-ms", "5")
	w.WriteHeader(status)
	w.Write(data)
}

func mask(key string) string {
	if len(key) < 8 {
		return "***"
	}
	return key[:3] + "***" + key[len(key)-4:]
}

func (s *Script) serveEvents(w http.ResponseWriter, r *http.Request, a Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	var bw bytes.Buffer
	if s.format == Anthropic {
		for _, ev := range a.Events {
			var head struct{ Type string }
			json.Unmarshal(ev, &head)
			fmt.Fprintf(&bw, "event: %s\ndata: %s\n\n", head.Type, ev)
		}
	} else if s.format == OpenAIResponses {
		if err := toResponses(&bw, a.Events); err != nil {
			fmt.Fprintf(&bw, "event: error\ndata: {\"type\":\"error\",\"code\":\"fake_model_error\",\"message\":%q}\n\n", err.Error())
		}
	} else if err := toChunks(&bw, a.Events); err != nil {
		fmt.Fprintf(&bw, "data: {\"error\":{\"message\":%q,\"type\":\"fake_model_error\"}}\n\n", err.Error())
	}
	w.Write(bw.Bytes())
	f.Flush()
	if a.Hang {
		<-r.Context().Done()
	}
}

// toChunks writes Anthropic stream events as the chat completion chunks an
// OpenAI-compatible server streams for the same answer: text as content,
// thinking as reasoning_content (DeepSeek's field), tool uses as
// tool_calls, the stop reason as finish_reason, usage in a chunk of its own,
// and [DONE] for message_stop.
func toChunks(w io.Writer, events []json.RawMessage) error {
	var (
		id, mdl     string
		tools       = map[int]int{} // block index → tool call index
		input, outp int
	)
	chunk := func(choices []any, usage any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1782955817, "model": mdl, "choices": choices}
		if usage != nil {
			c["usage"] = usage
		}
		data, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", data)
	}
	delta := func(d map[string]any) {
		chunk([]any{map[string]any{"index": 0, "delta": d, "finish_reason": nil}}, nil)
	}
	for _, raw := range events {
		var ev anthropicEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return fmt.Errorf("event %s: %w", raw, err)
		}
		switch ev.Type {
		case "message_start":
			id, mdl, input = ev.Message.ID, ev.Message.Model, ev.Message.Usage.InputTokens
			delta(map[string]any{"role": "assistant", "content": ""})
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				n := len(tools)
				tools[ev.Index] = n
				delta(map[string]any{"tool_calls": []any{map[string]any{
					"index": n, "id": ev.ContentBlock.ID, "type": "function",
					"function": map[string]any{"name": ev.ContentBlock.Name, "arguments": ""},
				}}})
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				delta(map[string]any{"content": ev.Delta.Text})
			case "thinking_delta":
				delta(map[string]any{"reasoning_content": ev.Delta.Thinking})
			case "input_json_delta":
				delta(map[string]any{"tool_calls": []any{map[string]any{
					"index": tools[ev.Index], "function": map[string]any{"arguments": ev.Delta.PartialJSON},
				}}})
			}
		case "message_delta":
			outp = ev.Usage.OutputTokens
			finish := map[string]string{"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}[ev.Delta.StopReason]
			if finish == "" {
				finish = "stop"
			}
			chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, nil)
		case "message_stop":
			chunk([]any{}, map[string]any{"prompt_tokens": input, "completion_tokens": outp, "total_tokens": input + outp})
			fmt.Fprint(w, "data: [DONE]\n\n")
		}
	}
	return nil
}

// ParseReplies turns the arguments of a script's fakemodel command into
// answers. Each is one of:
//
//	say:TEXT        a text answer (end_turn), streamed in small deltas
//	bash:COMMAND    an answer that calls the Bash tool with COMMAND (tool_use)
//	tool:NAME:JSON  an answer that calls tool NAME with the JSON object as
//	                its input (tool_use)
//	agent:PROMPT    an answer that says "Delegating." and calls the Agent tool
//	                with PROMPT (tool_use)
//	hang:TEXT       TEXT streamed, then the stream stays open
//	status:CODE     an HTTP error (529, 401, 429, 500, ...)
//	FILE.ndjson     Claude Code stream-json output: each model response it
//	                recorded (its stream_event lines) is one answer
//	FILE.sse        a recorded response body, sent verbatim
//
// Generated answers get the message id msg_fake_NNNN after their position,
// as the server that recorded Claude Code's fixtures numbered them.
func ParseReplies(specs []string) ([]Reply, error) {
	var out []Reply
	for _, spec := range specs {
		id := fmt.Sprintf("msg_fake_%04d", len(out)+1)
		kind, arg, _ := strings.Cut(spec, ":")
		switch {
		case kind == "say":
			out = append(out, Reply{Events: textAnswer(id, arg, "end_turn")})
		case kind == "hang":
			out = append(out, Reply{Events: textAnswer(id, arg, ""), Hang: true})
		case kind == "bash":
			out = append(out, Reply{Events: bashAnswer(id, arg)})
		case kind == "tool":
			name, raw, _ := strings.Cut(arg, ":")
			var input map[string]any
			if err := json.Unmarshal([]byte(raw), &input); err != nil || name == "" {
				return nil, fmt.Errorf("fake model: %q: want tool:NAME:JSON with a JSON object", spec)
			}
			out = append(out, Reply{Events: toolAnswer(id, "", name, input)})
		case kind == "agent":
			out = append(out, Reply{Events: toolAnswer(id, "Delegating.", "Agent", map[string]string{"description": "run it", "prompt": arg, "subagent_type": "general-purpose"})})
		case kind == "status":
			code, err := strconv.Atoi(arg)
			if err != nil || code < 400 || code > 599 {
				return nil, fmt.Errorf("fake model: %q: want status:CODE with an HTTP error code", spec)
			}
			out = append(out, Reply{Status: code})
		case strings.HasSuffix(spec, ".ndjson"):
			as, err := ReadClaudeCode(spec)
			if err != nil {
				return nil, err
			}
			out = append(out, as...)
		case strings.HasSuffix(spec, ".sse"):
			data, err := os.ReadFile(spec)
			if err != nil {
				return nil, err
			}
			out = append(out, Reply{Raw: data})
		default:
			return nil, fmt.Errorf("fake model: unknown answer %q (want say:, bash:, tool:, agent:, hang:, status:, a .ndjson or a .sse file)", spec)
		}
	}
	return out, nil
}

// ReadClaudeCode reads Claude Code's stream-json output (recorded with
// --include-partial-messages) and returns the model's responses in it: the
// events of its stream_event lines, one answer per message_start ...
// message_stop.
func ReadClaudeCode(path string) ([]Reply, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Reply
	var cur []json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var line struct {
			Type  string
			Event json.RawMessage
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if line.Type != "stream_event" {
			continue
		}
		cur = append(cur, line.Event)
		var head struct{ Type string }
		json.Unmarshal(line.Event, &head)
		if head.Type == "message_stop" {
			out = append(out, Reply{Events: cur})
			cur = nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 || cur != nil {
		return nil, fmt.Errorf("%s: no complete model response in its stream_event lines", path)
	}
	return out, nil
}

func event(v any) json.RawMessage {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

func messageStart(id string) json.RawMessage {
	return event(map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": "fake-model", "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 100, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1},
	}})
}

func messageEnd(stop string, output int) []json.RawMessage {
	return []json.RawMessage{
		event(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": output}}),
		event(map[string]any{"type": "message_stop"}),
	}
}

// textAnswer is a text block streamed in deltas of about 16 bytes, ended
// with stop (no end when stop is empty).
func textAnswer(id, text, stop string) []json.RawMessage {
	evs := []json.RawMessage{
		messageStart(id),
		event(map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}),
	}
	for _, c := range chunks(text, 16) {
		evs = append(evs, event(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": c}}))
	}
	if stop == "" {
		return evs
	}
	evs = append(evs, event(map[string]any{"type": "content_block_stop", "index": 0}))
	return append(evs, messageEnd(stop, len(strings.Fields(text)))...)
}

// bashAnswer calls the Bash tool with command, its JSON input streamed in
// fragments as Anthropic does.
func bashAnswer(id, command string) []json.RawMessage {
	return toolAnswer(id, "", "Bash", map[string]string{"command": command})
}

// toolAnswer is an answer that says lead (when not empty), then calls tool
// name with input (tool_use).
func toolAnswer(id, lead, name string, input any) []json.RawMessage {
	// As Anthropic's API does, leave <, > and & unescaped.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(input)
	raw := bytes.TrimSpace(buf.Bytes())
	evs := []json.RawMessage{messageStart(id)}
	i := 0
	if lead != "" {
		evs = append(evs,
			event(map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}),
			event(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": lead}}),
			event(map[string]any{"type": "content_block_stop", "index": 0}))
		i = 1
	}
	evs = append(evs, event(map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{
		"type": "tool_use", "id": "toolu_" + strings.TrimPrefix(id, "msg_"), "name": name, "input": map[string]any{},
	}}))
	for _, c := range chunks(string(raw), 8) {
		evs = append(evs, event(map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": c}}))
	}
	evs = append(evs, event(map[string]any{"type": "content_block_stop", "index": i}))
	return append(evs, messageEnd("tool_use", 12)...)
}

// chunks splits s into pieces of about n bytes, never inside a character.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		i := n
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// anthropicEvent is an Anthropic stream event as the translations to
// OpenAI's chat chunks and Responses events read it.
type anthropicEvent struct {
	Type    string
	Index   int
	Message struct {
		ID, Model string
		Usage     struct {
			InputTokens int `json:"input_tokens"`
		}
	}
	ContentBlock struct{ Type, ID, Name string } `json:"content_block"`
	Delta        struct {
		Type, Text, Thinking, Signature string
		PartialJSON                     string `json:"partial_json"`
		StopReason                      string `json:"stop_reason"`
	}
	Usage struct {
		OutputTokens int `json:"output_tokens"`
	}
}
