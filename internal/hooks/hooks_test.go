package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv("SLUICE_TEST_HOOK_PARENT"); dir != "" {
		// The parent process of TestHookDiesWithSluice.
		hookParent(dir)
		return
	}
	goleak.VerifyTestMain(m)
}

// failAfter bounds waits for events on a loaded machine; it never decides
// an outcome.
const failAfter = 30 * time.Second

// script writes an executable shell script and returns its path.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func runner(dir string, conf Config) *Runner {
	return &Runner{Config: conf, Dir: dir, Environ: append(os.Environ(), "CLAUDE_PROJECT_DIR="+dir)}
}

func one(matcher string, cmds ...string) []Matcher {
	m := Matcher{Matcher: matcher}
	for _, c := range cmds {
		m.Hooks = append(m.Hooks, Command{Type: "command", Command: c})
	}
	if err := m.compile(); err != nil {
		panic(err)
	}
	return []Matcher{m}
}

func TestRunDecisions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		event  Event
		target string
		hooks  []string // script bodies, all under one matcher "*"
		want   Outcome
	}{
		{name: "exit 0 without output allows nothing special", event: PreToolUse, target: "Bash",
			hooks: []string{"exit 0"}, want: Outcome{}},
		{name: "exit 2 refuses the call with stderr", event: PreToolUse, target: "Bash",
			hooks: []string{"echo 'no rm here' >&2; exit 2"}, want: Outcome{Permission: "deny", PermissionReason: "no rm here"}},
		{name: "JSON permission allow with new input", event: PreToolUse, target: "Bash",
			hooks: []string{`echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"safe","updatedInput":{"command":"ls"}}}'`},
			want:  Outcome{Permission: "allow", PermissionReason: "safe", UpdatedInput: json.RawMessage(`{"command":"ls"}`)}},
		{name: "JSON ask", event: PreToolUse, target: "Bash",
			hooks: []string{`echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"check"}}'`},
			want:  Outcome{Permission: "ask", PermissionReason: "check"}},
		{name: "the older decision block denies", event: PreToolUse, target: "Bash",
			hooks: []string{`echo '{"decision":"block","reason":"old style"}'`}, want: Outcome{Permission: "deny", PermissionReason: "old style"}},
		{name: "a deny beats an allow", event: PreToolUse, target: "Bash",
			hooks: []string{`echo '{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"x":1}}}'`, "echo denied >&2; exit 2"},
			want:  Outcome{Permission: "deny", PermissionReason: "denied"}},
		{name: "other exit codes are reported, not blocking", event: PreToolUse, target: "Bash",
			hooks: []string{"echo oops >&2; exit 1"}, want: Outcome{Messages: []string{"HOOK0: oops"}}},
		{name: "PostToolUse exit 2 is feedback", event: PostToolUse, target: "Write",
			hooks: []string{"echo 'lint failed' >&2; exit 2"}, want: Outcome{Block: true, Reason: "lint failed"}},
		{name: "Stop decision block continues", event: Stop,
			hooks: []string{`echo '{"decision":"block","reason":"run the tests first"}'`}, want: Outcome{Block: true, Reason: "run the tests first"}},
		{name: "UserPromptSubmit plain stdout is context", event: UserPromptSubmit,
			hooks: []string{"echo 'today is Tuesday'"}, want: Outcome{Context: []string{"today is Tuesday"}}},
		{name: "UserPromptSubmit additionalContext and systemMessage", event: UserPromptSubmit,
			hooks: []string{`echo '{"systemMessage":"careful","hookSpecificOutput":{"additionalContext":"ctx"}}'`},
			want:  Outcome{Context: []string{"ctx"}, Messages: []string{"careful"}}},
		{name: "PostToolUse plain stdout is not context", event: PostToolUse, target: "Bash",
			hooks: []string{"echo chatter"}, want: Outcome{}},
		{name: "continue false halts", event: PostToolUse, target: "Bash",
			hooks: []string{`echo '{"continue":false,"stopReason":"enough"}'`}, want: Outcome{Halt: true, StopReason: "enough"}},
		{name: "two blocks join their reasons", event: UserPromptSubmit,
			hooks: []string{"echo a >&2; exit 2", `echo '{"decision":"block","reason":"b"}'`}, want: Outcome{Block: true, Reason: "a\nb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			var cmds []string
			for i, body := range tt.hooks {
				cmds = append(cmds, script(t, dir, "hook"+strconv.Itoa(i), body))
			}
			got := runner(dir, Config{tt.event: one("*", cmds...)}).Run(context.Background(), tt.event, tt.target, Input{SessionID: "s1"})
			for i, c := range cmds {
				for j := range got.Messages {
					got.Messages[j] = strings.ReplaceAll(got.Messages[j], c, "HOOK"+strconv.Itoa(i))
				}
			}
			if string(got.UpdatedInput) != string(tt.want.UpdatedInput) {
				t.Errorf("UpdatedInput = %s, want %s", got.UpdatedInput, tt.want.UpdatedInput)
			}
			got.UpdatedInput, tt.want.UpdatedInput = nil, nil
			if !equalOutcome(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func equalOutcome(a, b Outcome) bool {
	return a.Block == b.Block && a.Reason == b.Reason && a.Permission == b.Permission &&
		a.PermissionReason == b.PermissionReason && a.Halt == b.Halt && a.StopReason == b.StopReason &&
		slices.Equal(a.Context, b.Context) && slices.Equal(a.Messages, b.Messages)
}

// TestRunInput: the hook gets Claude Code's input on stdin, runs in the
// session's directory with CLAUDE_PROJECT_DIR.
func TestRunInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hook := script(t, dir, "hook", `cat > input.json; pwd > cwd; echo "$CLAUDE_PROJECT_DIR" > project`)
	r := &Runner{Config: Config{PreToolUse: one("Bash", hook)}, Dir: dir, Environ: []string{"PATH=" + os.Getenv("PATH"), "CLAUDE_PROJECT_DIR=" + dir}}
	r.Run(context.Background(), PreToolUse, "Bash", Input{SessionID: "s1", TranscriptPath: "/t.jsonl",
		Fields: map[string]any{"tool_name": "Bash", "tool_input": json.RawMessage(`{"command":"ls"}`)}})
	var in map[string]any
	data, err := os.ReadFile(filepath.Join(dir, "input.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &in); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	want := map[string]any{"session_id": "s1", "transcript_path": "/t.jsonl", "cwd": dir, "hook_event_name": "PreToolUse",
		"tool_name": "Bash", "tool_input": map[string]any{"command": "ls"}}
	for k, v := range want {
		if got, _ := json.Marshal(in[k]); string(got) != mustJSON(v) {
			t.Errorf("%s = %s, want %s", k, got, mustJSON(v))
		}
	}
	for name, wantText := range map[string]string{"cwd": dir, "project": dir} {
		got, _ := os.ReadFile(filepath.Join(dir, name))
		if strings.TrimSpace(string(got)) != wantText {
			t.Errorf("%s = %q, want %q", name, got, wantText)
		}
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestRunMatchers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := Config{}
	for _, m := range []string{"Bash", "Edit|Write", "mcp__.*", "*", ""} {
		conf[PreToolUse] = append(conf[PreToolUse], one(m, "echo '"+m+"' >> ran")...)
	}
	r := runner(dir, conf)
	tests := []struct {
		tool string
		want []string
	}{
		{"Bash", []string{"Bash", "*", ""}},
		{"Write", []string{"Edit|Write", "*", ""}},
		{"mcp__fs__read", []string{"mcp__.*", "*", ""}},
		{"BashOutput", []string{"*", ""}},
	}
	for _, tt := range tests { // one after another: they share the file
		os.Remove(filepath.Join(dir, "ran"))
		r.Run(context.Background(), PreToolUse, tt.tool, Input{})
		data, _ := os.ReadFile(filepath.Join(dir, "ran"))
		got := strings.Fields(strings.ReplaceAll(string(data), "\n", " _ "))
		got = slices.DeleteFunc(got, func(s string) bool { return s == "_" })
		// An empty matcher echoes an empty line.
		slices.Sort(got)
		want := slices.DeleteFunc(slices.Clone(tt.want), func(s string) bool { return s == "" })
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s ran %q, want %q", tt.tool, got, want)
		}
		if n := strings.Count(string(data), "\n"); n != len(tt.want) {
			t.Errorf("%s ran %d hooks, want %d", tt.tool, n, len(tt.want))
		}
	}
}

// TestRunTimeout: a hook past its timeout is killed with everything it
// started, and reported without blocking.
func TestRunTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hook := script(t, dir, "hook", `sleep 1000 & echo $! > child; sleep 1000`)
	// On a loaded machine the timeout can fire before the shell started
	// its child (nothing then outlives it, but nothing was tested): the
	// timeout doubles until the child was started in time.
	for timeout := 0.3; ; timeout *= 2 {
		conf := Config{Stop: {{Hooks: []Command{{Type: "command", Command: hook, Timeout: timeout}}}}}
		got := runner(dir, conf).Run(context.Background(), Stop, "", Input{})
		want := fmt.Sprintf("timed out after %s", time.Duration(timeout*float64(time.Second)))
		if got.Block || len(got.Messages) != 1 || !strings.Contains(got.Messages[0], want) {
			t.Fatalf("got %+v, want one message %q", got, want)
		}
		if data, _ := os.ReadFile(filepath.Join(dir, "child")); strings.TrimSpace(string(data)) != "" {
			break
		}
		if timeout > 60 {
			t.Fatal("the hook never started its child")
		}
	}
	waitDead(t, dir, "child")
}

// TestRunCancel: a hook of a run that is aborted is killed at once.
func TestRunCancel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hook := script(t, dir, "hook", `echo $$ > child; exec sleep 1000`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Outcome)
	go func() { done <- runner(dir, Config{Stop: one("", hook)}).Run(ctx, Stop, "", Input{}) }()
	readPid(t, dir, "child")
	cancel()
	got := <-done
	if len(got.Messages) != 1 || !strings.Contains(got.Messages[0], "canceled") {
		t.Fatalf("got %+v, want a cancelled message", got)
	}
	waitDead(t, dir, "child")
}

func readPid(t *testing.T, dir, name string) int {
	t.Helper()
	deadline := time.Now().Add(failAfter)
	for {
		data, _ := os.ReadFile(filepath.Join(dir, name))
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", name)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitDead(t *testing.T, dir, name string) {
	t.Helper()
	pid := readPid(t, dir, name)
	deadline := time.Now().Add(failAfter)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d of the hook outlived it", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// hookParent runs a hook that never ends; TestHookDiesWithSluice kills it.
func hookParent(dir string) {
	hook := `sleep 1000 & echo $! > child; echo $$ > shell; sleep 1000`
	runner(dir, Config{Stop: one("", hook)}).Run(context.Background(), Stop, "", Input{})
}

// TestHookDiesWithSluice: a kill -9 of the process running a hook leaves
// none of the hook's processes running.
func TestHookDiesWithSluice(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(exe, "-test.run=^$")
	parent.Env = append(os.Environ(), "SLUICE_TEST_HOOK_PARENT="+dir)
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	readPid(t, dir, "child")
	readPid(t, dir, "shell")
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	parent.Wait()
	waitDead(t, dir, "child")
	waitDead(t, dir, "shell")
}

// TestRunUnreadInput: a hook that ignores its stdin and exits does not
// block, whatever the input's size.
func TestRunUnreadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := strings.Repeat("x", 1<<20)
	got := runner(dir, Config{PostToolUse: one("*", "exit 0")}).Run(context.Background(), PostToolUse, "Bash",
		Input{Fields: map[string]any{"tool_response": big}})
	if !equalOutcome(got, Outcome{}) {
		t.Fatalf("got %+v", got)
	}
}

// TestRunLifecycle: Observe hears each hook start and end, paired by id,
// named as Claude Code names them, with the output and outcome.
func TestRunLifecycle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		ev          Event
		target      string
		cmd         string
		timeout     float64
		wantName    string
		wantOutcome string
		wantCode    int
		wantStdout  string
		wantStderr  string
	}{
		{"tool event", PreToolUse, "Bash", "echo out; echo err >&2", 0, "PreToolUse:Bash", "success", 0, "out\n", "err\n"},
		{"other event", Stop, "", "true", 0, "Stop", "success", 0, "", ""},
		{"blocking exit", PreToolUse, "Bash", "echo no >&2; exit 2", 0, "PreToolUse:Bash", "error", 2, "", "no\n"},
		{"timed out", UserPromptSubmit, "", "sleep 30", 0.2, "UserPromptSubmit", "cancelled", 0, "", ""},
		{"session start", SessionStart, "startup", "echo hi", 0, "SessionStart:startup", "success", 0, "hi\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			r := runner(dir, Config{tc.ev: {{Matcher: "", Hooks: []Command{{Type: "command", Command: tc.cmd, Timeout: tc.timeout}}}}})
			var mu sync.Mutex
			var seen []Lifecycle
			r.Observe = func(l Lifecycle) {
				mu.Lock()
				seen = append(seen, l)
				mu.Unlock()
			}
			r.Run(context.Background(), tc.ev, tc.target, Input{})
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 2 || seen[0].Done || !seen[1].Done || seen[0].ID == "" || seen[0].ID != seen[1].ID {
				t.Fatalf("seen %+v, want a start and an end with one id", seen)
			}
			end := seen[1]
			if seen[0].Name != tc.wantName || end.Name != tc.wantName || end.Event != tc.ev || end.Outcome != tc.wantOutcome ||
				end.ExitCode != tc.wantCode || end.Stdout != tc.wantStdout || end.Stderr != tc.wantStderr {
				t.Fatalf("end %+v", end)
			}
		})
	}
}
