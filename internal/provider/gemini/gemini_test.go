package gemini

import (
	"bufio"
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
	"testing/iotest"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/fakemodel"
	pt "github.com/sluicehq/sluice/internal/provider/providertest"
	"github.com/sluicehq/sluice/internal/testbin"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { testbin.Cleanup() }))
}

const apiKey = "AIza-test-secret-key"

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
	return New(Config{APIKey: apiKey, BaseURL: srv.URL, Model: "gemini-2.5-flash", HTTPClient: srv.Client()})
}

func text(s, sig string) model.Content {
	return model.Content{Type: model.ContentText, Text: s, Signature: sig}
}
func reasoning(s, sig string) model.Content {
	return model.Content{Type: model.ContentReasoning, Text: s, Signature: sig}
}
func tool(id, name, input, sig string) model.Content {
	return model.Content{Type: model.ContentToolUse, ID: id, Name: name, Input: json.RawMessage(input), Signature: sig}
}

// recorded reads a recorded stream with encoding/json, apart from the
// decoder under test: the text of its thought parts and of its other
// parts, joined, and the signatures in order. The expectations below take
// long texts and signatures from it and spell out the rest.
func recorded(t *testing.T, raw []byte) (thoughts, answer string, sigs []string) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(strings.TrimRight(sc.Text(), "\r"), "data: ")
		if !ok {
			continue
		}
		var chunk struct {
			Candidates []struct {
				Content struct {
					Parts []struct {
						Text             string `json:"text"`
						Thought          bool   `json:"thought"`
						ThoughtSignature string `json:"thoughtSignature"`
					} `json:"parts"`
				} `json:"content"`
			} `json:"candidates"`
		}
		if err := json.Unmarshal([]byte(line), &chunk); err != nil {
			t.Fatal(err)
		}
		for _, p := range chunk.Candidates[0].Content.Parts {
			if p.Thought {
				thoughts += p.Text
			} else {
				answer += p.Text
			}
			if p.ThoughtSignature != "" {
				sigs = append(sigs, p.ThoughtSignature)
			}
		}
	}
	return thoughts, answer, sigs
}

func TestFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file    string
		content func(thoughts, answer string, sigs []string) []model.Content
		id      string
		model   string
		stop    string
		usage   model.Usage
	}{
		{"pro_thought_function_call.sse", func(th, _ string, s []string) []model.Content {
			return []model.Content{reasoning(th, ""), tool("123rgs2b", "square_root", `{"number": 132413}`, s[0])}
		}, "5tYZav_2J6ic-8YPnMzQkAo", "gemini-3.1-pro-preview", model.StopToolUse, model.Usage{InputTokens: 104, OutputTokens: 19 + 113}},
		{"flash_lite_2_5_function_call_no_id.sse", func(th, _ string, s []string) []model.Content {
			return []model.Content{reasoning(th, ""), tool("gemini_call_udcZaqDaKufQ-8YPkuGY2QE_1", "square_root", `{"number": 132413}`, s[0])}
		}, "udcZaqDaKufQ-8YPkuGY2QE", "gemini-2.5-flash-lite", model.StopToolUse, model.Usage{InputTokens: 117, OutputTokens: 18 + 105}},
		{"flash_text_signature.sse", func(_, _ string, s []string) []model.Content {
			return []model.Content{text("Hello", s[0])}
		}, "IiYaau_fNqqajrEP2K2QqQU", "gemini-3.5-flash", model.StopEndTurn, model.Usage{InputTokens: 9, OutputTokens: 1 + 105}},
		{"flash_lite_after_tool.sse", func(_, _ string, s []string) []model.Content {
			return []model.Content{text("363.89", s[0])}
		}, "sSYaapWpCvSgjrEP2vufyQM", "gemini-3.1-flash-lite", model.StopEndTurn, model.Usage{InputTokens: 258, OutputTokens: 6 + 50}},
		{"flash_web_search_grounding.sse", func(_, _ string, s []string) []model.Content {
			return []model.Content{text("Mark Carney", s[0])}
		}, "NCYaatjVGIKb_uMP89bF6Qc", "gemini-3.5-flash", model.StopEndTurn, model.Usage{InputTokens: 29, OutputTokens: 208}},
		{"flash_thoughts_stop_sequence.sse", func(th, _ string, s []string) []model.Content {
			return []model.Content{reasoning(th, ""), text("Canada ", s[0])}
		}, "JiYaavyLAdyu-8YP6f3yqQE", "gemini-3.5-flash", model.StopEndTurn, model.Usage{InputTokens: 13, OutputTokens: 1 + 722}},
		{"pro_max_tokens.sse", func(th, _ string, s []string) []model.Content {
			return []model.Content{reasoning(th, ""), text("", s[0])}
		}, "1tYZaqhFx62OsQ_y9oqwDA", "gemini-3.1-pro-preview", model.StopMaxTokens, model.Usage{InputTokens: 10, OutputTokens: 12}},
	}
	files, _ := filepath.Glob("testdata/*.sse")
	if len(files) != len(tests) {
		t.Fatalf("%d fixtures, %d cases", len(files), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			raw := fixture(t, tt.file)
			th, answer, sigs := recorded(t, raw)
			if len(sigs) == 0 || (answer == "" && tt.stop == model.StopEndTurn) {
				t.Fatalf("fixture read wrong: %d signatures, answer %q", len(sigs), answer)
			}
			variants := []struct {
				name    string
				body    []byte
				oneByte bool
			}{
				{"whole", raw, false},
				{"one byte", raw, true},
				{"lf", bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n")), true},
				{"cr", bytes.ReplaceAll(bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r")), false},
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
					want := &model.Response{ID: tt.id, Model: tt.model, Content: tt.content(th, answer, sigs), StopReason: tt.stop, Usage: tt.usage}
					if !reflect.DeepEqual(r, want) {
						got, _ := json.Marshal(r)
						w, _ := json.Marshal(want)
						t.Fatalf("got  %s\nwant %s", got, w)
					}
					checkOrder(t, parts)
					continue
				}
				if !reflect.DeepEqual(parts, first) {
					t.Fatalf("%s: parts differ from the whole delivery", v.name)
				}
			}
			// Every split into two reads, for the short recordings (the
			// one-byte deliveries above cover every boundary at once).
			if len(raw) > 1200 {
				return
			}
			for i := range raw {
				r := io.MultiReader(bytes.NewReader(raw[:i]), iotest.OneByteReader(bytes.NewReader(raw[i:i+1])), bytes.NewReader(raw[i+1:]))
				if got := decodeAll(r); !reflect.DeepEqual(got, first) {
					t.Fatalf("split at %d: parts differ", i)
				}
			}
		})
	}
}

func decodeAll(r io.Reader) []model.Part {
	var parts []model.Part
	DecodeEvents(r, 2048, "gemini", func(e *model.APIError) error { return e }, func(p model.Part, err error) bool {
		if err == nil {
			parts = append(parts, p)
		}
		return err == nil
	})
	return parts
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

// stream builds an event stream of chunks, each a candidate's parts (as
// JSON) and the last with finish (none when empty).
func stream(finish string, parts ...string) string {
	var b strings.Builder
	for i, p := range parts {
		f := ""
		if i == len(parts)-1 && finish != "" {
			f = fmt.Sprintf(`,"finishReason":%q`, finish)
		}
		fmt.Fprintf(&b, `data: {"candidates":[{"content":{"parts":%s,"role":"model"}%s,"index":0}],"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":%d,"thoughtsTokenCount":3,"cachedContentTokenCount":8,"totalTokenCount":99},"modelVersion":"gemini-3-pro-preview","responseId":"r1"}`+"\r\n\r\n", p, f, i+1)
	}
	return b.String()
}

func TestParts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		want   []model.Content
		stop   string
		prefix string // of a made-up text: the refusal's note
	}{
		{"parallel calls, the first signed", stream("STOP",
			`[{"text":"Let me look.","thoughtSignature":"sigA"}]`,
			`[{"functionCall":{"name":"read","args":{"path":"a"},"id":"c1"},"thoughtSignature":"sigB"},{"functionCall":{"name":"read","args":{"path":"b"},"id":"c2"}}]`,
			`[{"text":""}]`),
			[]model.Content{text("Let me look.", "sigA"), tool("c1", "read", `{"path":"a"}`, "sigB"), tool("c2", "read", `{"path":"b"}`, "")}, model.StopToolUse, ""},
		{"text and a call in one chunk, no ids, no args", stream("STOP",
			`[{"text":"Now: "},{"functionCall":{"name":"now"}},{"functionCall":{"name":"now","args":{}}}]`),
			[]model.Content{text("Now: ", ""), tool("gemini_call_r1_1", "now", `{}`, ""), tool("gemini_call_r1_2", "now", `{}`, "")}, model.StopToolUse, ""},
		{"signed thoughts, then text over chunks", stream("STOP",
			`[{"text":"think ","thought":true}]`, `[{"text":"more","thought":true,"thoughtSignature":"t1"}]`,
			`[{"text":"Hel"}]`, `[{"text":"lo 世界"}]`, `[{"text":"","thoughtSignature":"t2"}]`),
			[]model.Content{reasoning("think more", "t1"), text("Hello 世界", "t2")}, model.StopEndTurn, ""},
		{"a signature with nothing open is a block of its own", stream("STOP",
			`[{"functionCall":{"name":"f","args":{"a":1},"id":"x"}}]`, `[{"text":"","thoughtSignature":"late"}]`),
			[]model.Content{tool("x", "f", `{"a":1}`, ""), text("", "late")}, model.StopToolUse, ""},
		{"text after a signature starts a new block", stream("STOP",
			`[{"text":"a","thoughtSignature":"s1"},{"text":"b"}]`),
			[]model.Content{text("a", "s1"), text("b", "")}, model.StopEndTurn, ""},
		{"unknown parts are skipped", stream("STOP",
			`[{"executableCode":{"language":"PYTHON","code":"print(1)"}},{"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"1"}},{"text":"1"}]`),
			[]model.Content{text("1", "")}, model.StopEndTurn, ""},
		{"safety stop is a refusal naming the reason", stream("SAFETY", `[{"text":"Partial"}]`),
			[]model.Content{text("Partial", ""), text("[Gemini blocked the answer: SAFETY]", "")}, model.StopRefusal, ""},
		{"recitation stop with a message", strings.Replace(stream("RECITATION", `[{"text":"x"}]`), `"index":0`, `"index":0,"finishMessage":"too close to a source"`, 1),
			[]model.Content{text("x", ""), text("[Gemini blocked the answer: RECITATION: too close to a source]", "")}, model.StopRefusal, ""},
		{"blocked prompt", `data: {"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":7,"totalTokenCount":7},"modelVersion":"gemini-2.5-pro","responseId":"r2"}` + "\n\n",
			[]model.Content{text("[Gemini blocked the prompt: PROHIBITED_CONTENT]", "")}, model.StopRefusal, ""},
		{"second candidate ignored", `data: {"candidates":[{"content":{"parts":[{"text":"one"}]},"finishReason":"STOP","index":0},{"content":{"parts":[{"text":"two"}]},"finishReason":"STOP","index":1}],"responseId":"r3"}` + "\n\n",
			[]model.Content{text("one", "")}, model.StopEndTurn, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := server(t, fakemodel.SSE(tt.body))
			parts, err := pt.Attempt(t, p, hi)
			if err != nil {
				t.Fatal(err)
			}
			checkOrder(t, parts)
			r := pt.Accumulate(t, parts)
			if !reflect.DeepEqual(r.Content, tt.want) || r.StopReason != tt.stop {
				g, _ := json.Marshal(r)
				w, _ := json.Marshal(tt.want)
				t.Fatalf("got  %s\nwant %s %s", g, w, tt.stop)
			}
		})
	}
}

// Usage comes with every chunk, the totals so far: the last one wins.
// Cached tokens are apart from the input; thoughts count as output.
func TestUsage(t *testing.T) {
	t.Parallel()
	body := stream("STOP", `[{"text":"a"}]`, `[{"text":"b"}]`)
	p := server(t, fakemodel.SSE(body))
	parts, err := pt.Attempt(t, p, hi)
	if err != nil {
		t.Fatal(err)
	}
	if parts[0].Usage != (model.Usage{InputTokens: 12, CacheReadInputTokens: 8}) {
		t.Fatalf("start usage %+v", parts[0].Usage)
	}
	if u := pt.Accumulate(t, parts).Usage; u != (model.Usage{InputTokens: 12, OutputTokens: 2 + 3, CacheReadInputTokens: 8}) {
		t.Fatalf("usage %+v", u)
	}
}

var okBody = stream("STOP", `[{"text":"Hi"}]`)

var ok = fakemodel.SSE(okBody)

func TestFailuresRetried(t *testing.T) {
	t.Parallel()
	unfinished := stream("", `[{"text":"Hi"}]`)
	tests := []struct {
		name  string
		first http.HandlerFunc
		want  error
	}{
		{"no finishReason", fakemodel.SSE(unfinished), model.ErrIncomplete},
		{"cut inside the last chunk", fakemodel.SSE(okBody[:len(okBody)-30]), model.ErrIncomplete},
		{"error after 200", fakemodel.SSE(unfinished + `data: {"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}` + "\r\n\r\n"), &model.APIError{}},
		{"malformed function call", fakemodel.SSE(stream("MALFORMED_FUNCTION_CALL", `[{"text":""}]`)), &model.APIError{}},
		{"html page", fakemodel.Page("text/html", "<!doctype html><title>502</title>"), model.ErrNotEventStream},
		{"connection reset", fakemodel.ResetAfter(okBody, 40), nil},
		{"500", fakemodel.JSON(500, `{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}`), &model.APIError{}},
		{"503", fakemodel.JSON(503, `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`), &model.APIError{}},
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
			// What the failed attempt showed is void: only the retry's
			// answer is left.
			if r := pt.Accumulate(t, parts); len(r.Content) != 1 || r.Content[0].Text != "Hi" {
				t.Fatalf("%+v", r)
			}
		})
	}
}

// A 429 waits as long as Google's RetryInfo asks, in the body.
func TestRateLimitRetryInfo(t *testing.T) {
	t.Parallel()
	h, n := fakemodel.Attempts(fakemodel.JSON(429, `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}`), ok)
	p := server(t, h)
	parts, waits, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
	if err != nil || n.Load() != 2 || len(waits) != 1 || waits[0] != 37*time.Second {
		t.Fatalf("%v after %d requests, waits %v", err, n.Load(), waits)
	}
	var apiErr *model.APIError
	if cause := pt.Retries(parts)[0].Err; !errors.As(cause, &apiErr) || apiErr.Type != "RESOURCE_EXHAUSTED" || apiErr.Status != 429 || !strings.Contains(apiErr.Message, "quota") {
		t.Fatalf("cause %v", cause)
	}
}

func TestErrorAnswers(t *testing.T) {
	t.Parallel()
	recordedKey := string(fixture(t, "error_bad_api_key.json"))
	tests := []struct {
		name     string
		status   int
		body     string
		overflow bool
		message  string
	}{
		{"bad key (recorded)", 400, recordedKey, false, "INVALID_ARGUMENT: API key not valid. Please pass a valid API key."},
		{"overflow", 400, `{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`, true, "exceeds the maximum number of tokens"},
		{"no model", 404, `{"error":{"code":404,"message":"models/gemini-9 is not found for API version v1beta","status":"NOT_FOUND"}}`, false, "NOT_FOUND: models/gemini-9 is not found"},
		{"permission", 403, `{"error":{"code":403,"message":"Method doesn't allow unregistered callers.","status":"PERMISSION_DENIED"}}`, false, "PERMISSION_DENIED"},
		{"error chunk after 200, not retryable", 200, stream("", `[{"text":"x"}]`) + `data: {"error":{"code":400,"message":"Request contains an invalid argument.","status":"INVALID_ARGUMENT"}}` + "\n\n", false, "INVALID_ARGUMENT: Request contains an invalid argument."},
		{"finish OTHER", 200, stream("OTHER", `[{"text":"x"}]`), false, "finishReason OTHER"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, n := fakemodel.Attempts(func(w http.ResponseWriter, r *http.Request) {
				if tt.status == 200 {
					fakemodel.ServeSSE(w, []byte(tt.body), false)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream") // as Google answers a streaming request
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}, ok)
			p := server(t, h)
			_, _, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
			if err == nil || n.Load() != 1 || errors.Is(err, model.ErrContextOverflow) != tt.overflow || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("err = %v after %d requests", err, n.Load())
			}
			if strings.Contains(err.Error(), apiKey) {
				t.Fatal("the key is in the error")
			}
		})
	}
}

func TestStallAndIdleTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	silent := fakemodel.Stall(fakemodel.SSE(stream("", `[{"text":"lost"}]`)), release)
	h, n := fakemodel.Attempts(silent, ok)
	p := server(t, h)
	clock := modeltest.NewClock(time.Unix(0, 0))
	opts := model.StreamOptions{
		Clock: clock, StallWarning: 10 * time.Second, IdleTimeout: time.Minute,
		Sleep: func(context.Context, time.Duration) error { return nil },
	}
	next, stop := iter.Pull2(model.Stream(t.Context(), p, hi, opts))
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
	expect(model.PartBlockStart)
	expect(model.PartBlockDelta)
	advance(10 * time.Second)
	expect(model.PartStalled)
	advance(50 * time.Second)
	if part := expect(model.PartRetry); !errors.Is(part.Retry.Err, model.ErrIdleTimeout) {
		t.Fatalf("cause %v", part.Retry.Err)
	}
	var parts []model.Part
	for {
		part, err, more := next()
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			break
		}
		parts = append(parts, part)
	}
	if r := pt.Accumulate(t, parts); n.Load() != 2 || len(r.Content) != 1 || r.Content[0].Text != "Hi" {
		t.Fatalf("%d requests, %+v", n.Load(), r)
	}
}

// After repeated streaming failures, generateContent answers whole, and
// the answer reaches the consumer as the same parts.
func TestFallbackToGenerateContent(t *testing.T) {
	t.Parallel()
	var streamed, whole atomic.Int32
	p := server(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
			streamed.Add(1)
			fakemodel.ServeSSE(w, []byte(`data: {"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}`+"\n\n"), false)
			return
		}
		whole.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"candidates":[{"content":{"parts":[{"text":"ponder","thought":true},{"text":"Whole answer"},{"functionCall":{"name":"Bash","args":{"command":"ls"}},"thoughtSignature":"fsig"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":9,"totalTokenCount":13},"modelVersion":"gemini-2.5-flash","responseId":"w1"}`)
	})
	parts, _, err := pt.StreamAll(t, p, hi, model.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := pt.Accumulate(t, parts)
	want := []model.Content{reasoning("ponder", ""), text("Whole answer", ""), tool("gemini_call_w1_1", "Bash", `{"command":"ls"}`, "fsig")}
	if whole.Load() != 1 || !reflect.DeepEqual(r.Content, want) || r.StopReason != model.StopToolUse || r.Usage != (model.Usage{InputTokens: 4, OutputTokens: 9}) {
		g, _ := json.Marshal(r)
		t.Fatalf("%d streams, %d whole, %s", streamed.Load(), whole.Load(), g)
	}
}

func TestEarlyBreakReleasesConnection(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	stall := fakemodel.Stall(fakemodel.SSE(stream("", `[{"text":"Hi"}]`)), nil)
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
	c := Config{APIKey: apiKey}
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
	f.Add([]byte(stream("STOP", `[{"text":"a","thoughtSignature":"s"},{"functionCall":{"name":"f"}},{"text":"","thoughtSignature":"t"}]`)))
	f.Add([]byte(stream("SAFETY", `[{"text":"t","thought":true}]`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		var acc model.Accumulator
		DecodeEvents(bytes.NewReader(data), 1<<12, "gemini", func(e *model.APIError) error { return e }, func(p model.Part, err error) bool {
			n++
			// Every part comes from some bytes; a refusal adds a note of
			// its own.
			if n > 4*len(data)+8 {
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
