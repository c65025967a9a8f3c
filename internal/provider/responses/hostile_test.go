package responses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/fakemodel"
	pt "github.com/sluicehq/sluice/internal/provider/providertest"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
)

// Broken or hostile servers get a bounded, clear answer: never a hang,
// never unbounded memory, never success reported for a failure.

var okBody = stream(completed,
	`{"type":"response.output_item.added","output_index":0,"item":{"type":"message","content":[]}}`,
	`{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"Hi"}`,
	`{"type":"response.output_item.done","output_index":0,"item":{"type":"message","content":[{"type":"output_text","text":"Hi"}]}}`)

var ok = fakemodel.SSE(okBody)

// head is okBody up to (not including) the event that holds marker.
func head(marker string) string {
	i := strings.Index(okBody, marker)
	return okBody[:strings.LastIndex(okBody[:i], "event: ")]
}

// Each failure is retried, the failed attempt is voided (PartRetry) before
// the next one starts, and the answer is the second attempt's alone.
func TestFailuresRetried(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		first http.HandlerFunc
		want  error
	}{
		{"no final event", fakemodel.SSE(head("response.completed")), model.ErrIncomplete},
		{"error event after 200, mid-stream", fakemodel.SSE(head("response.output_item.done") + "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"The server had an error while processing your request.\"}\n\n"), &model.APIError{}},
		{"response.failed after 200", fakemodel.SSE(head("response.output_item.done") + "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}}\n\n"), &model.APIError{}},
		{"200 with an HTML page", fakemodel.Page("text/html", "<!doctype html><title>502 Bad Gateway</title>"), model.ErrNotEventStream},
		{"connection reset mid-stream", fakemodel.ResetAfter(okBody, len(head("response.output_text.delta"))+40), nil},
		{"503", fakemodel.JSON(503, `{"error":{"message":"The engine is currently overloaded","type":"server_error"}}`), &model.APIError{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, n := fakemodel.Attempts(tt.first, ok)
			p := server(t, h)
			parts, waits, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
			if err != nil || n.Load() != 2 || len(waits) != 1 {
				t.Fatalf("%v after %d requests", err, n.Load())
			}
			retries := pt.Retries(parts)
			cause := retries[0].Err
			switch want := tt.want.(type) {
			case nil:
			case *model.APIError:
				if !errors.As(cause, &want) {
					t.Fatalf("cause %v", cause)
				}
			default:
				if !errors.Is(cause, want) {
					t.Fatalf("cause %v, want %v", cause, want)
				}
			}
			// What the consumer keeps after the retry is the second
			// attempt only: "Hi" once.
			if r := pt.Accumulate(t, parts); len(r.Content) != 1 || r.Content[0].Text != "Hi" {
				t.Fatalf("%+v", r)
			}
		})
	}
}

// A 429 waits as long as retry-after asks.
func TestRateLimitRetryAfter(t *testing.T) {
	t.Parallel()
	h, n := fakemodel.Attempts(fakemodel.JSON(429, `{"error":{"message":"Rate limit reached for gpt-5","type":"requests","code":"rate_limit_exceeded"}}`, "retry-after", "7"), ok)
	p := server(t, h)
	_, waits, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
	if err != nil || n.Load() != 2 || len(waits) != 1 || waits[0] != 7*time.Second {
		t.Fatalf("%v after %d requests, waits %v", err, n.Load(), waits)
	}
}

// Answers that would fail the same way again are not retried; a context
// overflow says so, for the agent to compact.
func TestErrorAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status   int
		body     string
		overflow bool
		message  string
	}{
		{401, `{"error":{"message":"Incorrect API key provided: sk-test-***ret.","type":"invalid_request_error","code":"invalid_api_key"}}`, false, "check the API key"},
		{400, `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`, true, "context window"},
		{400, `{"error":{"message":"Unsupported parameter: 'reasoning.effort' is not supported with this model.","type":"invalid_request_error","param":"reasoning.effort","code":"unsupported_parameter"}}`, false, "reasoning.effort"},
		{200, "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"context_length_exceeded\",\"message\":\"Your input exceeds the context window of this model.\"}}}\n\n", true, "context window"},
		{200, "event: error\ndata: {\"type\":\"error\",\"code\":\"insufficient_quota\",\"message\":\"You exceeded your current quota\"}\n\n", false, "quota"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status, tt.message), func(t *testing.T) {
			t.Parallel()
			h, n := fakemodel.Attempts(func(w http.ResponseWriter, r *http.Request) {
				if tt.status == 200 {
					fakemodel.ServeSSE(w, []byte(tt.body), false)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}, ok)
			p := server(t, h)
			_, _, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
			if err == nil || n.Load() != 1 || errors.Is(err, model.ErrContextOverflow) != tt.overflow || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("err = %v after %d requests", err, n.Load())
			}
			if strings.Contains(err.Error(), "sk-test-secret") {
				t.Fatal("the key is in the error")
			}
		})
	}
}

// A stream that stalls after its first events is reported stalled, then
// given up at the idle timeout and retried.
func TestStallTimesOut(t *testing.T) {
	t.Parallel()
	stalled := fakemodel.Stall(fakemodel.SSE(head("response.output_text.delta")), nil)
	h, n := fakemodel.Attempts(stalled, ok)
	p := server(t, h)
	clock := modeltest.NewClock(time.Unix(0, 0))
	opts := model.StreamOptions{Clock: clock, StallWarning: 10 * time.Second, IdleTimeout: time.Minute,
		Sleep: func(ctx context.Context, d time.Duration) error { return nil }}
	next, stop := iter.Pull2(model.Stream(t.Context(), p, hi, opts))
	defer stop()
	var got []model.PartType
	var rest []model.Part
	retried := false
	for {
		part, err, more := next()
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			break
		}
		if retried {
			rest = append(rest, part)
			continue
		}
		got = append(got, part.Type)
		switch part.Type {
		case model.PartMessageStart:
			go func() {
				clock.WaitArmed(1)
				clock.Advance(15 * time.Second)
				clock.WaitArmed(1)
				clock.Advance(time.Minute)
			}()
		case model.PartRetry:
			if !errors.Is(part.Retry.Err, model.ErrIdleTimeout) {
				t.Fatalf("retry cause %v", part.Retry.Err)
			}
			retried = true
		}
	}
	if !reflect.DeepEqual(got, []model.PartType{model.PartMessageStart, model.PartStalled, model.PartRetry}) {
		t.Fatalf("parts %v", got)
	}
	if r := pt.Accumulate(t, rest); n.Load() != 2 || r.Content[0].Text != "Hi" {
		t.Fatalf("%d requests, %+v", n.Load(), r)
	}
}

// After repeated streaming failures the non-streaming request is tried;
// its response object becomes the same parts.
func TestComplete(t *testing.T) {
	t.Parallel()
	var streamed, completes atomic.Int32
	p := server(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Stream bool }
		json.NewDecoder(r.Body).Decode(&req)
		if req.Stream {
			streamed.Add(1)
			fakemodel.ServeSSE(w, []byte("event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"overloaded\"}\n\n"), false)
			return
		}
		completes.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"resp_9","object":"response","status":"completed","model":"gpt-5","output":[
			{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Plan."}],"encrypted_content":"enc"},
			{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Done.","annotations":[]}]},
			{"id":"fc_1","type":"function_call","call_id":"call_a","name":"Bash","arguments":"{\"command\":\"ls\"}"}],
			"usage":{"input_tokens":20,"input_tokens_details":{"cached_tokens":8},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":2}}}`)
	})
	parts, _, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if streamed.Load() != 3 || completes.Load() != 1 {
		t.Fatalf("%d streams, %d non-streaming", streamed.Load(), completes.Load())
	}
	r := pt.Accumulate(t, parts)
	want(t, r.Content, []model.Content{reasoning("Plan.", "enc"), text("Done."), tool("call_a", "Bash", `{"command":"ls"}`)})
	if r.StopReason != model.StopToolUse || r.Usage != (model.Usage{InputTokens: 12, OutputTokens: 5, CacheReadInputTokens: 8}) || r.ID != "resp_9" {
		t.Fatalf("%+v", r)
	}
	for _, body := range []string{`{}`, `{"id":"resp_1"}`, `[]`} {
		p := server(t, fakemodel.JSON(http.StatusOK, body))
		if _, err := p.Complete(t.Context(), hi); !errors.Is(err, model.ErrMalformedEvent) {
			t.Fatalf("%s: err = %v", body, err)
		}
	}
}

func TestEarlyBreakReleasesConnection(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	stall := fakemodel.Stall(fakemodel.SSE(head("response.completed")), nil)
	p := server(t, func(w http.ResponseWriter, r *http.Request) {
		stall(w, r)
		close(gone)
	})
	for part, err := range model.Stream(t.Context(), p, hi, model.StreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if part.Type == model.PartBlockDelta {
			break
		}
	}
	<-gone
}

func TestConfigHidesKey(t *testing.T) {
	t.Parallel()
	c := Config{APIKey: "sk-secret-1"}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c)} {
		if strings.Contains(s, "secret") {
			t.Fatalf("key printed: %s", s)
		}
	}
}

// The request is stateless (store false) and carries the whole context as
// input items in the shapes the API takes (and Codex CLI sends):
// reasoning with its encrypted content, calls with their call_id, results
// as function_call_output.
func TestRequest(t *testing.T) {
	t.Parallel()
	var body map[string]any
	var header http.Header
	var path string
	p := server(t, func(w http.ResponseWriter, r *http.Request) {
		header, path, body = r.Header, r.URL.Path, nil
		json.NewDecoder(r.Body).Decode(&body)
		ok(w, r)
	})
	req := &model.Request{
		Model: "gpt-5-codex", System: "be brief", MaxTokens: 500, Effort: "high",
		Tools: []model.Tool{{Name: "Bash", Description: "run", InputSchema: json.RawMessage(`{"type":"object"}`)}, {Name: "now"}},
		Messages: []model.Message{
			{Role: model.RoleUser, Content: []model.Content{text("list"), {Type: model.ContentImage, MediaType: "image/png", Data: "iVBORw0KGgo="}}},
			{Role: model.RoleAssistant, Content: []model.Content{
				reasoning("Plan: ls.", "gAAAA-enc-1"), text("Sure"),
				{Type: model.ContentRaw, Name: "web_search_call", Raw: json.RawMessage(`{"type":"web_search_call","id":"ws_1"}`)},
				tool("call_1", "Bash", `{"command":"ls"}`), {Type: model.ContentToolUse, ID: "call_2", Name: "now"},
			}},
			{Role: model.RoleUser, Content: []model.Content{
				{Type: model.ContentToolResult, ID: "call_1", Text: "a\nb"},
				{Type: model.ContentToolResult, ID: "call_2", Text: "boom", IsError: true},
				text("thanks"),
			}},
			{Role: model.RoleAssistant, Content: []model.Content{reasoning("another provider's", ""), reasoning("", "gAAAA-enc-2"), text("Done.")}},
		},
	}
	if _, err := pt.Attempt(t, p, req); err != nil {
		t.Fatal(err)
	}
	if header.Get("Authorization") != "Bearer sk-test-secret" || path != "/v1/responses" || header.Get("Accept") != "text/event-stream" {
		t.Fatalf("%s %v", path, header)
	}
	wantBody := `{"model":"gpt-5-codex","instructions":"be brief","max_output_tokens":500,"store":false,"stream":true,
		"include":["reasoning.encrypted_content"],"reasoning":{"effort":"high","summary":"auto"},"tool_choice":"auto",
		"tools":[{"type":"function","name":"Bash","description":"run","parameters":{"type":"object"}},
			{"type":"function","name":"now","parameters":{"type":"object","properties":{}}}],
		"input":[
			{"type":"message","role":"user","content":[{"type":"input_text","text":"list"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}]},
			{"type":"reasoning","summary":[{"type":"summary_text","text":"Plan: ls."}],"encrypted_content":"gAAAA-enc-1"},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Sure"}]},
			{"type":"function_call","call_id":"call_1","name":"Bash","arguments":"{\"command\":\"ls\"}"},
			{"type":"function_call","call_id":"call_2","name":"now","arguments":"{}"},
			{"type":"function_call_output","call_id":"call_1","output":"a\nb"},
			{"type":"function_call_output","call_id":"call_2","output":"Error: boom"},
			{"type":"message","role":"user","content":[{"type":"input_text","text":"thanks"}]},
			{"type":"reasoning","summary":[],"encrypted_content":"gAAAA-enc-2"},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]}]}`
	var w map[string]any
	if err := json.Unmarshal([]byte(wantBody), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(body, w) {
		got, _ := json.Marshal(body)
		t.Fatalf("body:\n%s", got)
	}

	// A model that does not reason is asked without reasoning or
	// encrypted content, which it would refuse.
	plain := *hi
	plain.Model = "gpt-4.1"
	if _, err := pt.Attempt(t, p, &plain); err != nil {
		t.Fatal(err)
	}
	if _, has := body["reasoning"]; has || body["include"] != nil || body["store"] != false {
		t.Fatalf("gpt-4.1 body %v", body)
	}
}

// A tool turn round trip: the answer's reasoning (with its encrypted
// content) and function call, kept as the agent keeps a response, go back
// in the next request beside the tool's result.
func TestToolRoundTrip(t *testing.T) {
	t.Parallel()
	var bodies []map[string]any
	h, _ := fakemodel.Attempts(
		func(w http.ResponseWriter, r *http.Request) {
			var b map[string]any
			json.NewDecoder(r.Body).Decode(&b)
			bodies = append(bodies, b)
			fakemodel.ServeSSE(w, fixture(t, "encrypted_reasoning_tool_call.sse"), false)
		},
		func(w http.ResponseWriter, r *http.Request) {
			var b map[string]any
			json.NewDecoder(r.Body).Decode(&b)
			bodies = append(bodies, b)
			fakemodel.ServeSSE(w, fixture(t, "codex_max_final_text.sse"), false)
		})
	p := server(t, h)
	req := &model.Request{Model: "gpt-5.1-codex-max", Messages: []model.Message{{Role: model.RoleUser, Content: []model.Content{text("12+7, then ×3, then ×10")}}}}
	parts, _, err := pt.StreamAll(t, p, req, model.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := pt.Accumulate(t, parts)
	call := first.Content[1]
	req.Messages = append(req.Messages,
		model.Message{Role: model.RoleAssistant, Content: first.Content},
		model.Message{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentToolResult, ID: call.ID, Text: "19"}}})
	parts, _, err = pt.StreamAll(t, p, req, model.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := pt.Accumulate(t, parts); r.Content[0].Text != "The final result is **570**." {
		t.Fatalf("%+v", r)
	}
	input := bodies[1]["input"].([]any)
	if len(input) != 4 {
		t.Fatalf("input %v", input)
	}
	rs := input[1].(map[string]any)
	enc, _ := rs["encrypted_content"].(string)
	if rs["type"] != "reasoning" || !strings.HasPrefix(enc, "gAAAAABpPDIVOKrs") || len(enc) != len(first.Content[0].Signature) || rs["id"] != nil ||
		rs["summary"].([]any)[0].(map[string]any)["text"] != first.Content[0].Text {
		t.Fatalf("reasoning item %v", rs)
	}
	fc := input[2].(map[string]any)
	if !reflect.DeepEqual(fc, map[string]any{"type": "function_call", "call_id": "call_AB6AaRZ1FYZB2RwS6A5vbdqn", "name": "calculator", "arguments": `{"a":12,"b":7,"op":"add"}`}) {
		t.Fatalf("function call %v", fc)
	}
	if out := input[3].(map[string]any); !reflect.DeepEqual(out, map[string]any{"type": "function_call_output", "call_id": "call_AB6AaRZ1FYZB2RwS6A5vbdqn", "output": "19"}) {
		t.Fatalf("output %v", out)
	}
}

// A built-in tool's progress events are the server working: a long web
// search or code run outlives the idle timeout without a retry, though no
// content comes until it is done.
func TestBuiltinToolProgressKeepsAlive(t *testing.T) {
	t.Parallel()
	tick, finish := make(chan struct{}), make(chan struct{})
	begin := stream("", `{"type":"response.output_item.added","output_index":0,"item":{"id":"ci_1","type":"code_interpreter_call","status":"in_progress","code":""}}`)
	progress := "event: response.code_interpreter_call.interpreting\ndata: {\"type\":\"response.code_interpreter_call.interpreting\",\"output_index\":0,\"item_id\":\"ci_1\"}\n\n"
	end := strings.TrimPrefix(stream(completed,
		`{"type":"response.output_item.done","output_index":0,"item":{"id":"ci_1","type":"code_interpreter_call","status":"completed","code":"import time; time.sleep(300)"}}`,
		`{"type":"response.output_text.delta","output_index":1,"content_index":0,"delta":"Slept."}`), strings.SplitAfter(stream(""), "\n\n")[0])
	h, n := fakemodel.Attempts(func(w http.ResponseWriter, r *http.Request) {
		fakemodel.ServeSSE(w, []byte(begin), false)
		w.(http.Flusher).Flush()
		for {
			select {
			case <-tick:
				io.WriteString(w, progress)
				w.(http.Flusher).Flush()
			case <-finish:
				io.WriteString(w, end)
				return
			case <-r.Context().Done():
				return
			}
		}
	}, ok)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	reads := make(chan string, 1024)
	client := srv.Client()
	client.Transport = pt.NotifyTransport{RT: client.Transport, Reads: reads}
	p := New(Config{APIKey: "sk-test-secret", BaseURL: srv.URL + "/v1", HTTPClient: client})
	clock := modeltest.NewClock(time.Unix(0, 0))
	opts := model.StreamOptions{Clock: clock, StallWarning: -1, IdleTimeout: time.Minute}
	go func() {
		// Five minutes of progress, an event each 20 s. The decoder reads
		// an event only once it has handled the one before, so when the
		// clock moves the last touch is at most two steps old: 40 s, less
		// than the idle timeout.
		for range 15 {
			tick <- struct{}{}
			for !strings.Contains(<-reads, "interpreting") {
			}
			clock.WaitArmed(1)
			clock.Advance(20 * time.Second)
		}
		close(finish)
	}()
	parts, waits, err := pt.StreamAll(t, p, hi, opts)
	if err != nil || len(waits) > 0 || n.Load() != 1 {
		for _, r := range pt.Retries(parts) {
			t.Logf("retry: %v", r.Err)
		}
		t.Fatalf("err %v after %d requests", err, n.Load())
	}
	if r := pt.Accumulate(t, parts); len(r.Content) != 2 || r.Content[1].Text != "Slept." {
		t.Fatalf("%+v", r.Content)
	}
}
