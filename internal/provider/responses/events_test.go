package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/model"
)

// Shapes the recordings do not hold: items given only whole, events of
// items the server never announced, refusals, incomplete responses,
// interleaved items, unknown events.
func TestEventShapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    string
		content []model.Content
		stop    string
	}{
		{"items only whole, in their done events", stream(completed,
			`{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"A"},{"type":"summary_text","text":"B"}],"encrypted_content":"enc1"}}`,
			`{"type":"response.output_item.done","output_index":1,"item":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello","annotations":[]},{"type":"refusal","refusal":"No."}]}}`,
			`{"type":"response.output_item.done","output_index":2,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"f","arguments":"{\"x\":1}"}}`,
		), []model.Content{reasoning("A\n\nB", "enc1"), text("Hello"), text("No."), tool("call_1", "f", `{"x":1}`)}, model.StopToolUse},
		{"output only in response.completed", stream(`{"type":"response.completed","response":{"status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Whole"}]}]}}`),
			[]model.Content{text("Whole")}, model.StopEndTurn},
		{"deltas, then done texts that repeat them", stream(completed,
			`{"type":"response.output_item.added","output_index":0,"item":{"type":"message","content":[]}}`,
			`{"type":"response.content_part.added","output_index":0,"content_index":0,"part":{"type":"output_text","text":"ignored"}}`,
			`{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"Hel"}`,
			`{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"lo"}`,
			`{"type":"response.output_text.done","output_index":0,"content_index":0,"text":"Hello"}`,
			`{"type":"response.content_part.done","output_index":0,"content_index":0,"part":{"type":"output_text","text":"Hello"}}`,
			`{"type":"response.output_item.done","output_index":0,"item":{"type":"message","content":[{"type":"output_text","text":"Hello"}]}}`,
		), []model.Content{text("Hello")}, model.StopEndTurn},
		{"a refusal", stream(completed,
			`{"type":"response.output_item.added","output_index":0,"item":{"type":"message","content":[]}}`,
			`{"type":"response.content_part.added","output_index":0,"content_index":0,"part":{"type":"refusal","refusal":""}}`,
			`{"type":"response.refusal.delta","output_index":0,"content_index":0,"delta":"I can't help"}`,
			`{"type":"response.refusal.done","output_index":0,"content_index":0,"refusal":"I can't help"}`,
		), []model.Content{text("I can't help")}, model.StopRefusal},
		{"incomplete at max_output_tokens", stream(`{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}`,
			`{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"Cut sh"}`,
		), []model.Content{text("Cut sh")}, model.StopMaxTokens},
		{"incomplete by the content filter", stream(`{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"content_filter"}}}`),
			[]model.Content{}, model.StopRefusal},
		{"interleaved reasoning and message, unknown events", stream(completed,
			`{"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","summary":[]}}`,
			`{"type":"response.reasoning_summary_part.added","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}}`,
			`{"type":"response.reasoning_summary_text.delta","output_index":0,"summary_index":0,"delta":"think"}`,
			`{"type":"response.something_new","output_index":0,"delta":"ignored"}`,
			`{"type":"response.output_item.added","output_index":1,"item":{"type":"message","content":[]}}`,
			`{"type":"response.output_text.delta","output_index":1,"content_index":0,"delta":"say"}`,
			`{"type":"response.reasoning_summary_part.added","output_index":0,"summary_index":1,"part":{"type":"summary_text","text":""}}`,
			`{"type":"response.reasoning_summary_text.delta","output_index":0,"summary_index":1,"delta":"more"}`,
			`{"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","summary":[{"type":"summary_text","text":"think"},{"type":"summary_text","text":"more"}],"encrypted_content":"e"}}`,
			`{"type":"response.output_text.annotation.added","output_index":1,"content_index":0,"annotation":{"type":"url_citation"}}`,
		), []model.Content{reasoning("think\n\nmore", "e"), text("say")}, model.StopEndTurn},
		{"reasoning without summary or encrypted content adds nothing", stream(completed,
			`{"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","summary":[]}}`,
			`{"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","summary":[]}}`,
			`{"type":"response.output_text.delta","output_index":1,"content_index":0,"delta":"ok"}`,
		), []model.Content{text("ok")}, model.StopEndTurn},
		{"parallel calls, arguments whole in done, zero-argument call, no call_id", stream(completed,
			`{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"call_a","name":"f","arguments":""}}`,
			`{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_b","name":"now","arguments":""}}`,
			`{"type":"response.function_call_arguments.done","output_index":0,"arguments":"{\"x\":1}"}`,
			`{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","id":"fc_b","name":"now","arguments":""}}`,
			`{"type":"response.function_call_arguments.delta","output_index":2,"delta":"{\"y\""}`,
			`{"type":"response.function_call_arguments.delta","output_index":2,"delta":":2}"}`,
			`{"type":"response.output_item.done","output_index":2,"item":{"type":"function_call","call_id":"call_c","name":"g","arguments":"{\"y\":2}"}}`,
			`{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","call_id":"call_a","name":"f","arguments":"{\"x\":1}"}}`,
		), []model.Content{tool("call_a", "f", `{"x":1}`), tool("fc_b", "now", `{}`), tool("call_c", "g", `{"y":2}`)}, model.StopToolUse},
		{"no response.created, [DONE] after the end", strings.TrimPrefix(stream(completed, `{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"x"}`), strings.SplitAfter(stream(""), "\n\n")[0]) + "data: [DONE]\n\n",
			[]model.Content{text("x")}, model.StopEndTurn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			parts, err := decodeAll(strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			checkOrder(t, parts)
			var acc model.Accumulator
			for _, p := range parts {
				if err := acc.Add(p); err != nil {
					t.Fatal(err)
				}
			}
			r := acc.Response()
			want(t, r.Content, tt.content)
			if r.StopReason != tt.stop {
				t.Fatalf("stop %q, want %q", r.StopReason, tt.stop)
			}
		})
	}
}

// A built-in tool's block starts as the server announced the item and
// ends with the finished item's fields; its progress events are signs of
// life, not content.
func TestBuiltinToolItem(t *testing.T) {
	t.Parallel()
	body := stream(completed,
		`{"type":"response.output_item.added","output_index":0,"item":{"id":"ws_1","type":"web_search_call","status":"in_progress"}}`,
		`{"type":"response.web_search_call.searching","output_index":0,"item_id":"ws_1"}`,
		`{"type":"response.output_item.done","output_index":0,"item":{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","query":"q"}}}`,
	)
	parts, err := decodeAll(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if parts[1].Type != model.PartBlockStart || parts[1].Block != model.BlockRaw || parts[1].Name != "web_search_call" || !strings.Contains(string(parts[1].Raw), "in_progress") {
		t.Fatalf("start %+v", parts[1])
	}
	var acc model.Accumulator
	for _, p := range parts {
		acc.Add(p)
	}
	var item map[string]any
	json.Unmarshal(acc.Response().Content[0].Raw, &item)
	if item["status"] != "completed" || item["type"] != "web_search_call" || item["id"] != "ws_1" {
		t.Fatalf("item %v", item)
	}
}

// Streams that are broken or lie fail with a clear error, never a
// success.
func TestBrokenStreams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want error
	}{
		{"no final event", stream("", `{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"x"}`), model.ErrIncomplete},
		{"nothing", "", model.ErrNotEventStream},
		{"cut inside an event", stream("") + `data: {"type":"response.output_text.delta","output_index":0,"del`, model.ErrIncomplete},
		{"bad JSON mid-stream", stream(completed, `{"type":"response.output_text.delta",,}`), model.ErrMalformedEvent},
		{"text for a function call", stream(completed,
			`{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"c","name":"f"}}`,
			`{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"x"}`), model.ErrMalformedEvent},
		{"a call never named", stream(completed, `{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","call_id":"c"}}`), model.ErrMalformedEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			parts, err := decodeAll(strings.NewReader(tt.body))
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if len(parts) > 0 && parts[len(parts)-1].Type == model.PartMessageStop {
				t.Fatal("the failure ended like a success")
			}
		})
	}
}

// response.failed and error events are API errors with the server's code
// and message, retryable as the code says.
func TestStreamErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, typ, message string
		retryable                bool
		retryAfter               string
	}{
		{"response.failed, server error", stream("", `{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"The server had an error"}}}`), "server_error", "The server had an error", true, ""},
		{"response.failed, rate limit", stream("", `{"type":"response.failed","response":{"status":"failed","error":{"code":"rate_limit_exceeded","message":"Rate limit reached for gpt-5. Please try again in 1.898s."}}}`), "rate_limit_exceeded", "Rate limit reached", true, "1.898s"},
		{"response.failed, invalid prompt", stream("", `{"type":"response.failed","response":{"status":"failed","error":{"code":"invalid_prompt","message":"Invalid prompt"}}}`), "invalid_prompt", "Invalid prompt", false, ""},
		{"response.failed, no error object", stream("", `{"type":"response.failed","response":{"status":"failed","error":null}}`), "", "the response failed", true, ""},
		{"completed with status failed", stream(`{"type":"response.completed","response":{"status":"failed","error":{"code":"server_error","message":"x"}}}`), "server_error", "x", true, ""},
		{"error event", stream("", `{"type":"error","code":"server_is_overloaded","message":"Overloaded","param":null,"sequence_number":3}`), "server_is_overloaded", "Overloaded", true, ""},
		{"error event, nested", stream("", `{"type":"error","error":{"type":"insufficient_quota","code":"insufficient_quota","message":"You exceeded your current quota"}}`), "insufficient_quota", "You exceeded your current quota", false, ""},
		{"error event, numeric code", stream("", `{"type":"error","code":502,"message":"Bad gateway"}`), "502", "Bad gateway", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := decodeAll(strings.NewReader(tt.body))
			var e *model.APIError
			if !errors.As(err, &e) || e.Type != tt.typ || !strings.Contains(e.Message, tt.message) || e.Retryable() != tt.retryable {
				t.Fatalf("err = %#v", err)
			}
			if tt.retryAfter != "" && e.RetryAfter.String() != tt.retryAfter {
				t.Fatalf("retry after %v", e.RetryAfter)
			}
		})
	}
}

// The recorded failure (an error event, then response.failed) is the
// error event's API error.
func TestRecordedError(t *testing.T) {
	t.Parallel()
	_, err := decodeAll(bytes.NewReader(fixture(t, "error_insufficient_quota.sse")))
	var e *model.APIError
	if !errors.As(err, &e) || e.Type != "insufficient_quota" || !strings.HasPrefix(e.Message, "You exceeded your current quota") || e.Retryable() {
		t.Fatalf("err = %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.sse")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 4000)])
		f.Add(b[max(len(b)-4000, 0):])
	}
	f.Add([]byte(stream(completed,
		`{"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","summary":[{"type":"summary_text","text":"A"}],"encrypted_content":"e"}}`,
		`{"type":"response.function_call_arguments.delta","output_index":1,"delta":"{"}`,
		`{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","call_id":"c","name":"f"}}`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		var acc model.Accumulator
		decode(bytes.NewReader(data), 1<<12, func(e *model.APIError) error { return e }, func(p model.Part, err error) bool {
			n++
			// Every part comes from some bytes; an item's done can stop
			// its block after a delta.
			if n > 4*len(data)+4 {
				t.Fatalf("%d parts from %d bytes", n, len(data))
			}
			if err == nil {
				if aerr := acc.Add(p); aerr != nil {
					t.Fatalf("part %+v does not fit: %v", p, aerr)
				}
			}
			return true
		})
		if _, err := json.Marshal(acc.Response()); err != nil {
			t.Fatalf("accumulated response does not marshal: %v", err)
		}
	})
}
