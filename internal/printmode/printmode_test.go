package printmode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/provider"
	"github.com/sluicehq/sluice/internal/provider/anthropic"
	"github.com/sluicehq/sluice/internal/streamjson"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newSession starts a session on a fake Anthropic server that answers
// with answers, without retries; both end with the test.
func newSession(t *testing.T, answers ...fakemodel.Reply) *agent.Session {
	t.Helper()
	return newSessionRetrying(t, -1, answers...)
}

func newSessionRetrying(t *testing.T, retries int, answers ...fakemodel.Reply) *agent.Session {
	t.Helper()
	srv, err := fakemodel.NewScript(fakemodel.Anthropic, answers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	sess, err := agent.New(agent.Options{
		Provider: anthropic.New(anthropic.Config{APIKey: "sk-test", BaseURL: srv.URL}),
		Model:    "test-model",
		WorkDir:  t.TempDir(),
		Stream:   model.StreamOptions{MaxRetries: retries},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

func answers(t *testing.T, specs ...string) []fakemodel.Reply {
	t.Helper()
	as, err := fakemodel.ParseReplies(specs)
	if err != nil {
		t.Fatal(err)
	}
	return as
}

// lines parses stream-json output, checking that each line starts with
// its type.
func lines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var ls []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), `{"type":`) {
			t.Fatalf("line does not start with its type: %s", sc.Text())
		}
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line is not JSON: %v: %s", err, sc.Text())
		}
		ls = append(ls, l)
	}
	return ls
}

// An interrupt in the middle of an answer ends the run: the output has
// what streamed, the result says the run failed and why, and the exit
// status is 1. The interrupt comes once the session has published the
// first text, so what streamed is known.
func TestInterruptMidStream(t *testing.T) {
	t.Parallel()
	const partial = "The answer so far, before the model stalls."
	for _, format := range []string{FormatText, FormatJSON, FormatStreamJSON} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			sess := newSession(t, answers(t, "hang:"+partial)...)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			watch := sess.Subscribe(agent.SubscribeOptions{})
			defer watch.Close()
			go func() {
				var got strings.Builder
				for got.String() != partial {
					ev, err := watch.Next(ctx)
					if err != nil {
						return
					}
					if e, ok := ev.(protocol.AssistantContentUpdated); ok {
						got.WriteString(e.Chunk)
					}
				}
				cancel()
			}()
			var stdout, stderr bytes.Buffer
			code := Run(ctx, sess, "Tell me everything.", Config{
				OutputFormat: format, IncludePartial: format == FormatStreamJSON,
				Stdout: &stdout, Stderr: &stderr,
			})
			if code != 1 {
				t.Errorf("exit status %d, want 1", code)
			}
			if !strings.Contains(stderr.String(), agent.ErrAborted.Error()) {
				t.Errorf("stderr %q does not say the run was aborted", stderr.String())
			}
			if format == FormatText {
				if stdout.String() != partial+"\n" {
					t.Errorf("stdout %q, want what streamed: %q", stdout.String(), partial+"\n")
				}
				return
			}
			ls := lines(t, stdout.String())
			res := ls[len(ls)-1]
			want := map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true}
			for k, v := range want {
				if res[k] != v {
					t.Errorf("result %s = %v, want %v", k, res[k], v)
				}
			}
			// As Claude Code's (testdata/claude-code/errors/interrupt.json).
			if r, has := res["result"]; has {
				t.Errorf("result %q after an abort: Claude Code's has none", r)
			}
			if errs, _ := res["errors"].([]any); len(errs) != 1 || !strings.Contains(strings.ToLower(fmt.Sprint(errs[0])), agent.ErrAborted.Error()) {
				t.Errorf("result errors %v, want the abort", res["errors"])
			}
			if format == FormatStreamJSON {
				// Claude Code's lines before the result
				// (testdata/claude-code/errors/interrupt.json): what had
				// streamed, marked aborted, and the user's interrupt.
				cut, user := ls[len(ls)-3], ls[len(ls)-2]
				content, _ := cut["message"].(map[string]any)["content"].([]any)
				if cut["type"] != "assistant" || cut["aborted"] != true || len(content) != 1 || content[0].(map[string]any)["text"] != partial {
					t.Errorf("line before the interrupt's: %v", cut)
				}
				if user["type"] != "user" || fmt.Sprint(user["message"]) != "map[content:[map[text:[Request interrupted by user] type:text]] role:user]" {
					t.Errorf("the interrupt's user line: %v", user)
				}
				var text strings.Builder
				for _, l := range ls {
					if ev, ok := l["event"].(map[string]any); ok && ev["type"] == "content_block_delta" {
						text.WriteString(ev["delta"].(map[string]any)["text"].(string))
					}
				}
				if text.String() != partial {
					t.Errorf("stream events carried %q, want %q", text.String(), partial)
				}
			}
		})
	}
}

// system/init reports the configuration print mode was given; api_retry
// lines the retry bound.
func TestInitAndRetryLines(t *testing.T) {
	t.Parallel()
	sess := newSessionRetrying(t, 3, answers(t, "status:529", "say:Hi.")...)
	var stdout, stderr bytes.Buffer
	code := Run(t.Context(), sess, "hello", Config{
		OutputFormat: FormatStreamJSON, Model: "test-model", PermissionMode: "default",
		APIKeySource: "ANTHROPIC_API_KEY", Version: "1.2.3", AddDirs: []string{"/srv/data"},
		MCPServers: []streamjson.MCPServer{{Name: "files", Status: "connected", Source: streamjson.SourceDynamic}, {Name: "broken", Status: "failed", Source: streamjson.SourceDynamic}},
		MaxRetries: 3, Stdout: &stdout, Stderr: &stderr,
	})
	if code != 0 {
		t.Fatalf("exit status %d: %s", code, stderr.String())
	}
	out := strings.Split(stdout.String(), "\n")
	init := fmt.Sprintf(`{"type":"system","subtype":"init","cwd":%q,"session_id":%q,"tools":["Bash","Read","Write","Edit","Glob","Grep","TodoWrite","WebFetch","BashOutput","KillShell"],`+
		`"mcp_servers":[{"name":"files","status":"connected","source":"dynamic"},{"name":"broken","status":"failed","source":"dynamic"}],"model":"test-model","permissionMode":"default",`+
		`"slash_commands":[],"apiKeySource":"ANTHROPIC_API_KEY","sluice_version":"1.2.3","output_style":"default","agents":[],"skills":[],"plugins":[],"uuid":"`, sess.WorkDir(), sess.ID())
	initEnd := fmt.Sprintf(`","additional_directories":["/srv/data"],"claude_code_version":"2.1.328","capabilities":["sdk_mcp_manifests"],`+
		`"original_cwd":%q,"analytics_disabled":true,"product_feedback_disabled":true,"fast_mode_state":"off","terminal_slash_commands":[],`+
		`"view_mode":"default","ultrathink_available":false,"ultrathink_typed_raises":false,"per_turn_effort_active":false}`, sess.WorkDir())
	if !strings.HasPrefix(out[0], init) || !strings.HasSuffix(out[0], initEnd) {
		t.Errorf("init line\n%s\nwant\n%s…%s", out[0], init, initEnd)
	}
	retry := `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":3,"retry_delay_ms":5,"error_status":529,"error":"overloaded","error_message":"anthropic API error 529 overloaded_error: Overloaded",`
	if !strings.HasPrefix(out[1], retry) {
		t.Errorf("retry line\n%s\nwant\n%s…", out[1], retry)
	}
}

// An interrupt before the run starts runs nothing and is not a success.
func TestInterruptBeforeRun(t *testing.T) {
	t.Parallel()
	sess := newSession(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var stdout, stderr bytes.Buffer
	code := Run(ctx, sess, "hello", Config{OutputFormat: FormatStreamJSON, Stdout: &stdout, Stderr: &stderr})
	if code != 1 || stderr.String() != "sluice: interrupted\n" {
		t.Errorf("exit status %d, stderr %q; want 1 and the interrupt", code, stderr.String())
	}
	ls := lines(t, stdout.String())
	if len(ls) != 1 || ls[0]["subtype"] != "init" {
		t.Errorf("output %q, want system/init alone", stdout.String())
	}
}

// An interrupt that races with the start of the run never leaves print
// mode waiting: a message aborted while still queued publishes no event,
// only its handle ends. Run must return whichever way the race goes.
func TestInterruptRacingStart(t *testing.T) {
	t.Parallel()
	sess := newSession(t, answers(t, "say:one", "say:two", "say:three", "say:four", "say:five", "say:six", "say:seven", "say:eight")...)
	for range 200 {
		ctx, cancel := context.WithCancel(t.Context())
		go cancel()
		var stdout, stderr bytes.Buffer
		switch code := Run(ctx, sess, "hello", Config{OutputFormat: FormatJSON, Stdout: &stdout, Stderr: &stderr}); code {
		case 0: // the run finished before the interrupt
		case 1:
			if stderr.Len() == 0 {
				t.Fatal("exit status 1 and nothing on stderr")
			}
		default:
			t.Fatalf("exit status %d", code)
		}
	}
}

// Anthropic's recorded streams come out as stream_event lines that carry
// the server's events as they were, apart from pings (dropped), usage
// (sluice reports the response's totals) and the text a block starts with
// (a block's text comes only from its deltas). Each finished block is an
// assistant line holding it whole.
func TestRecordedStreamsPassThrough(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"thinking_text.sse", "redacted_thinking.sse", "thinking_web_search_citations.sse", "server_code_execution.sse", "tool_use_response.sse"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			body, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			// The tool use of tool_use_response.sse asks for a tool that
			// does not exist; the model's second answer ends the run.
			sess := newSession(t, fakemodel.Reply{Raw: body}, answers(t, "say:Done.")[0])
			var stdout, stderr bytes.Buffer
			code := Run(t.Context(), sess, "hello", Config{
				OutputFormat: FormatStreamJSON, IncludePartial: true, Stdout: &stdout, Stderr: &stderr,
			})
			if code != 0 {
				t.Fatalf("exit status %d; stderr: %s", code, stderr.String())
			}
			var got, blocks []any
			first := "" // the recorded response's id
			for _, l := range lines(t, stdout.String()) {
				switch l["type"] {
				case "stream_event":
					got = append(got, normalise(l["event"].(map[string]any)))
				case "assistant":
					m := l["message"].(map[string]any)
					if first == "" {
						first = m["id"].(string)
					}
					if m["id"] == first {
						blocks = append(blocks, m["content"].([]any)...)
					}
				}
			}
			got = got[:firstResponse(got)]
			want, wantBlocks := serverEvents(t, body)
			firstDiff(t, "stream event", got, want)
			firstDiff(t, "assistant line's block", blocks, wantBlocks)
		})
	}
}

// firstDiff reports where got and want first differ.
func firstDiff(t *testing.T, what string, got, want []any) {
	t.Helper()
	for i := range min(len(got), len(want)) {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("%s %d:\n got %.400s\nwant %.400s", what, i, js(got[i]), js(want[i]))
			return
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d %ss, want %d", len(got), what, len(want))
	}
}

// firstResponse is the number of events up to the first message_stop.
func firstResponse(evs []any) int {
	for i, ev := range evs {
		if ev.(map[string]any)["type"] == "message_stop" {
			return i + 1
		}
	}
	return len(evs)
}

// serverEvents reads an Anthropic event stream and returns its events as
// print mode passes them on, and the content blocks they build.
func serverEvents(t *testing.T, body []byte) (evs, blocks []any) {
	t.Helper()
	open := map[float64]map[string]any{}
	partial := map[float64]string{}
	for _, line := range strings.Split(strings.ReplaceAll(string(body), "\r\n", "\n"), "\n") {
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("fixture: %v: %s", err, data)
		}
		switch ev["type"] {
		case "ping":
			continue
		case "content_block_start":
			b := ev["content_block"].(map[string]any)
			open[ev["index"].(float64)] = clone(b)
			switch b["type"] {
			case "text":
				b["text"] = ""
			case "thinking":
				b["thinking"], b["signature"] = "", ""
			case "redacted_thinking":
				b["data"] = ""
			}
		case "content_block_delta":
			b, d := open[ev["index"].(float64)], ev["delta"].(map[string]any)
			if d["text"] == "" || d["thinking"] == "" || d["partial_json"] == "" {
				continue // an empty delta adds nothing: providers drop it
			}
			switch d["type"] {
			case "text_delta":
				b["text"] = b["text"].(string) + d["text"].(string)
			case "thinking_delta":
				b["thinking"] = b["thinking"].(string) + d["thinking"].(string)
			case "signature_delta":
				b["signature"] = d["signature"]
			case "citations_delta":
				cs, _ := b["citations"].([]any)
				b["citations"] = append(cs, d["citation"])
			case "input_json_delta":
				partial[ev["index"].(float64)] += d["partial_json"].(string)
			}
		case "content_block_stop":
			i := ev["index"].(float64)
			b := open[i]
			if b["type"] == "tool_use" || b["type"] == "server_tool_use" {
				var in any = map[string]any{}
				if p := partial[i]; p != "" {
					json.Unmarshal([]byte(p), &in)
				}
				b["input"] = in
			}
			normaliseBlock(b)
			blocks = append(blocks, b)
		}
		evs = append(evs, normalise(ev))
	}
	return evs, blocks
}

// normalise drops what print mode does not pass on as the server sent it:
// usage, which sluice reports as the response's totals; and fields of
// newer API versions that the providers' parts do not carry: a message's
// stop_details, a code execution's container, a tool use's caller, a text
// block's empty citations at its start.
func normalise(ev map[string]any) map[string]any {
	out := clone(ev)
	delete(out, "usage")
	if m, ok := out["message"].(map[string]any); ok {
		delete(m, "usage")
		if m["stop_details"] == nil {
			delete(m, "stop_details")
		}
	}
	if b, ok := out["content_block"].(map[string]any); ok {
		normaliseBlock(b)
	}
	if d, ok := out["delta"].(map[string]any); ok && out["type"] == "message_delta" {
		delete(d, "container")
		if d["stop_details"] == nil {
			delete(d, "stop_details")
		}
	}
	return out
}

func normaliseBlock(b map[string]any) {
	if b["type"] == "tool_use" {
		delete(b, "caller")
	}
	if cs, ok := b["citations"].([]any); ok && len(cs) == 0 {
		delete(b, "citations")
	}
}

func clone(m map[string]any) map[string]any {
	data, _ := json.Marshal(m)
	var out map[string]any
	json.Unmarshal(data, &out)
	return out
}

func js(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// A writer that fails makes Run fail, saying so.
func TestWriteError(t *testing.T) {
	t.Parallel()
	sess := newSession(t, answers(t, "say:Hello.")...)
	var stderr bytes.Buffer
	code := Run(t.Context(), sess, "hi", Config{OutputFormat: FormatJSON, Stdout: failingWriter{}, Stderr: &stderr})
	if code != 1 || !strings.Contains(stderr.String(), "writing output") {
		t.Errorf("exit status %d, stderr %q; want 1 and the write error", code, stderr.String())
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// A stream-json input line past MaxInputLine ends the input with an error
// and is never held whole: the reader sees the bound, not the line.
func TestInputLineCap(t *testing.T) {
	t.Parallel()
	sess := newSession(t)
	long := io.MultiReader(strings.NewReader(`{"type":"user","message":{"role":"user","content":"`),
		io.LimitReader(repeatReader('a'), MaxInputLine), strings.NewReader("\"}}\n"))
	var stdout, stderr bytes.Buffer
	code := Run(t.Context(), sess, "", Config{
		OutputFormat: FormatStreamJSON, InputFormat: FormatStreamJSON,
		Stdin: long, Stdout: &stdout, Stderr: &stderr,
	})
	if code != 1 || !strings.Contains(stderr.String(), ErrLineTooLong.Error()) {
		t.Fatalf("exit %d, stderr %q; want 1 and %q", code, stderr.String(), ErrLineTooLong)
	}
	if MaxInputLine != wire.DefaultMaxMessageBytes {
		t.Errorf("MaxInputLine %d differs from sluice rpc's %d", MaxInputLine, wire.DefaultMaxMessageBytes)
	}
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// The control protocol on stream-json: initialize is answered with the
// fields the Agent SDK reads, an unknown subtype gets an error response,
// a response to nothing is ignored with a note, set_model and
// set_permission_mode reach the session, and every turn starts with
// system/init.
func TestControlProtocol(t *testing.T) {
	t.Parallel()
	srv, err := fakemodel.NewScript(fakemodel.Anthropic, answers(t, "say:Hi."))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	var opened *agent.Session
	open := func(init Init) (*agent.Session, error) {
		if init.AppendSystemPrompt != "Be brief." {
			t.Errorf("initialize's appendSystemPrompt %q", init.AppendSystemPrompt)
		}
		s, err := agent.New(agent.Options{
			Provider: anthropic.New(anthropic.Config{APIKey: "sk-test", BaseURL: srv.URL}),
			Model:    "test-model", WorkDir: t.TempDir(), Hooks: init.Hooks,
		})
		opened = s
		return s, err
	}
	in := strings.Join([]string{
		`{"type":"control_request","request_id":"r1","request":{"subtype":"initialize","appendSystemPrompt":"Be brief."}}`,
		`{"type":"control_request","request_id":"r2","request":{"subtype":"no_such_thing"}}`,
		`{"type":"control_response","response":{"subtype":"success","request_id":"nobody","response":{}}}`,
		`{"type":"control_request","request_id":"r3","request":{"subtype":"set_model","model":"other-model"}}`,
		`{"type":"control_request","request_id":"r4","request":{"subtype":"set_permission_mode","mode":"acceptEdits"}}`,
		`{"type":"control_request","request_id":"r5","request":{"subtype":"mcp_status"}}`,
		`{"type":"user","message":{"role":"user","content":"hello"}}`,
	}, "\n") + "\n"
	var stdout, stderr bytes.Buffer
	code := Run(t.Context(), nil, "", Config{
		OutputFormat: FormatStreamJSON, InputFormat: FormatStreamJSON, Open: open,
		Stdin: strings.NewReader(in), Stdout: &stdout, Stderr: &stderr,
	})
	if opened != nil {
		defer opened.Close()
	}
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	responses := map[string]map[string]any{}
	var kinds []string
	for _, l := range lines(t, stdout.String()) {
		if l["type"] == "control_response" {
			r := l["response"].(map[string]any)
			responses[r["request_id"].(string)] = r
			continue
		}
		kinds = append(kinds, fmt.Sprint(l["type"], "/", l["subtype"]))
		if l["type"] == "system" && l["model"] != "other-model" {
			t.Errorf("system/init model %v, want the one set_model chose", l["model"])
		}
		if l["type"] == "system" && l["permissionMode"] != "acceptEdits" {
			t.Errorf("system/init permissionMode %v, want acceptEdits", l["permissionMode"])
		}
	}
	init := responses["r1"]
	if init["subtype"] != "success" {
		t.Fatalf("initialize: %v", init)
	}
	body := init["response"].(map[string]any)
	for _, k := range []string{"commands", "agents", "output_style", "available_output_styles", "models", "account"} {
		if _, ok := body[k]; !ok {
			t.Errorf("initialize's answer has no %s: %v", k, body)
		}
	}
	if r := responses["r2"]; r["subtype"] != "error" || !strings.Contains(fmt.Sprint(r["error"]), "no_such_thing") {
		t.Errorf("unknown subtype answered %v", r)
	}
	for _, id := range []string{"r3", "r4", "r5"} {
		if responses[id]["subtype"] != "success" {
			t.Errorf("%s answered %v", id, responses[id])
		}
	}
	if !strings.Contains(stderr.String(), "answers no request") {
		t.Errorf("stderr %q does not note the stray control_response", stderr.String())
	}
	if want := []string{"system/init", "assistant/<nil>", "result/success"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("lines %q, want %q", kinds, want)
	}
}

// --max-budget-usd: the turn that spends the budget ends the run with
// error_max_budget_usd, and a later message is refused the same way
// without asking the model.
func TestMaxBudget(t *testing.T) {
	t.Parallel()
	srv, err := fakemodel.NewScript(fakemodel.Anthropic, answers(t, "bash:echo hi", "say:never asked"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	sess, err := agent.New(agent.Options{
		Provider: anthropic.New(anthropic.Config{APIKey: "sk-test", BaseURL: srv.URL}),
		Model:    "claude-sonnet-4-6", WorkDir: t.TempDir(), Stream: model.StreamOptions{MaxRetries: -1},
		// The providers' prices, as every face's sessions have them.
		Catalogue: provider.Catalogue,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	in := `{"type":"user","message":{"role":"user","content":"one"}}` + "\n" + `{"type":"user","message":{"role":"user","content":"two"}}` + "\n"
	var stdout, stderr bytes.Buffer
	code := Run(t.Context(), sess, "", Config{
		OutputFormat: FormatStreamJSON, InputFormat: FormatStreamJSON, MaxBudgetUSD: 1e-9, Catalogue: provider.Catalogue,
		Stdin: strings.NewReader(in), Stdout: &stdout, Stderr: &stderr,
	})
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	var got []string
	for _, l := range lines(t, stdout.String()) {
		if l["type"] == "result" {
			got = append(got, fmt.Sprint(l["subtype"], " ", l["terminal_reason"]))
		}
	}
	want := []string{"error_max_budget_usd budget_exhausted", "error_max_budget_usd budget_exhausted"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("results %q, want %q\n%s", got, want, stderr.String())
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("the model was asked %d times, want once", n)
	}
}
