package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/fakemodel"
	pt "github.com/sluicehq/sluice/internal/provider/providertest"
	"github.com/sluicehq/sluice/model"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var hi = &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentText, Text: "hi"}}}}}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func server(t *testing.T, h http.HandlerFunc) *Provider {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return New(Config{APIKey: "sk-test-secret", BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()})
}

func text(s string) model.Content      { return model.Content{Type: model.ContentText, Text: s} }
func reasoning(s string) model.Content { return model.Content{Type: model.ContentReasoning, Text: s} }
func tool(id, name, input string) model.Content {
	return model.Content{Type: model.ContentToolUse, ID: id, Name: name, Input: json.RawMessage(input)}
}

func TestFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file    string
		content []model.Content
		stop    string
		usage   model.Usage
	}{
		{"chat_tool_call.sse", []model.Content{tool("call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", `{"country":"UK"}`)}, model.StopToolUse, model.Usage{InputTokens: 53, OutputTokens: 15}},
		{"chat_text_after_tool.sse", []model.Content{text("The capital of the UK is London.")}, model.StopEndTurn, model.Usage{InputTokens: 78, OutputTokens: 9}},
		{"chat_text_usage.sse", []model.Content{text("Paris.")}, model.StopEndTurn, model.Usage{InputTokens: 13, OutputTokens: 11}},
		{"deepseek_reasoning_content.sse", []model.Content{reasoning("Compare 9.11 and 9.8: 9.8 = 9.80, and 80 > 11."), text("9.8 is larger than 9.11.")}, model.StopEndTurn, model.Usage{InputTokens: 18, OutputTokens: 64}},
		{"ollama_parallel_tools_repeated_index.sse", []model.Content{tool("call_8f3kq2xa", "get_weather", `{"city":"Paris"}`), tool("call_p1mz7c0d", "get_weather", `{"city":"Tokyo"}`)}, model.StopToolUse, model.Usage{InputTokens: 182, OutputTokens: 41}},
		{"vllm_tool_call_stream.sse", []model.Content{text("Let me check."), tool("chatcmpl-tool-1a2b3c", "get_weather", `{"city": "Paris"}`), tool("chatcmpl-tool-4d5e6f", "get_time", `{}`)}, model.StopToolUse, model.Usage{InputTokens: 212, OutputTokens: 39}},
		{"llamacpp_usage_in_finish_chunk.sse", []model.Content{reasoning("The user greets me. Reply briefly."), text("Hello! 你好 👋")}, model.StopEndTurn, model.Usage{InputTokens: 9, OutputTokens: 12}},
		{"openrouter_reasoning_comments.sse", []model.Content{reasoning("The user wants a haiku."), text("Autumn wind rises\nleaves")}, model.StopEndTurn, model.Usage{InputTokens: 10, OutputTokens: 30, CacheReadInputTokens: 4}},
		{"mistral_thinking_parts.sse", []model.Content{reasoning("Twelve times twelve is 144."), text("12 × 12 = 144")}, model.StopEndTurn, model.Usage{InputTokens: 12, OutputTokens: 48}},
		{"mistral_tool_call.sse", []model.Content{tool("Xq3bN7pLm", "get_weather", `{"city": "Lyon"}`)}, model.StopToolUse, model.Usage{InputTokens: 98, OutputTokens: 19}},
		{"groq_tool_call_x_groq.sse", []model.Content{tool("q7w8e9r0t", "list_open_tickets", `{}`)}, model.StopToolUse, model.Usage{InputTokens: 188, OutputTokens: 14}},
		{"xai_reasoning_tool_call.sse", []model.Content{reasoning("The user wants the time in Oslo."), tool("call_90817263", "get_time", `{"city":"Oslo"}`)}, model.StopToolUse, model.Usage{InputTokens: 5, OutputTokens: 31, CacheReadInputTokens: 300}},
		{"compat_tool_calls_without_ids.sse", []model.Content{text("Checking both."), tool("call_chatcmpl-local-7_1", "read_file", `{"path":"a.txt"}`), tool("call_chatcmpl-local-7_2", "list_dir", `{}`)}, model.StopToolUse, model.Usage{InputTokens: 50, OutputTokens: 30}},
	}
	files, _ := filepath.Glob("testdata/*.sse")
	if len(files) != len(tests) {
		t.Fatalf("%d fixtures, %d cases", len(files), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			raw := fixture(t, tt.file)
			variants := []struct {
				name    string
				body    []byte
				oneByte bool
			}{
				{"whole", raw, false},
				{"one byte", raw, true},
				{"crlf", bytes.ReplaceAll(raw, []byte("\n"), []byte("\r\n")), true},
				{"cr", bytes.ReplaceAll(raw, []byte("\n"), []byte("\r")), false},
			}
			var first []model.Part
			for _, v := range variants {
				p := server(t, func(w http.ResponseWriter, r *http.Request) { fakemodel.ServeSSE(w, v.body, v.oneByte) })
				parts, waits, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
				if err != nil || len(waits) > 0 {
					t.Fatalf("%s: %v after %d retries", v.name, err, len(waits))
				}
				if first == nil {
					first = parts
					r := pt.Accumulate(t, parts)
					if !reflect.DeepEqual(r.Content, tt.content) || r.StopReason != tt.stop || r.Usage != tt.usage {
						got, _ := json.Marshal(r)
						t.Fatalf("got %s", got)
					}
					checkOrder(t, parts)
					continue
				}
				if !reflect.DeepEqual(parts, first) {
					t.Fatalf("%s: parts differ from the whole delivery", v.name)
				}
			}
		})
	}
}

// checkOrder checks the Anthropic shape: message start first, blocks
// numbered in order of appearance, each started once and stopped once,
// message delta and stop last.
func checkOrder(t *testing.T, parts []model.Part) {
	t.Helper()
	if parts[0].Type != model.PartMessageStart || parts[len(parts)-2].Type != model.PartMessageDelta || parts[len(parts)-1].Type != model.PartMessageStop {
		t.Fatalf("message not framed: %v ... %v %v", parts[0].Type, parts[len(parts)-2].Type, parts[len(parts)-1].Type)
	}
	next := 0
	open := map[int]bool{}
	for _, p := range parts {
		switch p.Type {
		case model.PartBlockStart:
			if p.Index != next {
				t.Fatalf("block %d started, want %d", p.Index, next)
			}
			next++
			open[p.Index] = true
		case model.PartBlockDelta:
			if !open[p.Index] {
				t.Fatalf("delta for block %d, which is not open", p.Index)
			}
		case model.PartBlockStop:
			if !open[p.Index] {
				t.Fatalf("block %d stopped twice or never started", p.Index)
			}
			delete(open, p.Index)
		}
	}
	if len(open) > 0 {
		t.Fatalf("blocks left open: %v", open)
	}
}

// chunks builds a stream from chunk deltas (as JSON) and a finish reason.
func chunks(deltas []string, finish string) string {
	var b strings.Builder
	for _, d := range deltas {
		fmt.Fprintf(&b, "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", d)
	}
	fmt.Fprintf(&b, "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":%q}]}\n\ndata: [DONE]\n\n", finish)
	return b.String()
}

func TestToolCallReassembly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		deltas []string
		want   []model.Content
	}{
		{"interleaved parallel fragments", []string{
			`{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":"}}]}`,
			`{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"g","arguments":"{\"y\":"}}]}`,
			`{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}`,
			`{"tool_calls":[{"index":1,"function":{"arguments":"2}"}}]}`,
		}, []model.Content{tool("a", "f", `{"x":1}`), tool("b", "g", `{"y":2}`)}},
		{"id and name repeated on every fragment", []string{
			`{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\""}}]}`,
			`{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":":1}"}}]}`,
		}, []model.Content{tool("a", "f", `{"x":1}`)}},
		{"no ids, no distinct indices", []string{
			`{"tool_calls":[{"index":0,"type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]}`,
			`{"tool_calls":[{"index":0,"type":"function","function":{"name":"f","arguments":"{\"x\":2}"}}]}`,
		}, []model.Content{tool("call_c1_0", "f", `{"x":1}`), tool("call_c1_1", "f", `{"x":2}`)}},
		{"no index at all", []string{
			`{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{"}}]}`,
			`{"tool_calls":[{"function":{"arguments":"}"}}]}`,
		}, []model.Content{tool("a", "f", `{}`)}},
		{"name after the arguments", []string{
			`{"tool_calls":[{"index":0,"id":"a","function":{"arguments":"{\"x\":1}"}}]}`,
			`{"tool_calls":[{"index":0,"function":{"name":"late"}}]}`,
		}, []model.Content{tool("a", "late", `{"x":1}`)}},
		{"arguments as an object", []string{
			`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":{"x":1}}}]}`,
		}, []model.Content{tool("a", "f", `{"x":1}`)}},
		{"zero arguments", []string{
			`{"tool_calls":[{"index":0,"id":"a","function":{"name":"now","arguments":""}}]}`,
		}, []model.Content{tool("a", "now", `{}`)}},
		{"text, reasoning and tool in one chunk", []string{
			`{"reasoning_content":"think","content":"say","tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]}`,
			`{"content":" more"}`,
		}, []model.Content{reasoning("think"), text("say"), tool("a", "f", `{}`), text(" more")}},
		{"alternating reasoning and text", []string{`{"reasoning":"a"}`, `{"content":"b"}`, `{"reasoning":"c"}`, `{"content":"d","refusal":null}`},
			[]model.Content{reasoning("a"), text("b"), reasoning("c"), text("d")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := chunks(tt.deltas, "tool_calls")
			p := server(t, fakemodel.SSE(body))
			parts, err := pt.Attempt(t, p, hi)
			if err != nil {
				t.Fatal(err)
			}
			checkOrder(t, parts)
			if got := pt.Accumulate(t, parts).Content; !reflect.DeepEqual(got, tt.want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(tt.want)
				t.Fatalf("got  %s\nwant %s", g, w)
			}
		})
	}
}

func TestStopReasons(t *testing.T) {
	t.Parallel()
	for finish, want := range map[string]string{"stop": model.StopEndTurn, "length": model.StopMaxTokens, "content_filter": model.StopRefusal, "tool_calls": model.StopToolUse, "something_new": "something_new"} {
		body := chunks([]string{`{"content":"x"}`}, finish)
		p := server(t, fakemodel.SSE(body))
		parts, err := pt.Attempt(t, p, hi)
		if err != nil {
			t.Fatal(err)
		}
		if got := pt.Accumulate(t, parts).StopReason; got != want {
			t.Errorf("%s → %s, want %s", finish, got, want)
		}
	}
}

var okBody = chunks([]string{`{"role":"assistant","content":"Hi"}`}, "stop")

var ok = fakemodel.SSE(okBody)

func TestFailuresRetried(t *testing.T) {
	t.Parallel()
	withoutDone := strings.TrimSuffix(okBody, "data: [DONE]\n\n")
	tests := []struct {
		name  string
		first http.HandlerFunc
		want  error
	}{
		{"no [DONE]", fakemodel.SSE(withoutDone), model.ErrIncomplete},
		{"[DONE] first", fakemodel.SSE("data: [DONE]\n\n"), model.ErrIncomplete},
		{"error chunk mid-stream", fakemodel.SSE(withoutDone[:strings.Index(withoutDone, "\n\n")+2] + `data: {"error":{"message":"Upstream overloaded","code":502}}` + "\n\n"), &model.APIError{}},
		{"finish_reason error", fakemodel.SSE(chunks([]string{`{"content":"x"}`}, "error")), &model.APIError{}},
		{"html page", fakemodel.Page("text/html", "<!doctype html><title>502</title>"), model.ErrNotEventStream},
		{"connection reset", fakemodel.ResetAfter(okBody, 20), nil},
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
			cause := pt.Retries(parts)[0].Err
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
			if r := pt.Accumulate(t, parts); r.Content[0].Text != "Hi" || len(r.Content) != 1 {
				t.Fatalf("%+v", r)
			}
		})
	}
}

func TestErrorAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status   int
		body     string
		retried  bool
		overflow bool
		message  string
	}{
		{401, `{"error":{"message":"Incorrect API key provided: sk-test-***ret.","type":"invalid_request_error","code":"invalid_api_key"}}`, false, false, "check the API key"},
		{404, `{"error":"model \"llama9\" not found, try pulling it first"}`, false, false, "not found, try pulling"},
		{400, `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, false, true, "maximum context length"},
		{400, `{"object":"error","message":"This model's maximum context length is 8192 tokens.","type":"BadRequestError","param":null,"code":400}`, false, true, "8192"},
		{400, `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}`, false, true, "context size"},
		{429, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, true, false, ""},
		{503, `{"error":{"message":"overloaded","type":"server_error"}}`, true, false, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status, tt.message), func(t *testing.T) {
			t.Parallel()
			h, n := fakemodel.Attempts(fakemodel.JSON(tt.status, tt.body), ok)
			p := server(t, h)
			_, _, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
			if tt.retried {
				if err != nil || n.Load() != 2 {
					t.Fatalf("%v after %d requests", err, n.Load())
				}
				return
			}
			if n.Load() != 1 || errors.Is(err, model.ErrContextOverflow) != tt.overflow || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("err = %v after %d requests", err, n.Load())
			}
			if strings.Contains(err.Error(), "sk-test-secret") {
				t.Fatal("the key is in the error")
			}
		})
	}
}

func TestRequest(t *testing.T) {
	t.Parallel()
	for _, official := range []bool{false, true} {
		var body map[string]any
		var header http.Header
		p := server(t, func(w http.ResponseWriter, r *http.Request) {
			header = r.Header
			if r.URL.Path != "/v1/chat/completions" {
				t.Errorf("path %s", r.URL.Path)
			}
			json.NewDecoder(r.Body).Decode(&body)
			ok(w, r)
		})
		p.official = official
		req := &model.Request{
			Model: "m1", System: "be brief", MaxTokens: 500, ThinkingBudget: 1000,
			Tools: []model.Tool{{Name: "Bash", Description: "run", InputSchema: json.RawMessage(`{"type":"object"}`)}},
			Messages: []model.Message{
				{Role: model.RoleUser, Content: []model.Content{text("list"), text("files")}},
				{Role: model.RoleAssistant, Content: []model.Content{
					reasoning("hidden"), text("Sure"),
					{Type: model.ContentRaw, Raw: json.RawMessage(`{"type":"server_tool_use"}`)},
					tool("call_1", "Bash", `{"command":"ls"}`), {Type: model.ContentToolUse, ID: "call_2", Name: "now"},
				}},
				{Role: model.RoleUser, Content: []model.Content{
					{Type: model.ContentToolResult, ID: "call_1", Text: "a\nb"},
					{Type: model.ContentToolResult, ID: "call_2", Text: "boom", IsError: true},
					text("thanks"),
				}},
				{Role: model.RoleAssistant, Content: []model.Content{tool("call_3", "Bash", `{}`)}},
				{Role: model.RoleUser, Content: []model.Content{text("what is this?"), {Type: model.ContentImage, MediaType: "image/png", Data: "iVBORw0KGgo="}}},
			},
		}
		if _, err := pt.Attempt(t, p, req); err != nil {
			t.Fatal(err)
		}
		if header.Get("Authorization") != "Bearer sk-test-secret" {
			t.Fatalf("headers %v", header)
		}
		maxField := `"max_tokens":500`
		if official {
			maxField = `"max_completion_tokens":500`
		}
		want := `{"model":"m1","stream":true,"stream_options":{"include_usage":true},` + maxField + `,
			"tools":[{"type":"function","function":{"name":"Bash","description":"run","parameters":{"type":"object"}}}],
			"messages":[
				{"role":"system","content":"be brief"},
				{"role":"user","content":"list\n\nfiles"},
				{"role":"assistant","content":"Sure","tool_calls":[
					{"id":"call_1","type":"function","function":{"name":"Bash","arguments":"{\"command\":\"ls\"}"}},
					{"id":"call_2","type":"function","function":{"name":"now","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"call_1","content":"a\nb"},
				{"role":"tool","tool_call_id":"call_2","content":"Error: boom"},
				{"role":"user","content":"thanks"},
				{"role":"assistant","content":null,"tool_calls":[{"id":"call_3","type":"function","function":{"name":"Bash","arguments":"{}"}}]},
				{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}`
		var wantBody map[string]any
		if err := json.Unmarshal([]byte(want), &wantBody); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(body, wantBody) {
			got, _ := json.Marshal(body)
			t.Fatalf("official=%v body:\n%s", official, got)
		}
	}
	if New(Config{}).official != true || New(Config{BaseURL: "http://localhost:11434/v1"}).official {
		t.Fatal("max_completion_tokens chosen for the wrong host")
	}
}

func TestComplete(t *testing.T) {
	t.Parallel()
	var streamed, completed atomic.Int32
	p := server(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Stream bool }
		json.NewDecoder(r.Body).Decode(&req)
		if req.Stream {
			streamed.Add(1)
			fakemodel.ServeSSE(w, []byte(`data: {"error":{"message":"overloaded"}}`+"\n\n"), false)
			return
		}
		completed.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-9","object":"chat.completion","model":"deepseek-reasoner","choices":[{"index":0,"message":{"role":"assistant","content":"Done.","reasoning_content":"ok","tool_calls":[{"id":"call_a","type":"function","function":{"name":"Bash","arguments":"{\"command\":\"ls\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":20,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":8}}}`)
	})
	parts, _, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if streamed.Load() != 3 || completed.Load() != 1 {
		t.Fatalf("%d streams, %d non-streaming", streamed.Load(), completed.Load())
	}
	r := pt.Accumulate(t, parts)
	want := []model.Content{reasoning("ok"), text("Done."), tool("call_a", "Bash", `{"command":"ls"}`)}
	if !reflect.DeepEqual(r.Content, want) || r.StopReason != model.StopToolUse || r.Usage != (model.Usage{InputTokens: 12, OutputTokens: 5, CacheReadInputTokens: 8}) || r.ID != "chatcmpl-9" {
		got, _ := json.Marshal(r)
		t.Fatalf("got %s", got)
	}
}

func TestEarlyBreakReleasesConnection(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	stall := fakemodel.Stall(fakemodel.SSE(strings.TrimSuffix(okBody, "data: [DONE]\n\n")), nil)
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

func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.sse")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 4000)])
	}
	f.Add([]byte(chunks([]string{`{"tool_calls":[{"index":0,"function":{"name":"f"}},{"function":{"arguments":"{}"}}]}`, `{"content":"x","tool_calls":[{"id":"z","index":0}]}`}, "stop")))
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		var acc model.Accumulator
		decode(bytes.NewReader(data), 1<<12, func(e *model.APIError) error { return e }, func(p model.Part, err error) bool {
			n++
			// Every part comes from some bytes, but a finish can stop
			// every open block and add "{}" to each tool call.
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

// An effort level (--effort) is sent as reasoning_effort; the levels above
// high that not every server knows are asked as high.
func TestReasoningEffort(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ effort, want string }{
		{"", ""}, {"low", "low"}, {"medium", "medium"}, {"high", "high"}, {"xhigh", "high"}, {"max", "high"},
	} {
		var body struct {
			ReasoningEffort *string `json:"reasoning_effort"`
		}
		p := server(t, func(w http.ResponseWriter, r *http.Request) {
			json.NewDecoder(r.Body).Decode(&body)
			ok(w, r)
		})
		req := *hi
		req.Effort = tc.effort
		for _, err := range p.Stream(t.Context(), &req) {
			if err != nil {
				t.Fatal(err)
			}
		}
		got := ""
		if body.ReasoningEffort != nil {
			got = *body.ReasoningEffort
		}
		if got != tc.want || (tc.want == "" && body.ReasoningEffort != nil) {
			t.Errorf("effort %q: reasoning_effort %v, want %q", tc.effort, body.ReasoningEffort, tc.want)
		}
	}
}
