package printmode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/hooks"
	"github.com/sluicehq/sluice/internal/provider/anthropic"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
)

// fakeSession is a session on a fake Anthropic server answering with
// answers, shaped by opts; it returns the server too, for the requests.
func fakeSession(t *testing.T, opts agent.Options, specs ...string) (*agent.Session, *fakemodel.Script) {
	t.Helper()
	srv, err := fakemodel.NewScript(fakemodel.Anthropic, answers(t, specs...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	opts.Provider = anthropic.New(anthropic.Config{APIKey: "sk-test", BaseURL: srv.URL})
	opts.Model = "test-model"
	if opts.WorkDir == "" {
		opts.WorkDir = t.TempDir()
	}
	sess, err := agent.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess, srv
}

func requestModels(t *testing.T, srv *fakemodel.Script) []string {
	t.Helper()
	var out []string
	for _, r := range srv.Requests() {
		var body struct{ Model string }
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		out = append(out, body.Model)
	}
	return out
}

// kinds are the lines' type/subtype, but stream events.
func kinds(ls []map[string]any) []string {
	var out []string
	for _, l := range ls {
		if l["type"] == "stream_event" {
			continue
		}
		k := fmt.Sprint(l["type"])
		if s, ok := l["subtype"]; ok {
			k += "/" + fmt.Sprint(s)
		}
		out = append(out, k)
	}
	return out
}

func find(ls []map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, l := range ls {
		k := fmt.Sprint(l["type"])
		if s, ok := l["subtype"]; ok {
			k += "/" + fmt.Sprint(s)
		}
		if k == kind {
			out = append(out, l)
		}
	}
	return out
}

// --fallback-model: three overloaded answers in a row switch to the
// fallback model, said by a system/model_fallback line in place of the
// third api_retry; the rest of the run asks the fallback model.
func TestModelFallbackLine(t *testing.T) {
	t.Parallel()
	sess, srv := fakeSession(t, agent.Options{
		PermissionMode: protocol.ModeBypassPermissions,
		Stream:         model.StreamOptions{MaxRetries: 5, FallbackModels: []string{"fallback-model"}},
	}, "status:529", "status:529", "status:529", "bash:echo hi", "say:Done.")
	var stdout, stderr bytes.Buffer
	if code := Run(t.Context(), sess, "go", Config{OutputFormat: FormatStreamJSON, Stdout: &stdout, Stderr: &stderr}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	ls := lines(t, stdout.String())
	want := []string{"system/init", "system/api_retry", "system/api_retry", "system/model_fallback", "assistant", "user", "assistant", "result/success"}
	if got := kinds(ls); !reflect.DeepEqual(got, want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
	fb := find(ls, "system/model_fallback")[0]
	if fb["original_model"] != "test-model" || fb["fallback_model"] != "fallback-model" || fb["trigger"] != "overloaded" || fb["content"] == "" {
		t.Errorf("model_fallback %v", fb)
	}
	if got, want := requestModels(t, srv), []string{"test-model", "test-model", "test-model", "fallback-model", "fallback-model"}; !reflect.DeepEqual(got, want) {
		t.Errorf("requests asked %q, want %q", got, want)
	}
	if _, ok := find(ls, "result/success")[0]["modelUsage"].(map[string]any)["fallback-model"]; !ok {
		t.Errorf("result's modelUsage does not name the fallback model: %v", find(ls, "result/success")[0]["modelUsage"])
	}
}

// tool_result_meta says who decided about each call: the mode, a rule,
// a hook, or the host answering can_use_tool.
func TestToolResultMeta(t *testing.T) {
	t.Parallel()
	deny := func(agent.ToolCall) agent.Verdict {
		return agent.Verdict{Decision: protocol.DecisionDeny, Reason: "no"}
	}
	tests := []struct {
		name  string
		mode  protocol.PermissionMode
		rules func(agent.ToolCall) agent.Verdict
		want  string
	}{
		{"the mode let it run", protocol.ModeBypassPermissions, nil, `[{"id":"toolu_fake_0001","permission_decision":{"decision":"accept","reason_type":"mode","source":"config"}}]`},
		{"the mode refused it", protocol.ModePlan, nil, `[{"id":"toolu_fake_0001","non_execution_kind":"permission-rule","permission_decision":{"decision":"reject","reason_type":"mode","source":"config"}}]`},
		{"a rule refused it", protocol.ModeBypassPermissions, deny, `[{"id":"toolu_fake_0001","non_execution_kind":"permission-rule","permission_decision":{"decision":"reject","reason_type":"rule","source":"config"}}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, err := fakemodel.NewScript(fakemodel.Anthropic, answers(t, "bash:touch x", "say:Done."))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Close)
			var sess *agent.Session
			open := func(init Init) (*agent.Session, error) {
				s, err := agent.New(agent.Options{
					Provider: anthropic.New(anthropic.Config{APIKey: "sk-test", BaseURL: srv.URL}),
					Model:    "test-model", WorkDir: t.TempDir(), Hooks: init.Hooks, PermissionMode: tc.mode,
				})
				sess = s
				return s, err
			}
			var stdout, stderr bytes.Buffer
			Run(t.Context(), nil, "go", Config{OutputFormat: FormatStreamJSON, Open: open, Rules: tc.rules, Stdout: &stdout, Stderr: &stderr})
			if sess != nil {
				defer sess.Close()
			}
			users := find(lines(t, stdout.String()), "user")
			if len(users) != 1 {
				t.Fatalf("%d user lines:\n%s", len(users), stdout.String())
			}
			if got, _ := json.Marshal(users[0]["tool_result_meta"]); string(got) != tc.want {
				t.Errorf("tool_result_meta %s\nwant %s", got, tc.want)
			}
		})
	}
}

// --include-hook-events writes each command hook's start and end (without
// it, SessionStart's only, as Claude Code); session_state_changed lines
// frame the turn as the SDK asks for them.
func TestHookEventsAndSessionState(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		on   bool
		want []string
	}{
		{"asked for", true, []string{"system/session_state_changed", "system/init", "system/hook_started", "system/hook_response",
			"assistant", "system/hook_started", "system/hook_response", "user", "assistant", "result/success", "system/session_state_changed"}},
		{"not asked for", false, []string{"system/init", "system/hook_started", "system/hook_response", "assistant", "user", "assistant", "result/success"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			conf, err := hooks.Parse([]byte(`{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"echo checked"}]}],` +
				`"SessionStart":[{"hooks":[{"type":"command","command":"echo started"}]}]}}`))
			if err != nil {
				t.Fatal(err)
			}
			runner := &hooks.Runner{Config: conf, Dir: dir}
			relay := &HookRelay{}
			runner.Observe = relay.Observe
			sess, _ := fakeSession(t, agent.Options{WorkDir: dir, PermissionMode: protocol.ModeBypassPermissions, Hooks: runner.Agent()},
				"bash:echo hi", "say:Done.")
			var stdout, stderr bytes.Buffer
			cfg := Config{OutputFormat: FormatStreamJSON, IncludeHookEvents: tc.on, HookEvents: relay, Stdout: &stdout, Stderr: &stderr}
			if tc.on {
				cfg.SessionState = SessionStateHost
			}
			if code := Run(context.Background(), sess, "go", cfg); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			ls := lines(t, stdout.String())
			if got := kinds(ls); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("lines %q, want %q", got, tc.want)
			}
			start := find(ls, "system/hook_response")[0]
			if start["hook_name"] != "SessionStart:startup" || start["stdout"] != "started\n" {
				t.Errorf("SessionStart's hook line %v", start)
			}
			if !tc.on {
				return
			}
			states := find(ls, "system/session_state_changed")
			if states[0]["state"] != "running" || states[1]["state"] != "idle" || states[0]["sdk_host_only"] != true {
				t.Errorf("states %v", states)
			}
			started, resp := find(ls, "system/hook_started")[1], find(ls, "system/hook_response")[1]
			if started["hook_id"] != resp["hook_id"] || resp["hook_name"] != "PreToolUse:Bash" || resp["hook_event"] != "PreToolUse" ||
				resp["stdout"] != "checked\n" || resp["outcome"] != "success" || resp["exit_code"] != 0.0 || resp["session_id"] != sess.ID() {
				t.Errorf("hook lines %v %v", started, resp)
			}
		})
	}
}

// --resume-session-at keeps the messages up to the one an assistant or
// user line belongs to: a line's uuid names its message.
func TestResumeAt(t *testing.T) {
	t.Parallel()
	sess, _ := fakeSession(t, agent.Options{PermissionMode: protocol.ModeBypassPermissions},
		"bash:echo one", "say:First.", "say:Second.", "say:Third.")
	var out bytes.Buffer
	for _, p := range []string{"one", "two", "three"} {
		if code := Run(t.Context(), sess, p, Config{OutputFormat: FormatStreamJSON, Stdout: &out, Stderr: &out}); code != 0 {
			t.Fatalf("exit %d: %s", code, out.String())
		}
	}
	ls := lines(t, out.String())
	var assistants, users []string
	for _, l := range ls {
		switch l["type"] {
		case "assistant":
			assistants = append(assistants, l["uuid"].(string))
		case "user":
			users = append(users, l["uuid"].(string))
		}
	}
	if len(assistants) != 4 || len(users) != 1 {
		t.Fatalf("%d assistant and %d user lines", len(assistants), len(users))
	}
	texts := func() []string {
		var out []string
		for _, m := range sess.Messages().Messages {
			out = append(out, string(m.Role)+":"+m.Text())
		}
		return out
	}
	if err := ResumeAt(t.Context(), sess, "no-such-line"); err == nil {
		t.Error("an unknown line resumed")
	}
	// The second prompt's answer: the third prompt and its answer go.
	if err := ResumeAt(t.Context(), sess, assistants[2]); err != nil {
		t.Fatal(err)
	}
	if got, want := texts(), []string{"user:one", "assistant:", "assistant:First.", "user:two", "assistant:Second."}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("after resuming at the second answer: %q, want %q", got, want)
	}
	// The tool result's line: its message is the first response.
	if err := ResumeAt(t.Context(), sess, users[0]); err != nil {
		t.Fatal(err)
	}
	if got, want := texts(), []string{"user:one", "assistant:", "assistant:First."}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("after resuming at the tool result: %q, want %q", got, want)
	}
}

// --await-initialize: a user message written before the host's initialize
// waits for it, so that the session opens as initialize asks. Without
// it, the message opens the session as the command line alone says (the
// initialize is written only once the session is open).
func TestAwaitInitialize(t *testing.T) {
	t.Parallel()
	for _, await := range []bool{false, true} {
		srv, err := fakemodel.NewScript(fakemodel.Anthropic, answers(t, "say:Hi."))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		openedWith := make(chan string, 1)
		var opened *agent.Session
		open := func(init Init) (*agent.Session, error) {
			s, err := agent.New(agent.Options{
				Provider: anthropic.New(anthropic.Config{APIKey: "sk-test", BaseURL: srv.URL}),
				Model:    "test-model", WorkDir: t.TempDir(), Hooks: init.Hooks,
			})
			opened = s
			openedWith <- init.AppendSystemPrompt
			return s, err
		}
		pr, pw := io.Pipe()
		done := make(chan int)
		var stdout, stderr bytes.Buffer
		go func() {
			done <- Run(t.Context(), nil, "", Config{
				OutputFormat: FormatStreamJSON, InputFormat: FormatStreamJSON, Open: open, AwaitInitialize: await,
				Stdin: pr, Stdout: &stdout, Stderr: &stderr,
			})
		}()
		io.WriteString(pw, `{"type":"user","message":{"role":"user","content":"hello"}}`+"\n")
		var got string
		if !await {
			got = <-openedWith
		}
		io.WriteString(pw, `{"type":"control_request","request_id":"r1","request":{"subtype":"initialize","appendSystemPrompt":"Be brief."}}`+"\n")
		if await {
			got = <-openedWith
		}
		pw.Close()
		<-done
		opened.Close()
		if want := map[bool]string{false: "", true: "Be brief."}[await]; got != want {
			t.Errorf("await %v: the session opened with appendSystemPrompt %q, want %q", await, got, want)
		}
	}
}
