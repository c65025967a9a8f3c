package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/tool"
)

// bgRun calls a tool and fails the test on an error.
func bgRun(t *testing.T, tl tool.Tool, env *tool.Env, params string) tool.Result {
	t.Helper()
	res, err := tl.Run(context.Background(), env, json.RawMessage(params), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", tl.Name(), params, err)
	}
	return res
}

// waitOutput reads a background command's output until cond holds of what
// has been read so far; the bound only turns a hang into a failure.
func waitOutput(t *testing.T, out *BashOutput, id string, cond func(all, last string) bool) string {
	t.Helper()
	var all strings.Builder
	deadline := time.Now().Add(60 * time.Second)
	for {
		res := bgRun(t, out, nil, `{"bash_id":"`+id+`"}`)
		all.WriteString(res.Content + "\n")
		if cond(all.String(), res.Content) {
			return all.String()
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out; read so far:\n%s", all.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBackgroundCommand(t *testing.T) {
	t.Parallel()
	shells := &Shells{}
	bash, out := &Bash{Shells: shells}, &BashOutput{Shells: shells}
	env := &tool.Env{WorkDir: t.TempDir()}
	fifo := env.WorkDir + "/go"
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The command waits for the test between its two lines, so the first
	// read sees it running with only the first line.
	res := bgRun(t, bash, env, `{"command":"echo first; read x < go; echo second; exit 3","run_in_background":true}`)
	if !strings.Contains(res.Content, "bash_1") || res.IsError {
		t.Fatalf("start: %+v", res)
	}
	if tasks := shells.Running(); len(tasks) != 1 || tasks[0].ID != "bash_1" || !strings.Contains(tasks[0].Description, "echo first") {
		t.Fatalf("Running() = %+v", tasks)
	}
	all := waitOutput(t, out, "bash_1", func(all, _ string) bool { return strings.Contains(all, "first") })
	if got := bgRun(t, out, nil, `{"bash_id":"bash_1"}`); !strings.Contains(got.Content, "bash_1: running\n\n(no new output)") {
		t.Fatalf("a second read while running: %q", got.Content)
	}
	if err := writeFifo(fifo); err != nil {
		t.Fatal(err)
	}
	all += waitOutput(t, out, "bash_1", func(_, last string) bool { return !strings.Contains(last, "running") })
	if strings.Count(all, "first") != 1 || strings.Count(all, "second") != 1 || !strings.Contains(all, "exited: exit status 3") {
		t.Errorf("output read %q: want each line once and the exit status", all)
	}
	if len(shells.Running()) != 0 {
		t.Errorf("an ended command is still listed: %+v", shells.Running())
	}
}

func writeFifo(path string) error {
	f, err := openWrite(path)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte("go\n"))
	f.Close()
	return err
}

func TestKillShellAndStop(t *testing.T) {
	t.Parallel()
	shells := &Shells{KillGrace: time.Second}
	bash, kill, out := &Bash{Shells: shells}, &KillShell{Shells: shells}, &BashOutput{Shells: shells}
	env := &tool.Env{WorkDir: t.TempDir()}
	bgRun(t, bash, env, `{"command":"sleep 600 & sleep 600","run_in_background":true}`)
	bgRun(t, bash, env, `{"command":"trap '' TERM; sleep 600","run_in_background":true}`)
	pgids := []int{}
	for _, id := range []string{"bash_1", "bash_2"} {
		sh, err := shells.get(id)
		if err != nil {
			t.Fatal(err)
		}
		pgids = append(pgids, sh.pid)
	}

	res := bgRun(t, kill, nil, `{"shell_id":"bash_1"}`)
	if res.Content != "bash_1 was stopped" {
		t.Fatalf("KillShell: %+v", res)
	}
	waitGone(t, pgids[0])
	if got := bgRun(t, out, nil, `{"bash_id":"bash_1"}`); !strings.Contains(got.Content, "bash_1: killed") {
		t.Errorf("BashOutput after KillShell: %q", got.Content)
	}
	if got := bgRun(t, kill, nil, `{"shell_id":"bash_1"}`); !strings.Contains(got.Content, "had already ended (killed)") {
		t.Errorf("a second KillShell: %q", got.Content)
	}

	// Stop ends the rest, SIGTERM ignored or not.
	shells.Stop()
	waitGone(t, pgids[1])
	if n := len(shells.Running()); n != 0 {
		t.Errorf("%d commands still running after Stop", n)
	}
}

func TestBackgroundErrors(t *testing.T) {
	t.Parallel()
	shells := &Shells{}
	env := &tool.Env{WorkDir: t.TempDir()}
	tests := []struct {
		name   string
		tl     tool.Tool
		params string
		want   error
	}{
		{"no shells to run in", &Bash{}, `{"command":"true","run_in_background":true}`, ErrInvalidParams},
		{"an unknown id to read", &BashOutput{Shells: shells}, `{"bash_id":"bash_9"}`, ErrUnknownShell},
		{"an unknown id to kill", &KillShell{Shells: shells}, `{"shell_id":"bash_9"}`, ErrUnknownShell},
		{"a bad filter", &BashOutput{Shells: shells}, `{"bash_id":"bash_1","filter":"("}`, ErrInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := tt.tl.Run(context.Background(), env, json.RawMessage(tt.params), nil); !errors.Is(err, tt.want) {
				t.Errorf("err %v, want %v", err, tt.want)
			}
		})
	}
}

func TestBashOutputFilter(t *testing.T) {
	t.Parallel()
	shells := &Shells{}
	env := &tool.Env{WorkDir: t.TempDir()}
	bgRun(t, &Bash{Shells: shells}, env, `{"command":"printf 'ok 1\\nFAIL 2\\nok 3\\nFAIL 4\\n'","run_in_background":true}`)
	sh, _ := shells.get("bash_1")
	<-sh.done
	res := bgRun(t, &BashOutput{Shells: shells}, nil, `{"bash_id":"bash_1","filter":"^FAIL"}`)
	if want := "bash_1: exited with status 0\n\nFAIL 2\nFAIL 4"; res.Content != want {
		t.Errorf("filtered output %q, want %q", res.Content, want)
	}
}

func openWrite(path string) (interface {
	Write([]byte) (int, error)
	Close() error
}, error) {
	return os.OpenFile(path, os.O_WRONLY, 0)
}

// waitGone waits until no process of the group is left: killed processes
// count until they are reaped, so this waits rather than looks once.
func waitGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d survived", pgid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A command whose end is being reported (the session publishes it in the
// watcher) is no longer running for the shells: Running does not list it
// and BashOutput reads how it ended, as every face will.
func TestShellsAgreeWithTheReportedEnd(t *testing.T) {
	t.Parallel()
	shells := &Shells{}
	type seen struct {
		running []tool.Task
		read    string
	}
	atEnd := make(chan seen, 1)
	out := &BashOutput{Shells: shells}
	shells.WatchTasks(func(tk tool.Task, ended bool, _ string) {
		if ended {
			res, _ := out.Run(context.Background(), nil, json.RawMessage(`{"bash_id":"`+tk.ID+`"}`), nil)
			atEnd <- seen{shells.Running(), res.Content}
		}
	})
	bgRun(t, &Bash{Shells: shells}, &tool.Env{WorkDir: t.TempDir()}, `{"command":"echo done","run_in_background":true}`)
	got := <-atEnd
	if len(got.running) != 0 {
		t.Errorf("Running() = %+v while the end is reported", got.running)
	}
	if want := "bash_1: exited with status 0\n\ndone"; got.read != want {
		t.Errorf("BashOutput while the end is reported: %q, want %q", got.read, want)
	}
	shells.Stop()
}
