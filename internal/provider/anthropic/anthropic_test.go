package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/fakemodel"
	pt "github.com/sluicehq/sluice/internal/provider/providertest"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
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

// server starts a test server whose handler is h, and a provider for it.
func server(t *testing.T, h http.HandlerFunc) (*Provider, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return New(Config{APIKey: "sk-test-secret", BaseURL: srv.URL, HTTPClient: srv.Client()}), srv
}

// blockContent is what the parts of one block add up to.
type blockContent struct {
	Kind                                  string
	Text, Reasoning, Signature, Input, ID string
	Name, Redacted                        string
	Citations                             int
}

func fromParts(parts []model.Part) []*blockContent {
	var order []*blockContent
	byIndex := map[int]*blockContent{}
	for _, p := range parts {
		switch p.Type {
		case model.PartBlockStart:
			b := &blockContent{Kind: p.Block.String(), ID: p.ID, Name: p.Name}
			if p.Block == model.BlockRaw {
				b.Kind = p.Name
			}
			byIndex[p.Index] = b
			order = append(order, b)
		case model.PartBlockDelta:
			b := byIndex[p.Index]
			switch p.Delta {
			case model.DeltaText:
				b.Text += p.Text
			case model.DeltaReasoning:
				b.Reasoning += p.Text
			case model.DeltaSignature:
				b.Signature += p.Text
			case model.DeltaInputJSON:
				b.Input += p.Text
			case model.DeltaCitation:
				b.Citations++
			case model.DeltaRedacted:
				b.Redacted += p.Text
			}
		}
	}
	return order
}

// oracle reads a recorded stream the plain way (each data line is one JSON
// event, decoded by encoding/json) to say what its blocks contain,
// independently of the decoder under test.
func oracle(t *testing.T, raw []byte) (blocks []*blockContent, stop string) {
	t.Helper()
	byIndex := map[int]*blockContent{}
	for line := range strings.Lines(string(raw)) {
		data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type         string
			Index        int
			ContentBlock struct{ Type, ID, Name, Data string } `json:"content_block"`
			Delta        struct {
				Type, Text, Thinking, Signature string
				PartialJSON                     string          `json:"partial_json"`
				Citation                        json.RawMessage `json:"citation"`
				Stop                            string          `json:"stop_reason"`
			}
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("oracle: %v: %s", err, data)
		}
		switch ev.Type {
		case "content_block_start":
			b := &blockContent{Kind: ev.ContentBlock.Type}
			switch b.Kind {
			case "text":
			case "thinking":
				b.Kind = "reasoning"
			case "redacted_thinking":
				b.Kind, b.Redacted = "redacted_reasoning", ev.ContentBlock.Data
			case "tool_use":
				b.ID, b.Name = ev.ContentBlock.ID, ev.ContentBlock.Name
			default:
				b.Name = b.Kind // raw blocks are named by their type
			}
			byIndex[ev.Index] = b
			blocks = append(blocks, b)
		case "content_block_delta":
			b := byIndex[ev.Index]
			b.Text += ev.Delta.Text
			b.Reasoning += ev.Delta.Thinking
			b.Signature += ev.Delta.Signature
			b.Input += ev.Delta.PartialJSON
			if ev.Delta.Citation != nil {
				b.Citations++
			}
		case "message_delta":
			stop = ev.Delta.Stop
		}
	}
	return blocks, stop
}

func TestFixtures(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("testdata/*.sse")
	if len(files) != 14 {
		t.Fatalf("%d fixtures", len(files))
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw := fixture(t, name)
			p, _ := server(t, func(w http.ResponseWriter, r *http.Request) { fakemodel.ServeSSE(w, raw, false) })
			parts, waits, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(waits) > 0 {
				t.Fatalf("retried %d times", len(waits))
			}
			wantBlocks, wantStop := oracle(t, raw)
			got := fromParts(parts)
			if len(got) != len(wantBlocks) {
				t.Fatalf("%d blocks, want %d", len(got), len(wantBlocks))
			}
			for i := range got {
				if g, w := *got[i], *wantBlocks[i]; g != w {
					t.Errorf("block %d:\ngot  %+v\nwant %+v", i, g, w)
				}
			}
			var acc model.Accumulator
			for _, p := range parts {
				if err := acc.Add(p); err != nil {
					t.Fatal(err)
				}
			}
			resp := acc.Response()
			if resp.StopReason != wantStop {
				t.Fatalf("stop reason %q, want %q", resp.StopReason, wantStop)
			}
			if _, err := json.Marshal(resp); err != nil {
				t.Fatalf("the accumulated response does not marshal: %v", err)
			}
			if parts[len(parts)-1].Type != model.PartMessageStop {
				t.Fatalf("last part %v", parts[len(parts)-1].Type)
			}
		})
	}
}

// Values read off the fixtures by hand.
func TestFixtureContents(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, name string) *model.Response {
		raw := fixture(t, name)
		p, _ := server(t, func(w http.ResponseWriter, r *http.Request) { fakemodel.ServeSSE(w, raw, false) })
		parts, _, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var acc model.Accumulator
		for _, p := range parts {
			if err := acc.Add(p); err != nil {
				t.Fatal(err)
			}
		}
		return acc.Response()
	}
	t.Run("basic", func(t *testing.T) {
		t.Parallel()
		r := run(t, "basic_response.sse")
		if r.Content[0].Text != "Hello there!" || r.StopReason != "end_turn" || r.Usage != (model.Usage{InputTokens: 11, OutputTokens: 6, ContextTokens: 11}) || r.Model != "claude-3-opus-latest" {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("duplicate message_start", func(t *testing.T) {
		t.Parallel()
		r := run(t, "duplicate_message_start.sse")
		if len(r.Content) != 1 || r.Content[0].Text != "Once, not twice." || r.ID != "msg_dup_01" || r.Usage.InputTokens != 21 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("escaped quotes across input deltas", func(t *testing.T) {
		t.Parallel()
		r := run(t, "tool_input_escaped_quotes.sse")
		var in struct{ Path, Text string }
		if err := json.Unmarshal(r.Content[0].Input, &in); err != nil || in.Text != "She said: \"Ship it\", and left.\n" || string(r.Content[0].Caller) != `{"type":"direct"}` {
			t.Fatalf("%+v (%v)", r.Content[0], err)
		}
	})
	t.Run("tool use", func(t *testing.T) {
		t.Parallel()
		r := run(t, "tool_use_response.sse")
		tu := r.Content[1]
		if tu.Type != model.ContentToolUse || tu.ID != "toolu_01NRLabsLyVHZPKxbKvkfSMn" || tu.Name != "get_weather" || string(tu.Input) != `{"location": "Paris"}` || r.StopReason != "tool_use" {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("cut-off tool input", func(t *testing.T) {
		t.Parallel()
		r := run(t, "incomplete_partial_json_response.sse")
		if len(r.Content) != 1 || r.StopReason != "max_tokens" || !strings.HasSuffix(r.Content[0].Text, "for you now.") {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("redacted thinking", func(t *testing.T) {
		t.Parallel()
		r := run(t, "redacted_thinking.sse")
		if r.Content[0].Type != model.ContentRedactedReasoning || !strings.HasPrefix(r.Content[0].Data, "EqkECkYIBxgCKkA8") || r.Content[1].Type != model.ContentRedactedReasoning || r.Content[2].Type != model.ContentText {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("thinking", func(t *testing.T) {
		t.Parallel()
		r := run(t, "thinking_text.sse")
		if r.Content[0].Type != model.ContentReasoning || !strings.HasPrefix(r.Content[0].Text, "This is a straightforward question about") || !strings.HasPrefix(r.Content[0].Signature, "EvMCCkYICxgCKkCHP2cS") {
			t.Fatalf("%+v", r.Content[0])
		}
	})
	t.Run("compaction", func(t *testing.T) {
		t.Parallel()
		r := run(t, "compaction_response.sse")
		var c struct {
			Type, Content    string
			EncryptedContent string `json:"encrypted_content"`
		}
		if err := json.Unmarshal(r.Content[0].Raw, &c); err != nil {
			t.Fatal(err)
		}
		if c.Type != "compaction" || c.Content != "Earlier conversation summarized." || !strings.HasPrefix(c.EncryptedContent, "EpwBCio") {
			t.Fatalf("%+v from %s", c, r.Content[0].Raw)
		}
	})
	t.Run("emoji", func(t *testing.T) {
		t.Parallel()
		r := run(t, "compaction_usage.sse")
		// The server compacted (the first iteration) before answering:
		// the context is what the last request held.
		if r.Content[1].Text != "Hello! 👋" || r.Usage.InputTokens != 181 || r.Usage.CacheReadInputTokens != 0 || r.Usage.OutputTokens != 8 || r.Usage.ContextTokens != 181 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("web search and citations", func(t *testing.T) {
		t.Parallel()
		r := run(t, "thinking_web_search_citations.sse")
		citations, kinds := 0, map[model.ContentType]int{}
		for _, c := range r.Content {
			kinds[c.Type]++
			var cs []json.RawMessage
			if c.Citations != nil {
				if err := json.Unmarshal(c.Citations, &cs); err != nil {
					t.Fatal(err)
				}
			}
			citations += len(cs)
		}
		// Two searches: the billed input adds up three requests; the
		// context is the request sent.
		if r.Usage.InputTokens != 22397 || r.Usage.ContextTokens != 2068 {
			t.Fatalf("usage %+v", r.Usage)
		}
		if citations != 7 || kinds[model.ContentRaw] != 4 || kinds[model.ContentReasoning] != 1 {
			t.Fatalf("%d citations, kinds %v", citations, kinds)
		}
		var stu struct {
			Type  string
			Input struct{ Query string }
		}
		if err := json.Unmarshal(r.Content[1].Raw, &stu); err != nil || stu.Type != "server_tool_use" || stu.Input.Query == "" {
			t.Fatalf("server tool use %s: the streamed input is not merged", r.Content[1].Raw)
		}
	})
}

// The same bytes give the same parts whether they come whole, one byte per
// read, with CRLF or with bare CR line ends.
func TestDeliveryVariants(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"thinking_web_search_citations.sse", "compaction_usage.sse", "basic_response.sse", "server_code_execution.sse"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw := fixture(t, name)
			variants := []struct {
				name    string
				body    []byte
				oneByte bool
			}{
				{"whole", raw, false},
				{"one byte", raw, true},
				{"crlf", bytes.ReplaceAll(raw, []byte("\n"), []byte("\r\n")), true},
				{"cr", bytes.ReplaceAll(raw, []byte("\n"), []byte("\r")), true},
			}
			var want []model.Part
			for _, v := range variants {
				p, _ := server(t, func(w http.ResponseWriter, r *http.Request) { fakemodel.ServeSSE(w, v.body, v.oneByte) })
				parts, err := pt.Attempt(t, p, &model.Request{})
				if err != nil {
					t.Fatalf("%s: %v", v.name, err)
				}
				if want == nil {
					want = parts
					continue
				}
				if !reflect.DeepEqual(parts, want) {
					t.Fatalf("%s: parts differ", v.name)
				}
			}
		})
	}
}

func TestSplitMultiByteCharacter(t *testing.T) {
	t.Parallel()
	body := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"世👋\"}}\n\n" +
		"data: {\"type\":\"content_block_stop\",\"index\":0}\n\ndata: {\"type\":\"message_stop\"}\n\n"
	cut := strings.Index(body, "👋") + 2 // inside the emoji
	p, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(body[:cut]))
		w.(http.Flusher).Flush()
		w.Write([]byte(body[cut:]))
	})
	parts, err := pt.Attempt(t, p, &model.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if b := fromParts(parts); b[0].Text != "世👋" {
		t.Fatalf("text %q", b[0].Text)
	}
}

const miniStream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

func TestIgnoredEvents(t *testing.T) {
	t.Parallel()
	noisy := ": a comment\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n" +
		strings.Replace(miniStream, "event: content_block_stop", ": keep-alive\nevent: brand_new_event\ndata: {\"type\":\"brand_new_event\",\"x\":[1]}\n\nevent: content_block_stop", 1)
	var want []model.Part
	for _, body := range []string{miniStream, noisy} {
		p, _ := server(t, fakemodel.SSE(body))
		parts, err := pt.Attempt(t, p, &model.Request{})
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = parts
		} else if !reflect.DeepEqual(parts, want) {
			t.Fatalf("got %+v\nwant %+v", parts, want)
		}
	}
	// A repeated text in the start is ignored: the block's text comes only
	// from deltas.
	dup := strings.Replace(miniStream, `"content_block":{"type":"text","text":""}`, `"content_block":{"type":"text","text":"Hi"}`, 1)
	p, _ := server(t, fakemodel.SSE(dup))
	parts, err := pt.Attempt(t, p, &model.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if b := fromParts(parts); b[0].Text != "Hi" {
		t.Fatalf("text %q", b[0].Text)
	}
}

var ok = fakemodel.SSE(miniStream)

func TestFailuresRetried(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		first   http.HandlerFunc
		wantErr error
	}{
		{"error event mid-stream", fakemodel.SSE(miniStream[:strings.Index(miniStream, "event: content_block_stop")] + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"), &model.APIError{}},
		{"no message_stop", fakemodel.SSE(miniStream[:strings.Index(miniStream, "event: message_stop")]), model.ErrIncomplete},
		{"cut inside an event", fakemodel.SSE(miniStream[:strings.Index(miniStream, `"Hi"`)]), model.ErrIncomplete},
		{"html page", fakemodel.Page("text/html; charset=utf-8", "<html><body><h1>Sign in to the corporate proxy</h1></body></html>"), model.ErrNotEventStream},
		{"html page without content type", fakemodel.Page("", "<html>\n<body>maintenance</body>\n</html>\n"), model.ErrNotEventStream},
		{"empty 200", fakemodel.Page("text/event-stream", ""), model.ErrNotEventStream},
		{"connection reset mid-stream", fakemodel.ResetAfter(miniStream, strings.Index(miniStream, "event: content_block_delta")), nil},
		{"malformed event", fakemodel.SSE(strings.Replace(miniStream, `"text":"Hi"}}`, `"text":"Hi"`, 1)), model.ErrMalformedEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, n := fakemodel.Attempts(tt.first, ok)
			p, _ := server(t, h)
			parts, waits, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if n.Load() != 2 || len(waits) != 1 {
				t.Fatalf("%d requests, %d waits", n.Load(), len(waits))
			}
			var retry *model.Retry
			for _, p := range parts {
				if p.Type == model.PartRetry {
					retry = p.Retry
				}
			}
			switch want := tt.wantErr.(type) {
			case nil:
			case *model.APIError:
				var apiErr *model.APIError
				if !errors.As(retry.Err, &apiErr) || apiErr.Type != "overloaded_error" {
					t.Fatalf("cause %v", retry.Err)
				}
			default:
				if !errors.Is(retry.Err, want) {
					t.Fatalf("cause %v, want %v", retry.Err, want)
				}
			}
			var acc model.Accumulator
			for _, p := range parts {
				if err := acc.Add(p); err != nil {
					t.Fatal(err)
				}
			}
			if r := acc.Response(); r.ID != "msg_1" || len(r.Content) != 1 || r.Content[0].Text != "Hi" {
				t.Fatalf("the retried answer shows %+v", r.Content)
			}
		})
	}
}

func TestStatusCodes(t *testing.T) {
	t.Parallel()
	// The date is written when the server answers (a loaded machine may
	// take seconds to get there), 30 s ahead.
	const date = "<30 s from now>"
	tests := []struct {
		status  int
		header  map[string]string
		body    string
		retried bool
		wait    time.Duration // 0: the backoff's first delay
		hint    string
	}{
		{400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: field required"}}`, false, 0, "refused as invalid"},
		{401, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, false, 0, "check the API key"},
		{403, nil, `{"type":"error","error":{"type":"permission_error","message":"no"}}`, false, 0, "not allowed"},
		{404, nil, `{"type":"error","error":{"type":"not_found_error","message":"model: x"}}`, false, 0, "check the model name"},
		{413, nil, `{"type":"error","error":{"type":"request_too_large","message":"too large"}}`, false, 0, "too large"},
		{408, nil, `{}`, true, 0, ""},
		{409, nil, `{}`, true, 0, ""},
		{429, map[string]string{"retry-after-ms": "1500"}, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, true, 1500 * time.Millisecond, ""},
		{429, map[string]string{"retry-after": "7"}, `{}`, true, 7 * time.Second, ""},
		{503, map[string]string{"retry-after": date}, `upstream connect error`, true, 30 * time.Second, ""},
		{500, nil, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, true, 0, ""},
		{502, nil, `<html>Bad gateway</html>`, true, 0, ""},
		{529, map[string]string{"retry-after": "2"}, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, true, 2 * time.Second, ""},
		{500, map[string]string{"x-should-retry": "false"}, `{}`, false, 0, ""},
		{400, map[string]string{"x-should-retry": "true"}, `{}`, true, 0, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status, tt.header), func(t *testing.T) {
			t.Parallel()
			h, n := fakemodel.Attempts(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					if v == date {
						v = time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
					}
					w.Header().Set(k, v)
				}
				w.Header().Set("request-id", "req_123")
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}, ok)
			p, _ := server(t, h)
			_, waits, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
			if !tt.retried {
				var apiErr *model.APIError
				if !errors.As(err, &apiErr) || apiErr.Status != tt.status || apiErr.RequestID != "req_123" {
					t.Fatalf("err = %v", err)
				}
				if !strings.Contains(err.Error(), tt.hint) || strings.Contains(err.Error(), "sk-test-secret") {
					t.Fatalf("message %q", err)
				}
				if n.Load() != 1 {
					t.Fatalf("%d requests", n.Load())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tt.wait
			if want == 0 {
				want = model.DefaultBaseDelay
			}
			if len(waits) != 1 {
				t.Fatalf("waits %v", waits)
			}
			if tt.header["retry-after"] == date {
				// An HTTP date has a resolution of one second.
				if waits[0] <= want-2*time.Second || waits[0] > want {
					t.Fatalf("waited %v for a date %v ahead", waits[0], want)
				}
			} else if waits[0] != want {
				t.Fatalf("waited %v, want %v", waits[0], want)
			}
		})
	}
}

func TestContextOverflow(t *testing.T) {
	t.Parallel()
	h, n := fakemodel.Attempts(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}`)
	})
	p, _ := server(t, h)
	_, _, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
	if !errors.Is(err, model.ErrContextOverflow) || n.Load() != 1 {
		t.Fatalf("err = %v after %d requests", err, n.Load())
	}
	var apiErr *model.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 400 {
		t.Fatalf("the API error is lost: %v", err)
	}
}

func TestFallbackToComplete(t *testing.T) {
	t.Parallel()
	broken := fakemodel.SSE(miniStream[:strings.Index(miniStream, "event: content_block_stop")] + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
	var streamed, completed atomic.Int32
	p, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Stream bool }
		json.NewDecoder(r.Body).Decode(&req)
		if req.Stream {
			streamed.Add(1)
			broken(w, r)
			return
		}
		completed.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_full","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"Whole answer"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"stop_reason":"tool_use","usage":{"input_tokens":4,"output_tokens":9}}`)
	})
	parts, waits, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if streamed.Load() != 3 || completed.Load() != 1 || len(waits) != 3 {
		t.Fatalf("%d streams, %d non-streaming, %d waits", streamed.Load(), completed.Load(), len(waits))
	}
	var acc model.Accumulator
	for _, p := range parts {
		if err := acc.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	r := acc.Response()
	if r.ID != "msg_full" || r.StopReason != "tool_use" || len(r.Content) != 3 || r.Content[1].Text != "Whole answer" || string(r.Content[2].Input) != `{"command":"ls"}` || r.Content[0].Signature != "s" {
		t.Fatalf("%+v", r)
	}
}

// The watchdog aborts an attempt whose server has gone silent and retries;
// the server blocks on a channel, and time is a fake clock.
func TestStallAndIdleTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	silent := fakemodel.Stall(fakemodel.SSE(miniStream[:strings.Index(miniStream, "event: content_block_start")]), release)
	h, n := fakemodel.Attempts(silent, ok)
	p, _ := server(t, h)
	clock := modeltest.NewClock(time.Unix(0, 0))
	opts := model.StreamOptions{
		Clock: clock, StallWarning: 10 * time.Second, IdleTimeout: time.Minute,
		Sleep: func(context.Context, time.Duration) error { return nil },
	}
	next, stop := iter.Pull2(model.Stream(t.Context(), p, &model.Request{}, opts))
	defer stop()
	expect := func(want model.PartType) model.Part {
		t.Helper()
		part, err, more := next()
		if err != nil || !more || part.Type != want {
			t.Fatalf("got %v, %v, %v; want %v", part.Type, err, more, want)
		}
		return part
	}
	advance := func(d time.Duration) {
		go func() {
			clock.WaitArmed(1)
			clock.Advance(d)
		}()
	}
	expect(model.PartMessageStart)
	advance(10 * time.Second)
	if part := expect(model.PartStalled); part.Idle != 10*time.Second {
		t.Fatalf("idle %v", part.Idle)
	}
	advance(50 * time.Second)
	if part := expect(model.PartRetry); !errors.Is(part.Retry.Err, model.ErrIdleTimeout) {
		t.Fatalf("cause %v", part.Retry.Err)
	}
	var acc model.Accumulator
	for {
		part, err, more := next()
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			break
		}
		acc.Add(part)
	}
	if r := acc.Response(); n.Load() != 2 || r.Content[0].Text != "Hi" {
		t.Fatalf("%d requests, %+v", n.Load(), r)
	}
}

// A consumer that stops early closes the connection: the server sees its
// request end, and no goroutine is left (goleak).
func TestEarlyBreakReleasesConnection(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	stall := fakemodel.Stall(fakemodel.SSE(miniStream[:strings.Index(miniStream, "event: content_block_stop")]), nil)
	p, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		stall(w, r)
		close(gone)
	})
	for part, err := range model.Stream(t.Context(), p, &model.Request{}, model.StreamOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if part.Type == model.PartBlockDelta {
			break
		}
	}
	<-gone // would hang (and the test time out) if the body were kept open
}

func TestRequest(t *testing.T) {
	t.Parallel()
	var body map[string]any
	var header http.Header
	p, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		header = r.Header
		if r.URL.Path != "/v1/messages" {
			t.Errorf("path %s", r.URL.Path)
		}
		json.NewDecoder(r.Body).Decode(&body)
		ok(w, r)
	})
	req := &model.Request{
		Model: "claude-test", System: "be brief", MaxTokens: 1000, ThinkingBudget: 2000,
		Tools: []model.Tool{{Name: "Bash", Description: "run", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}, {Name: "now"}},
		Messages: []model.Message{
			{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentText, Text: "list files"}, {Type: model.ContentImage, MediaType: "image/png", Data: "iVBORw0KGgo="}}},
			{Role: model.RoleAssistant, Content: []model.Content{
				{Type: model.ContentReasoning, Text: "thinking", Signature: "sig"},
				{Type: model.ContentReasoning, Text: "unsigned, from another provider"},
				{Type: model.ContentRedactedReasoning, Data: "opaque"},
				{Type: model.ContentText, Text: ""},
				{Type: model.ContentText, Text: "Sure", Citations: json.RawMessage(`[{"type":"char_location","cited_text":"x"}]`)},
				{Type: model.ContentRaw, Raw: json.RawMessage(`{"type":"server_tool_use","id":"srv1","name":"web_search","input":{"query":"q"}}`)},
				{Type: model.ContentToolUse, ID: "toolu_1", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)},
				{Type: model.ContentToolUse, ID: "toolu_2", Name: "now"},
			}},
			{Role: model.RoleUser, Content: []model.Content{
				{Type: model.ContentToolResult, ID: "toolu_1", Text: "a\nb"},
				{Type: model.ContentToolResult, ID: "toolu_2", Text: "boom", IsError: true},
			}},
		},
	}
	for _, err := range p.Stream(t.Context(), req) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if header.Get("x-api-key") != "sk-test-secret" || header.Get("anthropic-version") != "2023-06-01" || header.Get("Content-Type") != "application/json" {
		t.Fatalf("headers %v", header)
	}
	want := `{
		"model":"claude-test","max_tokens":3000,"system":"be brief","stream":true,
		"thinking":{"type":"enabled","budget_tokens":2000},
		"tools":[{"name":"Bash","description":"run","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}},
		         {"name":"now","input_schema":{"type":"object","properties":{}}}],
		"messages":[
			{"role":"user","content":[{"type":"text","text":"list files"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},
			{"role":"assistant","content":[
				{"type":"thinking","thinking":"thinking","signature":"sig"},
				{"type":"redacted_thinking","data":"opaque"},
				{"type":"text","text":"Sure","citations":[{"type":"char_location","cited_text":"x"}]},
				{"type":"server_tool_use","id":"srv1","name":"web_search","input":{"query":"q"}},
				{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}},
				{"type":"tool_use","id":"toolu_2","name":"now","input":{}}]},
			{"role":"user","content":[
				{"type":"tool_result","tool_use_id":"toolu_1","content":"a\nb"},
				{"type":"tool_result","tool_use_id":"toolu_2","content":"boom","is_error":true}]}]}`
	var wantBody map[string]any
	if err := json.Unmarshal([]byte(want), &wantBody); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(body, wantBody) {
		got, _ := json.MarshalIndent(body, "", " ")
		t.Fatalf("body:\n%s", got)
	}
}

func TestInvalidRequestNotRetried(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	p, _ := server(t, func(w http.ResponseWriter, r *http.Request) { n.Add(1) })
	req := &model.Request{Messages: []model.Message{{Role: model.RoleAssistant, Content: []model.Content{{Type: model.ContentToolUse, ID: "t", Name: "x", Input: json.RawMessage(`{bad`)}}}}}
	var err error
	for _, e := range model.Stream(t.Context(), p, req, model.StreamOptions{}) {
		err = e
	}
	if !errors.Is(err, model.ErrInvalidRequest) || n.Load() != 0 {
		t.Fatalf("err = %v, %d requests", err, n.Load())
	}
}

func TestConfigHidesKey(t *testing.T) {
	t.Parallel()
	c := Config{APIKey: "sk-ant-secret", BaseURL: "https://x"}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprintf("%v", &c)} {
		if strings.Contains(s, "secret") {
			t.Fatalf("key printed: %s", s)
		}
	}
}

func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.sse")
	shapes, _ := filepath.Glob("testdata/shapes/*.sse")
	files = append(files, shapes...)
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) < 3000 {
			f.Add(b)
		}
	}
	f.Add([]byte(miniStream))
	f.Add([]byte("data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"x\"}}\n\ndata: {\"type\":\"error\",\"error\":{\"type\":\"x\"}}\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		var acc model.Accumulator
		decode(bytes.NewReader(data), 1<<12, func(e *model.APIError) error { return e }, func(p model.Part, err error) bool {
			n++
			if n > 2*len(data)+1 {
				t.Fatalf("%d parts from %d bytes", n, len(data))
			}
			if err == nil {
				_ = acc.Add(p)
			}
			return true
		})
		if _, err := json.Marshal(acc.Response()); err != nil {
			t.Fatalf("accumulated response does not marshal: %v", err)
		}
	})
}

// A non-streaming answer, whatever its bytes, is a response whose parts
// accumulate into something that marshals, or an error.
func FuzzParseMessage(f *testing.F) {
	f.Add([]byte(`{"id":"msg_full","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"Whole answer","citations":null},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"},"caller":{"type":"direct"}},{"type":"web_search_tool_result","tool_use_id":"s","content":[]}],"stop_reason":"tool_use","usage":{"input_tokens":4,"output_tokens":9}}`))
	f.Add([]byte(`{"type":"message","content":[{"type":"redacted_thinking","data":"x"}]}`))
	f.Add([]byte(`{"content":[{"type":"tool_use","input":null,"caller":null}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := parseMessage(data)
		if err != nil {
			if !errors.Is(err, model.ErrMalformedEvent) {
				t.Fatalf("error %v is not ErrMalformedEvent", err)
			}
			return
		}
		var acc model.Accumulator
		for p := range r.Parts() {
			_ = acc.Add(p)
		}
		if _, err := json.Marshal(acc.Response()); err != nil {
			t.Fatalf("accumulated response does not marshal: %v", err)
		}
	})
}

// Thinking, effort and betas reach the request as Claude Code sends them
// (--thinking, --effort, --betas): adaptive thinking without a budget,
// output_config.effort under the effort beta, the betas in anthropic-beta.
func TestRequestThinkingEffortBetas(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		betas        []string
		req          model.Request
		wantThinking string // the thinking object as JSON, "" for none
		wantEffort   string
		wantBeta     string
	}{
		{"nothing", nil, model.Request{}, "", "", ""},
		{"adaptive", nil, model.Request{AdaptiveThinking: true}, `{"type":"adaptive"}`, "", ""},
		{"a budget wins over adaptive", nil, model.Request{ThinkingBudget: 1024, AdaptiveThinking: true},
			`{"type":"enabled","budget_tokens":1024}`, "", ""},
		{"effort", nil, model.Request{Effort: "high"}, "", "high", "effort-2025-11-24"},
		{"betas", []string{"context-1m-2025-08-07", "x-2026"}, model.Request{}, "", "", "context-1m-2025-08-07,x-2026"},
		{"betas and effort", []string{"effort-2025-11-24"}, model.Request{Effort: "max"}, "", "max", "effort-2025-11-24"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var body struct {
				Thinking     json.RawMessage `json:"thinking"`
				OutputConfig *struct {
					Effort string `json:"effort"`
				} `json:"output_config"`
			}
			var beta string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				beta = r.Header.Get("anthropic-beta")
				json.NewDecoder(r.Body).Decode(&body)
				ok(w, r)
			}))
			t.Cleanup(srv.Close)
			p := New(Config{APIKey: "k", BaseURL: srv.URL, HTTPClient: srv.Client(), Betas: tc.betas})
			req := tc.req
			req.Messages = []model.Message{{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentText, Text: "hi"}}}}
			for _, err := range p.Stream(t.Context(), &req) {
				if err != nil {
					t.Fatal(err)
				}
			}
			effort := ""
			if body.OutputConfig != nil {
				effort = body.OutputConfig.Effort
			}
			if string(body.Thinking) != tc.wantThinking || effort != tc.wantEffort || beta != tc.wantBeta {
				t.Fatalf("thinking %s, effort %q, anthropic-beta %q", body.Thinking, effort, beta)
			}
		})
	}
}
