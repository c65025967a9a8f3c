package printmode

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/streamjson"
	"github.com/sluicehq/sluice/internal/tools/toolstest"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/tool"
)

// A one-prompt run whose model starts a background command: the result
// waits for the command, and one still running when the wait is over is
// stopped and listed in the result (never a success with work left behind).
func TestBackgroundCommandsAtTheEndOfARun(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		wait    time.Duration
		finish  bool // the test lets the command end while the run waits
		stopped bool
	}{
		{name: "it ends while the run waits", wait: 10 * time.Minute, finish: true},
		{name: "it is stopped when the wait is over", wait: -1, stopped: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			fifo := filepath.Join(dir, "go")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			p := modeltest.NewScript(
				modeltest.Response(modeltest.Start("m1"),
					modeltest.ToolUse(0, "t1", "Bash", map[string]any{"command": "read x < go; echo done > done.txt", "run_in_background": true}),
					modeltest.Stop("tool_use")),
				modeltest.Answer("m2", "The build runs in the background."),
			)
			opts := agent.Options{Provider: p, WorkDir: dir, Stream: modeltest.StreamOptions(), PermissionMode: protocol.ModeBypassPermissions}
			var bash *toolstest.HeldBash
			if tt.finish {
				// The command's end is held once published, before Bash
				// is done with it: the window in which CI once saw the
				// result written and the task still listed.
				bash = toolstest.HoldEnds()
				opts.Tools = []tool.Tool{bash}
			}
			sess, err := agent.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			if tt.finish {
				defer close(bash.Release) // before Close, which waits for the command
				// Once the command reads the fifo, let it end: the run
				// is then waiting for it (its answer is in; its result
				// is not). Opening the fifo waits for the reader.
				go func() {
					if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
						f.Write([]byte("go\n"))
						f.Close()
					}
				}()
				// A command that never ran leaves the writer waiting:
				// a reader lets it go.
				t.Cleanup(func() {
					if f, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
						f.Close()
					}
				})
			}
			var out, errOut bytes.Buffer
			code := Run(context.Background(), sess, "build it", Config{
				OutputFormat: FormatJSON, BackgroundWait: tt.wait, Stdout: &out, Stderr: &errOut,
			})
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			var res streamjson.ResultLine
			if err := json.Unmarshal(out.Bytes(), &res); err != nil {
				t.Fatalf("%v: %s", err, out.String())
			}
			// The result is written on the task's end, as the session's
			// list has it: the list is empty when the result is out.
			if len(sess.Tasks()) != 0 {
				t.Errorf("tasks still running after the result: %+v", sess.Tasks())
			}
			if tt.finish {
				// It is held until now: the check above was made in the
				// window, whatever the scheduler did. (The bound only
				// turns a hang into a failure.)
				select {
				case <-bash.Ended:
				case <-time.After(time.Minute):
					t.Error("the command's end was never reported")
				}
			}
			_, doneErr := os.Stat(filepath.Join(dir, "done.txt"))
			if tt.stopped {
				if len(res.StoppedTasks) != 1 || !strings.HasPrefix(res.StoppedTasks[0], "bash_1 (read x < go") {
					t.Errorf("stopped_background_tasks %q", res.StoppedTasks)
				}
				if !strings.Contains(errOut.String(), "stopped background commands still running") {
					t.Errorf("stderr %q does not say so", errOut.String())
				}
				if doneErr == nil {
					t.Error("the stopped command finished")
				}
				return
			}
			if len(res.StoppedTasks) != 0 || doneErr != nil {
				t.Errorf("stopped %q, done.txt: %v: want the command to have finished", res.StoppedTasks, doneErr)
			}
		})
	}
}

// In stream-json, a background command's start and end are Claude Code
// 2.1.328's system lines, with its keys (recorded from claude -p against a
// local server whose model ran Bash with run_in_background; run_id, the id
// of one run of a task, is optional and sluice has none): the set, then
// task_started; at the end task_updated, task_notification, the set again
// — all before the result, which waits for the command.
func TestBackgroundCommandLines(t *testing.T) {
	t.Parallel()
	p := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"),
			modeltest.ToolUse(0, "toolu_bg", "Bash", map[string]any{"command": "echo bg-done", "run_in_background": true}),
			modeltest.Stop("tool_use")),
		modeltest.Answer("m2", "Started."),
	)
	sess, err := agent.New(agent.Options{Provider: p, WorkDir: t.TempDir(), Stream: modeltest.StreamOptions(), PermissionMode: protocol.ModeBypassPermissions})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var out, errOut bytes.Buffer
	if code := Run(context.Background(), sess, "start it", Config{OutputFormat: FormatStreamJSON, Stdout: &out, Stderr: &errOut}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	want := map[string][]string{
		"background_tasks_changed": {"session_id", "subtype", "tasks", "type", "uuid"},
		"task_started":             {"description", "is_backgrounded", "session_id", "subtype", "task_id", "task_type", "tool_use_id", "type", "uuid"},
		"task_updated":             {"patch", "session_id", "subtype", "task_id", "type", "uuid"},
		"task_notification":        {"output_file", "session_id", "status", "subtype", "summary", "task_id", "tool_use_id", "type", "uuid"},
	}
	var kinds []string
	for _, l := range lines(t, out.String()) {
		st, _ := l["subtype"].(string)
		if l["type"] == "result" {
			kinds = append(kinds, "result")
			continue
		}
		keys, ok := want[st]
		if !ok || l["type"] != "system" {
			continue
		}
		kinds = append(kinds, st)
		var got []string
		for k := range l {
			got = append(got, k)
		}
		slices.Sort(got)
		if !slices.Equal(got, keys) {
			t.Errorf("%s keys %q, want %q", st, got, keys)
		}
		switch st {
		case "task_started":
			if l["task_id"] != "bash_1" || l["tool_use_id"] != "toolu_bg" || l["task_type"] != "local_bash" || l["is_backgrounded"] != true {
				t.Errorf("task_started %v", l)
			}
		case "task_notification":
			if l["status"] != "completed" || l["tool_use_id"] != "toolu_bg" || !strings.Contains(l["summary"].(string), "completed (exit code 0)") {
				t.Errorf("task_notification %v", l)
			}
		case "task_updated":
			if patch, _ := l["patch"].(map[string]any); patch["status"] != "completed" || patch["end_time"] == nil {
				t.Errorf("task_updated %v", l)
			}
		}
	}
	wantKinds := []string{"background_tasks_changed", "task_started", "task_updated", "task_notification", "background_tasks_changed", "result"}
	if !slices.Equal(kinds, wantKinds) {
		t.Errorf("lines %q, want %q", kinds, wantKinds)
	}
}

// With stream-json input, a background command that ends between the
// host's messages has its lines written when it ends, not at the next run.
func TestBackgroundCommandEndsBetweenMessages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	p := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"),
			modeltest.ToolUse(0, "toolu_bg", "Bash", map[string]any{"command": "read x < go", "run_in_background": true}),
			modeltest.Stop("tool_use")),
		modeltest.Answer("m2", "Started."),
		modeltest.Answer("m3", "Again."),
	)
	sess, err := agent.New(agent.Options{Provider: p, WorkDir: dir, Stream: modeltest.StreamOptions(), PermissionMode: protocol.ModeBypassPermissions})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	in, stdin := io.Pipe()
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- Run(context.Background(), sess, "", Config{
			OutputFormat: FormatStreamJSON, InputFormat: FormatStreamJSON, Stdin: in, Stdout: &stdout, Stderr: &stderr,
		})
	}()
	io.WriteString(stdin, `{"type":"user","message":{"role":"user","content":"start it"}}`+"\n")
	waitUntil(t, "the first result", func() bool { return strings.Contains(stdout.String(), `"type":"result"`) })
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("go\n"))
	f.Close()
	waitUntil(t, "the task's end, while no run goes on", func() bool { return strings.Contains(stdout.String(), `"subtype":"task_notification"`) })
	io.WriteString(stdin, `{"type":"user","message":{"role":"user","content":"again"}}`+"\n")
	waitUntil(t, "the second result", func() bool { return strings.Count(stdout.String(), `"type":"result"`) == 2 })
	stdin.Close()
	if c := <-code; c != 0 {
		t.Fatalf("exit %d: %s", c, stderr.String())
	}
	if n := strings.Count(stdout.String(), `"subtype":"task_notification"`); n != 1 {
		t.Errorf("%d task_notification lines, want 1", n)
	}
}
