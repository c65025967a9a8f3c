// Package fakemodel is the fake model server of every test and tool: local
// HTTP servers that speak the model APIs' streaming shapes, so that the
// real providers' HTTP and SSE paths run without a network.
//
//   - Server (New) answers each Anthropic Messages request with what a
//     function of the request returns, with pacing, gates that hold a
//     stream at chosen points, and stamped chunks for latency checks: the
//     web face's tests, the TUI's, the cluster's and the load tools.
//   - Script (NewScript) answers requests in order from a list of replies
//     written as Anthropic stream events, translated for OpenAI's Chat
//     Completions and Responses clients, with HTTP error statuses, recorded
//     bodies and streams that hang: print mode's tests and the command's
//     scripts (ParseReplies reads the replies from short specs).
//   - Echo (NewEcho) answers Anthropic requests by the text of the last
//     user message (tool:, agent:, think:, long:N ...), with fixed ids
//     and usage, so that the host protocol's transcripts are stable.
//   - The fault handlers (SSE, Stall, ResetAfter, Page, JSON, chained by
//     Attempts) fail at the level of bytes, around bodies the caller writes
//     in any provider's format (Bedrock's binary frames built by
//     BedrockChunk and its kin), and a Recorder keeps what they were sent:
//     the providers' own tests.
package fakemodel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"
)

// Answer is one scripted response.
type Answer struct {
	// Reasoning chunks stream as a thinking block first (none when empty).
	Reasoning []string
	// Text chunks stream as a text block.
	Text []string
	// Tool, when set, is a tool call streamed after the text.
	Tool *ToolCall
	// StopReason defaults to tool_use with a Tool, else end_turn.
	StopReason string
	// HoldAfter and Release pause the stream: after HoldAfter text chunks
	// the server waits until Release is closed (or the request ends).
	HoldAfter int
	Release   <-chan struct{}
	// Gates pause the stream at several points: before text chunk i the
	// server waits until Gates[i] is closed (or the request ends).
	Gates map[int]<-chan struct{}
	// ReasoningGate, when set, holds the reasoning block open after its
	// last chunk until it is closed.
	ReasoningGate <-chan struct{}
	// ToolGate, when set, holds the tool call after the first half of its
	// input until it is closed.
	ToolGate <-chan struct{}
	// Pace is a delay before each text chunk after the first, as a model
	// producing tokens at a rate would (0: as fast as possible).
	Pace time.Duration
	// Jitter spreads each delay at random over Pace × [1−Jitter, 1+Jitter]
	// (the same mean), so that answers streamed at once do not stay in
	// step as timers set together fire together: unaligned, as the
	// streams of independent model requests are (0: every delay is Pace).
	Jitter float64
	// Stamp replaces each text chunk by the time it is sent (Unix ns,
	// StampBytes bytes with a trailing space), so that a client measures
	// each delta's delivery latency.
	Stamp bool
}

// StampBytes is the size of a stamped chunk.
const StampBytes = 20

// ToolCall is a tool_use block.
type ToolCall struct {
	ID    string
	Name  string
	Input any
}

// Request is what the server tells a Respond function about a request.
type Request struct {
	Model  string
	Stream bool
	// LastUserText is the text of the last user message (text blocks
	// only; tool results are left out).
	LastUserText string
	// Messages counts the request's messages.
	Messages int
	// ToolResult is the content of the last message's tool_result, if any.
	ToolResult string
	// Images are the image blocks of the last message, in order.
	Images []Image
	// AssistantTexts are the text blocks of the request's assistant
	// messages, in order: what the model is told it said.
	AssistantTexts []string
	// ToolUses are the tool_use blocks of the request's assistant
	// messages, in order: the calls the model is told it made (Input is
	// the JSON sent, a json.RawMessage).
	ToolUses []ToolCall
	// ToolResults are the tool_result blocks of the request's user
	// messages, in order: what the model is told its calls returned.
	ToolResults []ToolResult
	// Body is the request's JSON as the client sent it, for what the
	// fields above leave out.
	Body []byte
}

// ToolResult is a tool_result block of a request.
type ToolResult struct {
	ToolUseID string
	Content   string
	IsError   bool
}

// Image is an image block of a request: a base64 source's media type and
// data, as the client sent them.
type Image struct {
	MediaType string
	Data      string
}

// Server is a running fake model server. Its methods are safe for
// concurrent use.
type Server struct {
	srv      *httptest.Server
	respond  func(Request) Answer
	requests atomic.Int64
	written  atomic.Int64
}

// New starts a server on 127.0.0.1 that answers every request with
// respond's answer.
func New(respond func(Request) Answer) *Server {
	s := &Server{respond: respond}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the base URL to give the anthropic provider.
func (s *Server) URL() string { return s.srv.URL }

// Requests counts the requests answered or being answered.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Written counts the bytes of response bodies written so far: how much of
// an answer a client that stops reading, or gives up, was sent.
func (s *Server) Written() int64 { return s.written.Load() }

// Close stops the server, cutting the streams still open.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

type wireRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

type wireContent struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content"`
	// tool_use's and tool_result's.
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Source    *struct {
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
}

func (s *Server) serve(rw http.ResponseWriter, r *http.Request) {
	w := countingWriter{rw, &s.written}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		writeError(w, http.StatusNotFound, "not_found_error", "no such endpoint")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	s.requests.Add(1)
	req := Request{Model: wr.Model, Stream: wr.Stream, Messages: len(wr.Messages), Body: body}
	for _, m := range wr.Messages {
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			if m.Role == "assistant" {
				req.AssistantTexts = append(req.AssistantTexts, text)
			}
			continue
		}
		var cs []wireContent
		_ = json.Unmarshal(m.Content, &cs)
		for _, c := range cs {
			switch {
			case m.Role == "assistant" && c.Type == "text":
				req.AssistantTexts = append(req.AssistantTexts, c.Text)
			case m.Role == "assistant" && c.Type == "tool_use":
				req.ToolUses = append(req.ToolUses, ToolCall{ID: c.ID, Name: c.Name, Input: c.Input})
			case m.Role == "user" && c.Type == "tool_result":
				req.ToolResults = append(req.ToolResults, ToolResult{ToolUseID: c.ToolUseID, Content: contentText(c.Content), IsError: c.IsError})
			}
		}
	}
	if n := len(wr.Messages); n > 0 {
		last := wr.Messages[n-1]
		var text string
		if json.Unmarshal(last.Content, &text) == nil {
			req.LastUserText = text
		} else {
			var cs []wireContent
			_ = json.Unmarshal(last.Content, &cs)
			var b strings.Builder
			for _, c := range cs {
				switch c.Type {
				case "text":
					b.WriteString(c.Text)
				case "tool_result":
					req.ToolResult = contentText(c.Content)
				case "image":
					if c.Source != nil {
						req.Images = append(req.Images, Image{MediaType: c.Source.MediaType, Data: c.Source.Data})
					}
				}
			}
			req.LastUserText = b.String()
		}
	}
	a := s.respond(req)
	if !wr.Stream {
		writeJSON(w, a)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	streamAnswer(r.Context(), w, a)
}

func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var cs []wireContent
	_ = json.Unmarshal(raw, &cs)
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(c.Text)
	}
	return b.String()
}

// idxText is the index of the text block: after the reasoning block, if
// any.
func idxText(a Answer) int {
	if len(a.Reasoning) > 0 {
		return 1
	}
	return 0
}

func stopReason(a Answer) string {
	switch {
	case a.StopReason != "":
		return a.StopReason
	case a.Tool != nil:
		return "tool_use"
	}
	return "end_turn"
}

func outputTokens(a Answer) int {
	n := 0
	for _, c := range a.Reasoning {
		n += len(c)
	}
	for _, c := range a.Text {
		n += len(c)
	}
	return n/4 + 1
}

// streamAnswer writes a as Anthropic stream events, flushing each one.
func streamAnswer(ctx context.Context, w http.ResponseWriter, a Answer) {
	fl, _ := w.(http.Flusher)
	emit := func(event string, data any) bool {
		b, _ := json.Marshal(data)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return ctx.Err() == nil
	}
	// emitText writes a text delta without a map: the load check streams
	// hundreds of thousands of them, and this server shares the machine
	// with the one being measured.
	var buf []byte
	emitText := func(text string) bool {
		t, _ := json.Marshal(text)
		buf = fmt.Appendf(buf[:0], "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":%d,\"delta\":{\"type\":\"text_delta\",\"text\":%s}}\n\n", idxText(a), t)
		if _, err := w.Write(buf); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return ctx.Err() == nil
	}
	type obj = map[string]any
	if !emit("message_start", obj{"type": "message_start", "message": obj{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": "fake-model", "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": obj{"input_tokens": 10, "output_tokens": 1},
	}}) {
		return
	}
	idx := 0
	if len(a.Reasoning) > 0 {
		emit("content_block_start", obj{"type": "content_block_start", "index": idx, "content_block": obj{"type": "thinking", "thinking": "", "signature": ""}})
		for _, c := range a.Reasoning {
			if !emit("content_block_delta", obj{"type": "content_block_delta", "index": idx, "delta": obj{"type": "thinking_delta", "thinking": c}}) {
				return
			}
		}
		if a.ReasoningGate != nil && !wait(ctx, a.ReasoningGate) {
			return
		}
		emit("content_block_delta", obj{"type": "content_block_delta", "index": idx, "delta": obj{"type": "signature_delta", "signature": "fake-signature"}})
		emit("content_block_stop", obj{"type": "content_block_stop", "index": idx})
		idx++
	}
	if len(a.Text) > 0 {
		emit("content_block_start", obj{"type": "content_block_start", "index": idx, "content_block": obj{"type": "text", "text": ""}})
		for i, c := range a.Text {
			if a.Release != nil && i == a.HoldAfter && !wait(ctx, a.Release) {
				return
			}
			if g := a.Gates[i]; g != nil && !wait(ctx, g) {
				return
			}
			if a.Pace > 0 && i > 0 {
				t := time.NewTimer(jittered(a.Pace, a.Jitter))
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return
				}
			}
			if a.Stamp {
				c = fmt.Sprintf("%019d ", time.Now().UnixNano())
			}
			if !emitText(c) {
				return
			}
		}
		emit("content_block_stop", obj{"type": "content_block_stop", "index": idx})
		idx++
	}
	if t := a.Tool; t != nil {
		input, _ := json.Marshal(t.Input)
		emit("content_block_start", obj{"type": "content_block_start", "index": idx, "content_block": obj{"type": "tool_use", "id": t.ID, "name": t.Name, "input": obj{}}})
		half := len(input) / 2
		for i, part := range []string{string(input[:half]), string(input[half:])} {
			if i == 1 && a.ToolGate != nil && !wait(ctx, a.ToolGate) {
				return
			}
			emit("content_block_delta", obj{"type": "content_block_delta", "index": idx, "delta": obj{"type": "input_json_delta", "partial_json": part}})
		}
		emit("content_block_stop", obj{"type": "content_block_stop", "index": idx})
	}
	emit("message_delta", obj{"type": "message_delta", "delta": obj{"stop_reason": stopReason(a), "stop_sequence": nil},
		"usage": obj{"output_tokens": outputTokens(a)}})
	emit("message_stop", obj{"type": "message_stop"})
}

// countingWriter adds the bytes of a response body to n as they are
// written.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func (c countingWriter) Flush() { c.ResponseWriter.(http.Flusher).Flush() }

// wait waits until gate is closed; false when the request ended first.
func wait(ctx context.Context, gate <-chan struct{}) bool {
	select {
	case <-gate:
		return true
	case <-ctx.Done():
		return false
	}
}

// writeJSON answers a non-streaming request (the fallback after repeated
// streaming failures) with the whole message.
func writeJSON(w http.ResponseWriter, a Answer) {
	type obj = map[string]any
	var content []any
	if len(a.Reasoning) > 0 {
		content = append(content, obj{"type": "thinking", "thinking": strings.Join(a.Reasoning, ""), "signature": "fake-signature"})
	}
	if len(a.Text) > 0 {
		content = append(content, obj{"type": "text", "text": strings.Join(a.Text, "")})
	}
	if t := a.Tool; t != nil {
		content = append(content, obj{"type": "tool_use", "id": t.ID, "name": t.Name, "input": t.Input})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(obj{"id": "msg_fake", "type": "message", "role": "assistant", "model": "fake-model",
		"content": content, "stop_reason": stopReason(a), "stop_sequence": nil,
		"usage": obj{"input_tokens": 10, "output_tokens": outputTokens(a)}})
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
}

// Chunks splits text into chunks of about size bytes, on rune boundaries.
func Chunks(text string, size int) []string {
	var out []string
	for len(text) > 0 {
		n := min(size, len(text))
		for n < len(text) && !utf8RuneStart(text[n]) {
			n++
		}
		out = append(out, text[:n])
		text = text[n:]
	}
	return out
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// NumberedAnswer returns a text of about size bytes made of numbered
// tokens ("w000001 w000002 ..."), in chunks of one token each: a client
// that lost, duplicated or reordered a chunk shows a different text.
func NumberedAnswer(size int) []string {
	var out []string
	n := 0
	for total := 0; total < size; n++ {
		tok := fmt.Sprintf("w%06d ", n)
		out = append(out, tok)
		total += len(tok)
	}
	return out
}

// jittered is d scaled by a random factor in [1−j, 1+j].
func jittered(d time.Duration, j float64) time.Duration {
	if j <= 0 {
		return d
	}
	return time.Duration(float64(d) * (1 + j*(2*rand.Float64()-1)))
}
