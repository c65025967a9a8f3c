package printmode

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/printmode/cclines"
	"github.com/sluicehq/sluice/internal/provider/anthropic"
)

// fakeHost is the program driving print mode: it writes lines to Run's
// stdin and answers Run's control requests as the Agent SDK does — its
// in-process MCP server "acp" (one tool, echo), and can_use_tool and
// PermissionRequest hook callbacks with deny.
type fakeHost struct {
	t    *testing.T
	in   *io.PipeWriter
	deny map[string]any // the can_use_tool answer
	// onResult runs at the first result line, before the input is closed.
	onResult func(*fakeHost)

	mu    sync.Mutex
	lines []map[string]any
	asked []string // the control requests' subtypes (mcp_message's method)
}

func (f *fakeHost) send(line string) {
	io.WriteString(f.in, line+"\n") // after the result, the input is closed
}

// serve reads print mode's output until it ends, answering its requests.
func (f *fakeHost) serve(out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			f.t.Errorf("output line is not JSON: %q", sc.Text())
			continue
		}
		f.mu.Lock()
		f.lines = append(f.lines, l)
		f.mu.Unlock()
		if l["type"] == "result" {
			if f.onResult != nil {
				f.onResult(f)
				f.onResult = nil
			}
			f.in.Close() // one turn: the input ends with its result
		}
		if l["type"] != "control_request" {
			continue
		}
		req := l["request"].(map[string]any)
		var answer any = map[string]any{}
		switch req["subtype"] {
		case "mcp_message":
			msg := req["message"].(map[string]any)
			f.mu.Lock()
			f.asked = append(f.asked, fmt.Sprint("mcp_message ", req["server_name"], " ", msg["method"]))
			f.mu.Unlock()
			var result any = map[string]any{}
			switch msg["method"] {
			case "initialize":
				result = map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "acp", "version": "1"}}
			case "tools/list":
				result = map[string]any{"tools": []any{map[string]any{"name": "echo", "description": "Echoes its text.", "inputSchema": map[string]any{"type": "object"}}}}
			}
			answer = map[string]any{"mcp_response": map[string]any{"jsonrpc": "2.0", "id": msg["id"], "result": result}}
		case "hook_callback":
			f.mu.Lock()
			f.asked = append(f.asked, fmt.Sprint("hook_callback ", req["input"].(map[string]any)["hook_event_name"]))
			f.mu.Unlock()
			answer = map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "PermissionRequest", "decision": f.deny}}
		case "can_use_tool":
			f.mu.Lock()
			f.asked = append(f.asked, fmt.Sprint("can_use_tool ", req["tool_name"]))
			f.mu.Unlock()
			answer = f.deny
		}
		resp, _ := json.Marshal(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": l["request_id"], "response": answer}})
		f.send(string(resp))
	}
}

// runHost runs print mode with stream-json both ways against a fake model
// answering specs; script writes the host's lines, and the input ends with
// the first result.
func runHost(t *testing.T, cfg Config, deny map[string]any, specs []string, script func(*fakeHost), onResult ...func(*fakeHost)) (code int, f *fakeHost, srv *fakemodel.Script, stderr string) {
	t.Helper()
	srv, err := fakemodel.NewScript(fakemodel.Anthropic, answers(t, specs...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	var opened *agent.Session
	cfg.Open = func(init Init) (*agent.Session, error) {
		s, err := agent.New(agent.Options{
			Provider: anthropic.New(anthropic.Config{APIKey: "sk-test", BaseURL: srv.URL}),
			Model:    "test-model", WorkDir: t.TempDir(), Hooks: init.Hooks, ExtraTools: init.Tools,
		})
		opened = s
		return s, err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errBuf strings.Builder
	cfg.OutputFormat, cfg.InputFormat = FormatStreamJSON, FormatStreamJSON
	cfg.Stdin, cfg.Stdout, cfg.Stderr = inR, outW, &errBuf
	f = &fakeHost{t: t, in: inW, deny: deny}
	if len(onResult) > 0 {
		f.onResult = onResult[0]
	}
	served := make(chan struct{})
	go func() { defer close(served); f.serve(outR) }()
	done := make(chan int)
	go func() {
		c := Run(t.Context(), nil, "", cfg)
		outW.Close()
		done <- c
	}()
	script(f)
	<-served
	code = <-done
	inR.Close()
	if opened != nil {
		opened.Close()
	}
	return code, f, srv, errBuf.String()
}

// The Agent SDK (0.2.x, as Zed's ACP adapter bundles it) names its
// in-process server on the command line, --mcp-config
// {"mcpServers":{"acp":{"type":"sdk","name":"acp"}}}, and its initialize
// may not: print mode reaches it through mcp_message all the same, as
// Claude Code does, and offers its tools.
func TestSDKServerFromMCPConfig(t *testing.T) {
	t.Parallel()
	code, f, srv, stderr := runHost(t, Config{SDKMCPServers: []string{"acp"}}, nil, []string{"say:Hi."}, func(f *fakeHost) {
		f.send(`{"type":"control_request","request_id":"i1","request":{"subtype":"initialize","hooks":{}}}`)
		f.send(`{"type":"user","message":{"role":"user","content":"hello"}}`)
	})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := []string{"mcp_message acp initialize", "mcp_message acp notifications/initialized", "mcp_message acp tools/list"}; fmt.Sprint(f.asked) != fmt.Sprint(want) {
		t.Errorf("asked the host %q, want %q", f.asked, want)
	}
	init := find(f.lines, "system/init")
	if len(init) != 1 || !strings.Contains(fmt.Sprint(init[0]["mcp_servers"]), "name:acp source:sdk status:connected") {
		t.Errorf("system/init mcp_servers %v, want acp connected", init)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), `"name":"mcp__acp__echo"`) {
		t.Errorf("the model was not offered mcp__acp__echo")
	}
}

// can_use_tool answered {"behavior":"deny","interrupt":true} ends the turn
// as Claude Code ends it: the denial is the call's result, the model is
// not asked again, and the result is error_during_execution with
// terminal_reason aborted_tools and the call in permission_denials.
func TestDenialWithInterruptEndsTheTurn(t *testing.T) {
	t.Parallel()
	deny := map[string]any{"behavior": "deny", "message": "User refused permission to run tool", "interrupt": true}
	code, f, srv, stderr := runHost(t, Config{PermissionPromptStdio: true}, deny, []string{"bash:touch x", "say:never asked"}, func(f *fakeHost) {
		f.send(`{"type":"user","message":{"role":"user","content":"make x"}}`)
	})
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1: the denial stops the turn", n)
	}
	if fmt.Sprint(f.asked) != "[can_use_tool Bash]" {
		t.Errorf("asked the host %q", f.asked)
	}
	res := find(f.lines, "result/error_during_execution")
	if len(res) != 1 {
		t.Fatalf("lines %q, want one error_during_execution result", kinds(f.lines))
	}
	r := res[0]
	if r["is_error"] != true || r["terminal_reason"] != "aborted_tools" {
		t.Errorf("result %v, want is_error and terminal_reason aborted_tools", r)
	}
	if d, _ := r["permission_denials"].([]any); len(d) != 1 || d[0].(map[string]any)["tool_name"] != "Bash" {
		t.Errorf("permission_denials %v, want the Bash call", r["permission_denials"])
	}
	// Claude Code reports the stopped call as a user rejection.
	var meta string
	var notes []string
	for _, l := range find(f.lines, "user") {
		if l["tool_use_result"] == nil {
			notes = append(notes, fmt.Sprint(l["message"]))
			continue
		}
		meta += fmt.Sprint(l["tool_use_result"], l["tool_result_meta"])
	}
	if want := "User rejected tool use[map[id:toolu_fake_0001 non_execution_kind:user-rejected]]"; meta != want {
		t.Errorf("the denied call's user line: %s, want %s", meta, want)
	}
	// Then, as Claude Code writes it, the note that the turn was stopped.
	if len(notes) != 1 || !strings.Contains(notes[0], cclines.InterruptedForUse) {
		t.Errorf("user lines without a tool result %q, want one: %q", notes, cclines.InterruptedForUse)
	}
	// Claude Code exits 1 when the last result is an error.
	if code != 1 {
		t.Errorf("exit %d, want 1 (the result is an error): %s", code, stderr)
	}
}

// A PermissionRequest hook of the host that denies with interrupt: true
// stops the turn the same way, without --permission-prompt-tool (Claude
// Code 2.1.328: one model request, aborted_tools, the call denied).
func TestPermissionRequestHookInterrupt(t *testing.T) {
	t.Parallel()
	deny := map[string]any{"behavior": "deny", "message": "hook says no", "interrupt": true}
	code, f, srv, stderr := runHost(t, Config{}, deny, []string{"bash:touch x", "say:never asked"}, func(f *fakeHost) {
		f.send(`{"type":"control_request","request_id":"i1","request":{"subtype":"initialize","hooks":{"PermissionRequest":[{"matcher":"Bash","hookCallbackIds":["h1"]}]}}}`)
		f.send(`{"type":"user","message":{"role":"user","content":"make x"}}`)
	})
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1", n)
	}
	if fmt.Sprint(f.asked) != "[hook_callback PermissionRequest]" {
		t.Errorf("asked the host %q", f.asked)
	}
	res := find(f.lines, "result/error_during_execution")
	if len(res) != 1 || res[0]["terminal_reason"] != "aborted_tools" || code != 1 {
		t.Errorf("exit %d, results %v: want one aborted_tools error result and exit 1: %s", code, res, stderr)
	}
}
