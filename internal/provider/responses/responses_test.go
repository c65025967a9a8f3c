package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

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

func text(s string) model.Content { return model.Content{Type: model.ContentText, Text: s} }
func reasoning(s, sig string) model.Content {
	return model.Content{Type: model.ContentReasoning, Text: s, Signature: sig}
}
func tool(id, name, input string) model.Content {
	return model.Content{Type: model.ContentToolUse, ID: id, Name: name, Input: json.RawMessage(input)}
}

// decodeAll decodes a body read through r and returns its parts and the
// final error.
func decodeAll(r io.Reader) (parts []model.Part, err error) {
	DecodeStream(r, func(p model.Part, e error) bool {
		if e != nil {
			err = e
			return false
		}
		parts = append(parts, p)
		return true
	})
	return parts, err
}

// fromCompleted is what a recorded stream's final event says the response
// holds, read with encoding/json (not the decoder): the text of each
// message part, each reasoning item's summary (or reasoning_text) parts
// joined by blank lines and its encrypted content, each function call, and
// each other item by its type. The final event encrypts reasoning anew:
// each item's encrypted content is taken from its output_item.done.
func fromCompleted(t *testing.T, raw []byte) (content []model.Content, usage model.Usage) {
	t.Helper()
	var final struct {
		Response struct {
			Output []json.RawMessage
			Usage  struct {
				InputTokens        int `json:"input_tokens"`
				OutputTokens       int `json:"output_tokens"`
				InputTokensDetails struct {
					CachedTokens int `json:"cached_tokens"`
				} `json:"input_tokens_details"`
			}
		}
	}
	encrypted := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		var done struct {
			Type string
			Item struct {
				ID        string
				Encrypted string `json:"encrypted_content"`
			}
		}
		if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &done) == nil && done.Type == "response.output_item.done" {
			encrypted[done.Item.ID] = done.Item.Encrypted
		}
		if strings.HasPrefix(line, `data: {"type":"response.completed"`) || strings.HasPrefix(line, `data: {"type":"response.incomplete"`) {
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &final); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, o := range final.Response.Output {
		var it struct {
			Type, ID, Name, Arguments string
			CallID                    string `json:"call_id"`
			Encrypted                 string `json:"encrypted_content"`
			Summary, Content          []struct{ Type, Text string }
		}
		if err := json.Unmarshal(o, &it); err != nil {
			t.Fatal(err)
		}
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				if c.Text != "" {
					content = append(content, text(c.Text))
				}
			}
		case "reasoning":
			var texts []string
			for _, s := range append(it.Summary, it.Content...) {
				texts = append(texts, s.Text)
			}
			if e, ok := encrypted[it.ID]; ok {
				it.Encrypted = e
			}
			if len(texts) > 0 || it.Encrypted != "" {
				content = append(content, reasoning(strings.Join(texts, "\n\n"), it.Encrypted))
			}
		case "function_call":
			content = append(content, tool(it.CallID, it.Name, it.Arguments))
		default:
			content = append(content, model.Content{Type: model.ContentRaw, Name: it.Type})
		}
	}
	u := final.Response.Usage
	return content, model.Usage{InputTokens: u.InputTokens - u.InputTokensDetails.CachedTokens, OutputTokens: u.OutputTokens, CacheReadInputTokens: u.InputTokensDetails.CachedTokens}
}

// withoutRaw is content with raw blocks reduced to their type, as
// fromCompleted gives them.
func withoutRaw(content []model.Content) []model.Content {
	out := make([]model.Content, len(content))
	for i, c := range content {
		if c.Type == model.ContentRaw {
			c = model.Content{Type: model.ContentRaw, Name: c.Name}
		}
		out[i] = c
	}
	return out
}

// The recorded streams (see testdata/README.md) give exactly what their
// final event says the response holds, whether the body arrives whole,
// one byte per read, or with CRLF or CR line ends; a few facts of each are
// also spelled out.
func TestFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file  string
		stop  string
		usage model.Usage
		check func(t *testing.T, c []model.Content)
	}{
		{"responses_text.sse", model.StopEndTurn, model.Usage{InputTokens: 25, OutputTokens: 10}, func(t *testing.T, c []model.Content) {
			want(t, c, []model.Content{text("The capital of Minas Gerais is Belo Horizonte.")})
		}},
		{"tool_call.sse", model.StopToolUse, model.Usage{InputTokens: 255, OutputTokens: 16}, func(t *testing.T, c []model.Content) {
			want(t, c, []model.Content{tool("call_kL0PCQV7M2WMoVX8V8OtYSAL", "get_capital", `{"country":"France"}`)})
		}},
		{"text_after_tool.sse", model.StopEndTurn, model.Usage{InputTokens: 278, OutputTokens: 9}, func(t *testing.T, c []model.Content) {
			want(t, c, []model.Content{text("The capital of France is Paris.")})
		}},
		{"encrypted_reasoning_tool_call.sse", model.StopToolUse, model.Usage{InputTokens: 134, OutputTokens: 28}, func(t *testing.T, c []model.Content) {
			if len(c) != 2 || !strings.HasPrefix(c[0].Text, "**Calculating step-by-step using calculator**\n\nI'll compute 12 plus 7,") ||
				!strings.HasPrefix(c[0].Signature, "gAAAAABpPDIVOKrs") || !strings.HasSuffix(c[0].Signature, "z4uQ==") {
				t.Fatalf("reasoning %+v", c)
			}
			want(t, c[1:], []model.Content{tool("call_AB6AaRZ1FYZB2RwS6A5vbdqn", "calculator", `{"a":12,"b":7,"op":"add"}`)})
		}},
		{"codex_max_final_text.sse", model.StopEndTurn, model.Usage{InputTokens: 299, OutputTokens: 12}, func(t *testing.T, c []model.Content) {
			want(t, c, []model.Content{text("The final result is **570**.")})
		}},
		{"reasoning_summary_parts.sse", model.StopEndTurn, model.Usage{InputTokens: 13, OutputTokens: 1680}, func(t *testing.T, c []model.Content) {
			// Four summary parts, set apart by blank lines.
			if len(c) != 2 || strings.Count(c[0].Text, "\n\n**") != 3 || !strings.HasPrefix(c[0].Text, "**Providing street crossing instructions**") {
				t.Fatalf("reasoning %q", c[0].Text)
			}
		}},
		{"text_then_tool_call.sse", model.StopToolUse, model.Usage{InputTokens: 63, OutputTokens: 69}, func(t *testing.T, c []model.Content) {
			if len(c) != 3 || c[0].Text != "" || c[0].Signature == "" {
				t.Fatalf("reasoning without a summary: %+v", c[0])
			}
			want(t, c[1:], []model.Content{text("I’ll check the capital lookup tool for “PotatoLand.”"), tool("call_LabG58Uhrq9kZvR52BYKjToD", "get_capital", `{"country":"PotatoLand"}`)})
		}},
		{"openrouter_reasoning_text.sse", model.StopEndTurn, model.Usage{InputTokens: 78, OutputTokens: 37}, func(t *testing.T, c []model.Content) {
			want(t, c, []model.Content{reasoning(`The user asks: "What is 2+2?" They expect a straightforward answer: 4. Just answer 4.`, ""), text("4")})
		}},
		{"web_search.sse", model.StopEndTurn, model.Usage{InputTokens: 1143, OutputTokens: 582, CacheReadInputTokens: 8320}, func(t *testing.T, c []model.Content) {
			var ws struct {
				Status string
				Action struct{ Query string }
			}
			if len(c) != 4 || json.Unmarshal(c[1].Raw, &ws) != nil || ws.Status != "completed" || ws.Action.Query != "weather: San Francisco, CA" {
				t.Fatalf("web search %s", c[1].Raw)
			}
		}},
		{"code_interpreter.sse", model.StopEndTurn, model.Usage{InputTokens: 527, OutputTokens: 347, CacheReadInputTokens: 3200}, func(t *testing.T, c []model.Content) {
			var ci struct{ Code, Status string }
			if len(c) != 5 || json.Unmarshal(c[1].Raw, &ci) != nil || ci.Code != "n = pow(123456, 123)\nlen(str(n))" || ci.Status != "completed" {
				t.Fatalf("code interpreter %s", c[1].Raw)
			}
		}},
	}
	files, _ := filepath.Glob("testdata/*.sse")
	if len(files) != len(tests)+1 { // and error_insufficient_quota.sse, TestRecordedError's
		t.Fatalf("%d fixtures, %d cases", len(files), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			raw := fixture(t, tt.file)
			p := server(t, func(w http.ResponseWriter, r *http.Request) { fakemodel.ServeSSE(w, raw, false) })
			parts, waits, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
			if err != nil || len(waits) > 0 {
				t.Fatalf("%v after %d retries", err, len(waits))
			}
			checkOrder(t, parts)
			r := pt.Accumulate(t, parts)
			content, usage := fromCompleted(t, raw)
			if !reflect.DeepEqual(withoutRaw(r.Content), content) || r.Usage != usage || r.Usage != tt.usage || r.StopReason != tt.stop {
				got, _ := json.Marshal(r)
				w, _ := json.Marshal(content)
				t.Fatalf("got  %s\nwant %s %+v", got, w, usage)
			}
			tt.check(t, r.Content)
			for _, v := range []struct {
				name string
				r    io.Reader
			}{
				{"one byte per read", iotest.OneByteReader(bytes.NewReader(raw))},
				{"crlf, one byte per read", iotest.OneByteReader(bytes.NewReader(bytes.ReplaceAll(raw, []byte("\n"), []byte("\r\n"))))},
				{"cr", bytes.NewReader(bytes.ReplaceAll(raw, []byte("\n"), []byte("\r")))},
			} {
				got, err := decodeAll(v.r)
				if err != nil || !reflect.DeepEqual(got, parts) {
					t.Fatalf("%s: parts differ from the whole delivery (%v)", v.name, err)
				}
			}
		})
	}
}

func want(t *testing.T, got, want []model.Content) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("got  %s\nwant %s", g, w)
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

// stream builds an event stream of data lines (each a JSON event), with
// the response.created first and response.completed (of the given
// response fields) last when final is not empty.
func stream(final string, events ...string) string {
	var b strings.Builder
	b.WriteString("event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"model\":\"gpt-5\",\"status\":\"in_progress\",\"output\":[]}}\n\n")
	for _, e := range events {
		var head struct{ Type string }
		json.Unmarshal([]byte(e), &head)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", head.Type, e)
	}
	if final != "" {
		var head struct{ Type string }
		json.Unmarshal([]byte(final), &head)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", head.Type, final)
	}
	return b.String()
}

const completed = `{"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":10,"output_tokens":5}}}`
