package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/tools/toolstest"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/tool"
)

// A command the model runs in the background outlives its call and its run,
// is listed by Tasks, and dies when the session closes.
func TestBackgroundTaskEndsWithTheSession(t *testing.T) {
	t.Parallel()
	p := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"),
			modeltest.ToolUse(0, "t1", "Bash", map[string]any{"command": "sh -c 'echo $$ > pid; exec sleep 600'", "run_in_background": true}),
			modeltest.Stop("tool_use")),
		modeltest.Answer("m2", "started"),
	)
	dir := t.TempDir()
	s, err := agent.New(agent.Options{Provider: p, WorkDir: dir, Stream: modeltest.StreamOptions(), PermissionMode: protocol.ModeBypassPermissions})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Run(context.Background(), "start the server")
	if err != nil || res.Text != "started" {
		t.Fatalf("run: %q %v", res.Text, err)
	}
	tasks := s.Tasks()
	if len(tasks) != 1 || tasks[0].ID != "bash_1" {
		t.Fatalf("Tasks() = %+v, want the background command", tasks)
	}
	// Every face lists it from the view state.
	if snap := s.Messages().Tasks; len(snap) != 1 || snap[0].TaskID != "bash_1" || !strings.Contains(snap[0].Description, "sleep 600") || snap[0].StartedAt == 0 {
		t.Fatalf("snapshot tasks %+v, want bash_1", snap)
	}
	var pid int
	waitFor(t, "the command's pid", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Tasks()); n != 0 {
		t.Errorf("%d tasks after Close", n)
	}
	if snap := s.Messages().Tasks; len(snap) != 0 {
		t.Errorf("snapshot tasks %+v after Close", snap)
	}
	waitFor(t, "the background command to die", func() bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) })
}

// waitFor polls cond; the bound only turns a hang into a failure.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A background command that ends by itself leaves the view state's tasks
// with how it ended.
func TestBackgroundTaskEndIsPublished(t *testing.T) {
	t.Parallel()
	p := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"),
			modeltest.ToolUse(0, "t1", "Bash", map[string]any{"command": "echo done", "run_in_background": true}),
			modeltest.Stop("tool_use")),
		modeltest.Answer("m2", "started"),
	)
	s, err := agent.New(agent.Options{Provider: p, WorkDir: t.TempDir(), Stream: modeltest.StreamOptions(), PermissionMode: protocol.ModeBypassPermissions})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := record(t, s)
	if _, err := s.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	end := rec.waitFor("the task's end", func(ev protocol.Event) bool {
		u, ok := ev.(protocol.TaskUpdated)
		return ok && u.State == protocol.TaskEnded
	}).(protocol.TaskUpdated)
	if end.TaskID != "bash_1" || end.Status != "exited with status 0" || end.Description != "echo done" {
		t.Errorf("end %+v", end)
	}
	started, output := false, false
	for _, ev := range rec.events {
		if u, ok := ev.(protocol.TaskUpdated); ok && u.State == protocol.TaskRunning && u.TaskID == "bash_1" {
			started = true
			output = output || u.ShortResult == "done"
		}
	}
	if !started || !output {
		t.Errorf("before the end: taskUpdated running %v, with its output %v", started, output)
	}
	if snap := s.Messages().Tasks; len(snap) != 0 {
		t.Errorf("snapshot tasks %+v after the end", snap)
	}
}

// Tasks is the view state's list: a background command leaves it the
// moment its end is published (the event faces act on: print mode writes
// its result on it), not when the Bash tool is done with it a moment later.
// The test holds the tool in that window, which a loaded machine opens at
// random.
func TestTasksDropATaskWhenItsEndIsPublished(t *testing.T) {
	t.Parallel()
	bash := toolstest.HoldEnds()
	p := modeltest.NewScript(
		modeltest.Response(modeltest.Start("m1"),
			modeltest.ToolUse(0, "t1", "Bash", map[string]any{"command": "echo done", "run_in_background": true}),
			modeltest.Stop("tool_use")),
		modeltest.Answer("m2", "started"),
	)
	s, err := agent.New(agent.Options{Provider: p, WorkDir: t.TempDir(), Tools: []tool.Tool{bash}, Stream: modeltest.StreamOptions(), PermissionMode: protocol.ModeBypassPermissions})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer close(bash.Release) // before Close, which waits for the command
	rec := record(t, s)
	if _, err := s.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	select {
	case ended := <-bash.Ended:
		if ended.ID != "bash_1" {
			t.Fatalf("ended %+v, want bash_1", ended)
		}
	case <-ctx.Done():
		t.Fatal("timed out waiting for the command's end")
	}
	if tasks := s.Tasks(); len(tasks) != 0 {
		t.Errorf("Tasks() = %+v once bash_1's end is published", tasks)
	}
	if snap := s.Messages().Tasks; len(snap) != 0 {
		t.Errorf("snapshot tasks %+v once bash_1's end is published", snap)
	}
	// A subscriber that reads the end finds Tasks as the event left it.
	rec.waitFor("the task's end", func(ev protocol.Event) bool {
		u, ok := ev.(protocol.TaskUpdated)
		return ok && u.State == protocol.TaskEnded
	})
	if tasks := s.Tasks(); len(tasks) != 0 {
		t.Errorf("Tasks() = %+v after the end event", tasks)
	}
}
