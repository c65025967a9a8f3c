package anthropic

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/internal/fakemodel"
	pt "github.com/sluicehq/sluice/internal/provider/providertest"
	"github.com/sluicehq/sluice/model"
)

// Stream shapes that servers send besides the usual one, written from
// their documented form (testdata/shapes/README.md): each goes through a
// local server and model.Stream, and must give the whole response on the
// first attempt.
func TestShapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file    string
		content []model.Content
		stop    string
	}{
		{"message_start_whole.sse", []model.Content{
			{Type: model.ContentText, Text: "I'll check the weather in Paris."},
			{Type: model.ContentRaw, Name: "code_execution_tool_result", Raw: json.RawMessage(`{"type":"code_execution_tool_result","tool_use_id":"srvtoolu_whole_01","content":{"type":"code_execution_result","stdout":"18.5\n","stderr":"","return_code":0,"content":[]}}`)},
			{Type: model.ContentToolUse, ID: "toolu_whole_01", Name: "get_weather", Input: json.RawMessage(`{"city":"Paris","unit":"celsius"}`),
				Caller: json.RawMessage(`{"type":"code_execution_20250825","tool_id":"srvtoolu_whole_01"}`)},
		}, model.StopToolUse},
		{"tool_input_in_start.sse", []model.Content{
			{Type: model.ContentText, Text: "Reading both files."},
			{Type: model.ContentToolUse, ID: "toolu_input_01", Name: "Read", Input: json.RawMessage(`{"file_path":"/tmp/a.txt"}`)},
			{Type: model.ContentToolUse, ID: "toolu_input_02", Name: "Read", Input: json.RawMessage(`{"file_path": "/tmp/b.txt"}`)},
		}, model.StopToolUse},
		{"programmatic_tool_caller.sse", []model.Content{
			{Type: model.ContentRaw, Name: "server_tool_use", Raw: json.RawMessage(`{"id":"srvtoolu_ptc_01","input":{"code": "rows = await query_db(sql='select region, sum(total) from sales group by region')\nprint(rows)"},"name":"code_execution","type":"server_tool_use"}`)},
			{Type: model.ContentToolUse, ID: "toolu_ptc_01", Name: "query_db", Input: json.RawMessage(`{"sql": "select region, sum(total) from sales group by region"}`),
				Caller: json.RawMessage(`{"type":"code_execution_20250825","tool_id":"srvtoolu_ptc_01"}`)},
		}, model.StopToolUse},
	}
	files, _ := filepath.Glob("testdata/shapes/*.sse")
	if len(files) != len(tests) {
		t.Fatalf("%d shape files, %d cases", len(files), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(filepath.Join("testdata/shapes", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			for _, oneByte := range []bool{false, true} {
				p, _ := server(t, func(w http.ResponseWriter, r *http.Request) { fakemodel.ServeSSE(w, raw, oneByte) })
				parts, waits, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
				if err != nil || len(waits) > 0 {
					t.Fatalf("err %v after %d retries", err, len(waits))
				}
				r := pt.Accumulate(t, parts)
				if r.StopReason != tt.stop {
					t.Fatalf("stop reason %q, want %q", r.StopReason, tt.stop)
				}
				if len(r.Content) != len(tt.content) {
					t.Fatalf("%d blocks, want %d: %+v", len(r.Content), len(tt.content), r.Content)
				}
				for i, want := range tt.content {
					got := r.Content[i]
					if !sameContent(got, want) {
						t.Errorf("block %d:\ngot  %+v\nwant %+v", i, got, want)
					}
				}
			}
		})
	}
}

// sameContent compares blocks with their JSON fields compared as values.
func sameContent(a, b model.Content) bool {
	jsonEq := func(x, y json.RawMessage) bool {
		if len(x) == 0 || len(y) == 0 {
			return len(x) == len(y)
		}
		var u, v any
		return json.Unmarshal(x, &u) == nil && json.Unmarshal(y, &v) == nil && reflect.DeepEqual(u, v)
	}
	if !jsonEq(a.Input, b.Input) || !jsonEq(a.Caller, b.Caller) || !jsonEq(a.Raw, b.Raw) {
		return false
	}
	a.Input, a.Caller, a.Raw, b.Input, b.Caller, b.Raw = nil, nil, nil, nil, nil, nil
	return reflect.DeepEqual(a, b)
}

// A stream that starts blocks of its own is the content, even when its
// message_start also carries some: nothing is shown twice.
func TestMessageStartContentAndBlocks(t *testing.T) {
	t.Parallel()
	body := `event: message_start
data: {"type":"message_start","message":{"id":"m","content":[{"type":"text","text":"Hi"}],"usage":{}}}

` + miniStream[len("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"):]
	p, _ := server(t, fakemodel.SSE(body))
	parts, err := pt.Attempt(t, p, hi)
	if err != nil {
		t.Fatal(err)
	}
	if r := pt.Accumulate(t, parts); len(r.Content) != 1 || r.Content[0].Text != "Hi" || r.StopReason != "end_turn" {
		t.Fatalf("%+v", r)
	}
}

// A tool use's caller goes back to the server with the call, streamed or
// not.
func TestCallerSentBack(t *testing.T) {
	t.Parallel()
	caller := `{"type":"code_execution_20250825","tool_id":"srvtoolu_1"}`
	var (
		mu   sync.Mutex
		sent []map[string]json.RawMessage
	)
	p, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Content []map[string]json.RawMessage
			}
			Stream bool
		}
		json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		for _, m := range req.Messages {
			sent = append(sent, m.Content...)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_c","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_9","name":"query_db","input":{"sql":"x"},"caller":`+caller+`}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}`)
	})
	resp, err := p.Complete(t.Context(), hi)
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Content[0]; !sameContent(c, model.Content{Type: model.ContentToolUse, ID: "toolu_9", Name: "query_db", Input: json.RawMessage(`{"sql":"x"}`), Caller: json.RawMessage(caller)}) {
		t.Fatalf("%+v", c)
	}
	// Through the accumulator, as the agent keeps a streamed response.
	var acc model.Accumulator
	for part := range resp.Parts() {
		if err := acc.Add(part); err != nil {
			t.Fatal(err)
		}
	}
	next := &model.Request{Messages: []model.Message{
		hi.Messages[0],
		{Role: model.RoleAssistant, Content: acc.Response().Content},
		{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentToolResult, ID: "toolu_9", Text: "3 rows"}}},
	}}
	mu.Lock()
	sent = nil
	mu.Unlock()
	if _, err := p.Complete(t.Context(), next); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var found bool
	for _, b := range sent {
		if string(b["type"]) == `"tool_use"` {
			found = true
			if !sameContent(model.Content{Caller: b["caller"]}, model.Content{Caller: json.RawMessage(caller)}) {
				t.Fatalf("tool use sent back as %s", b)
			}
		}
	}
	if !found {
		t.Fatalf("no tool use sent back: %v", sent)
	}
}
