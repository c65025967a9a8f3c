package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
)

// TestRunSteers: a message typed while a run is going is shown queued,
// then reaches the model at the run's next request, after the tool
// result, and is shown sent; the run goes on as one run.
func TestRunSteers(t *testing.T) {
	gate := make(chan struct{})
	p := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"), modeltest.Gate(gate),
			modeltest.ToolUse(0, "t1", "Glob", map[string]any{"pattern": "*.go"}), modeltest.Stop("tool_use")),
		modeltest.Answer("m2", "Only the tests, then."),
	)
	sess, err := agent.New(agent.Options{Provider: p, WorkDir: t.TempDir(), Stream: modeltest.StreamOptions()})
	if err != nil {
		t.Fatal(err)
	}
	prog := startProgram(t, sess, "find the Go files")
	waitUntil(t, "the first request", func() bool { return p.Count() == 1 })
	prog.press([]byte("only the tests\r"))
	prog.wait("queued: only the tests")
	close(gate)
	prog.wait("Only the tests, then.")
	prog.quit()
	if n := p.Count(); n != 2 {
		t.Fatalf("%d model requests, want 2: the message joined the run", n)
	}
	msgs := p.Request(1).Messages
	if last := msgs[len(msgs)-1]; last.Role != model.RoleUser || last.Content[0].Text != "only the tests" {
		t.Fatalf("the second request does not end with the steered message: %+v", last)
	}
	if prev := msgs[len(msgs)-2]; prev.Content[0].Type != model.ContentToolResult {
		t.Fatalf("the steered message does not follow the tool result: %+v", prev)
	}
	// Sent: the message is in the transcript, before the answer.
	s := prog.output()
	sentAt := strings.LastIndex(s, "only the tests")
	if answer := strings.LastIndex(s, "Only the tests, then."); sentAt < 0 || answer < sentAt {
		t.Errorf("the steered message is not shown before the answer:\n%s", s)
	}
}

// waitUntil polls cond; the bound only turns a hang into a failure.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRunListsTasks: a command the model runs in the background is listed
// under the transcript while it runs, from the session's view state.
func TestRunListsTasks(t *testing.T) {
	p := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"),
			modeltest.ToolUse(0, "t1", "Bash", map[string]any{"command": "sleep 600", "run_in_background": true}), modeltest.Stop("tool_use")),
		modeltest.Answer("m2", "The server is up."),
	)
	sess, err := agent.New(agent.Options{Provider: p, WorkDir: t.TempDir(), Stream: modeltest.StreamOptions(), PermissionMode: protocol.ModeBypassPermissions})
	if err != nil {
		t.Fatal(err)
	}
	prog := startProgram(t, sess, "start the server")
	prog.wait("The server is up.")
	prog.wait("bash_1 running: sleep 600")
	prog.quit()
	if n := len(sess.Tasks()); n != 0 {
		t.Errorf("%d tasks still running after the UI closed the session", n)
	}
}
