package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/internal/deathsig"
	"github.com/sluicehq/sluice/tool"
)

// DefaultMaxUnread bounds the output a background command keeps between two
// BashOutput calls: the first and last parts are kept, as for a result.
const DefaultMaxUnread = DefaultMaxOutput

// ErrUnknownShell is returned for a background command id that no command
// of the session has.
var ErrUnknownShell = errors.New("no background command with that id")

// Shells are a session's background commands: Bash calls with
// run_in_background, read with BashOutput and stopped with KillShell. They
// run in their own process groups under the same guard as every Bash call,
// so they die with sluice however it dies; Stop ends them all (the session
// calls it when it closes). Safe for concurrent use.
type Shells struct {
	// KillGrace is the time between SIGTERM and SIGKILL; 0 means
	// DefaultKillGrace.
	KillGrace time.Duration

	mu     sync.Mutex // guards the fields below
	next   int
	shells map[string]*shell
	watch  func(t tool.Task, ended bool, status string)
}

// WatchTasks implements tool.TaskWatcher.
func (s *Shells) WatchTasks(f func(t tool.Task, ended bool, status string)) {
	s.mu.Lock()
	s.watch = f
	s.mu.Unlock()
}

func (sh *shell) task() tool.Task {
	return tool.Task{ID: sh.id, Description: sh.command, Started: sh.started, ToolID: sh.toolID}
}

// shell is one background command.
type shell struct {
	id, command string
	toolID      string // the call that started it
	started     time.Time
	pid         int
	done        chan struct{} // closed once the command has ended and its end is reported

	// watch reports the shell's start, output and end (Shells.WatchTasks).
	watch func(t tool.Task, ended bool, status string)

	mu     sync.Mutex // guards the fields below
	unread *headTail  // output since the last BashOutput
	// ended is set, with exitErr (the shell's wait error), once the
	// command has exited and its output is read: before its end is
	// reported, so that nothing lists or kills it once the session has
	// published its end (done closes only after the report).
	ended   bool
	exitErr error
	killed  bool
	// For watch: the output's last bytes, how much there was, and how
	// much when the tail was last reported.
	tail           []byte
	written, shown int
}

// Bounds of the output a watched shell reports: every write until
// taskStreamed bytes, then once per taskShortEvery bytes, so that endless
// output does not mean endless reports.
const (
	taskStreamed   = 64 << 10
	taskShortEvery = 16 << 10
	taskTailKeep   = 4096
	taskTailLines  = 5
	taskTailBytes  = 512
)

// Write takes the command's output (the copy goroutine's only caller, in
// chunks that end on characters).
func (sh *shell) Write(p []byte) (int, error) {
	sh.mu.Lock()
	sh.unread.Write(p)
	report := ""
	if sh.watch != nil {
		sh.tail = append(sh.tail, p...)
		if len(sh.tail) > 2*taskTailKeep {
			sh.tail = append(sh.tail[:0], sh.tail[len(sh.tail)-taskTailKeep:]...)
		}
		sh.written += len(p)
		if sh.written <= taskStreamed || sh.written-sh.shown >= taskShortEvery {
			sh.shown = sh.written
			// The kept tail may start inside a character.
			report = strings.ToValidUTF8(ShortResult(string(sh.tail), taskTailLines, taskTailBytes), "\uFFFD")
		}
	}
	sh.mu.Unlock()
	if report != "" {
		t := sh.task()
		t.Tail = report
		sh.watch(t, false, "")
	}
	return len(p), nil
}

// start runs command in the background for the tool call callID and
// returns its id.
func (s *Shells) start(env *tool.Env, command, callID string) (string, error) {
	cmd, err := guardedCommand(env, command)
	if err != nil {
		return "", err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return "", err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	waited := make(chan error, 1)
	err = deathsig.Start(cmd, waited)
	pw.Close()
	if err != nil {
		pr.Close()
		return "", err
	}
	s.mu.Lock()
	s.next++
	sh := &shell{
		id: fmt.Sprintf("bash_%d", s.next), command: command, started: time.Now(),
		pid: cmd.Process.Pid, done: make(chan struct{}), unread: newHeadTail(DefaultMaxUnread),
		watch: s.watch, toolID: callID,
	}
	if s.shells == nil {
		s.shells = map[string]*shell{}
	}
	s.shells[sh.id] = sh
	s.mu.Unlock()
	if sh.watch != nil {
		sh.watch(sh.task(), false, "")
	}

	copied := make(chan struct{})
	go func() {
		defer close(copied)
		copyOutput(pr, sh, newHeadTail(0))
	}()
	go func() {
		err := <-waited
		// As for a foreground call: a job the command left behind may
		// hold the output; read what is there, not forever.
		_ = pr.SetReadDeadline(time.Now().Add(DefaultDrainGrace))
		<-copied
		pr.Close()
		sh.mu.Lock()
		sh.ended, sh.exitErr = true, err
		sh.mu.Unlock()
		// Before done closes: Stop, which waits for done, returns only
		// once the end is reported.
		if sh.watch != nil {
			sh.watch(sh.task(), true, sh.endStatus())
		}
		close(sh.done)
	}()
	return sh.id, nil
}

func (s *Shells) get(id string) (*shell, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sh := s.shells[id]; sh != nil {
		return sh, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownShell, id)
}

// Running lists the background commands still running, oldest first.
func (s *Shells) Running() []tool.Task {
	s.mu.Lock()
	defer s.mu.Unlock()
	var tasks []tool.Task
	for _, sh := range s.shells {
		if !sh.hasEnded() {
			tasks = append(tasks, sh.task())
		}
	}
	slices.SortFunc(tasks, func(a, b tool.Task) int { return a.Started.Compare(b.Started) })
	return tasks
}

// Stop kills every background command still running and waits for them.
func (s *Shells) Stop() {
	s.mu.Lock()
	all := make([]*shell, 0, len(s.shells))
	for _, sh := range s.shells {
		all = append(all, sh)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, sh := range all {
		wg.Go(func() { s.kill(sh) })
	}
	wg.Wait()
}

// kill stops sh's process group: SIGTERM, SIGKILL after the grace. It
// returns once sh's end is reported. A command that has exited already is
// not signalled, whether its end is reported yet or not: its status stays
// the one reported.
func (s *Shells) kill(sh *shell) {
	sh.mu.Lock()
	ended := sh.ended
	if !ended {
		sh.killed = true
	}
	sh.mu.Unlock()
	if ended {
		<-sh.done
		return
	}
	_ = syscall.Kill(-sh.pid, syscall.SIGTERM)
	grace := time.NewTimer(orDefault(s.KillGrace, DefaultKillGrace))
	defer grace.Stop()
	select {
	case <-sh.done:
	case <-grace.C:
	}
	_ = syscall.Kill(-sh.pid, syscall.SIGKILL)
	<-sh.done
}

// status says how sh stands: running, or how it ended.
func (sh *shell) status() (string, bool) {
	if !sh.hasEnded() {
		return "running", true
	}
	return sh.endStatus(), false
}

// hasEnded says whether sh has exited and its output is read.
func (sh *shell) hasEnded() bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.ended
}

// endStatus says how sh ended, once its wait error is set.
func (sh *shell) endStatus() string {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var exitErr *exec.ExitError
	switch {
	case sh.killed:
		return "killed"
	case sh.exitErr == nil:
		return "exited with status 0"
	case errors.As(sh.exitErr, &exitErr):
		return "exited: " + exitErr.Error()
	}
	return "failed: " + sh.exitErr.Error()
}

// guardedCommand is a command line run as every Bash call runs: under the
// guard shell (package deathsig), in its own process group that dies with
// sluice.
func guardedCommand(env *tool.Env, command string) (*exec.Cmd, error) {
	cmd, err := deathsig.Command(context.Background(), "bash", command, nil)
	if err != nil {
		return nil, err
	}
	cmd.Dir = env.WorkDir
	cmd.Env = env.Environ
	return cmd, nil
}

// BashOutput reads what a background command printed since the last read.
type BashOutput struct {
	Shells *Shells
}

type shellIDInput struct {
	BashID  string `json:"bash_id"`
	ShellID string `json:"shell_id"`
	Filter  string `json:"filter,omitempty"`
}

func (in shellIDInput) id() string { return strings.TrimSpace(in.BashID + in.ShellID) }

// Name implements tool.Tool.
func (*BashOutput) Name() string { return "BashOutput" }

// Kind implements tool.Tool.
func (*BashOutput) Kind() tool.Kind { return tool.ReadOnly }

// Description implements tool.Tool.
func (*BashOutput) Description() string {
	return `Reads the output of a command started with Bash run_in_background since the last read, and whether it is still running.

- bash_id is the id the Bash call returned (bash_1, bash_2, ...).
- Only new output is returned each time; very long output keeps its beginning and end.
- filter, a regular expression, keeps only the lines that match (the others are discarded).`
}

// Schema implements tool.Tool.
func (*BashOutput) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "bash_id": {"type": "string", "description": "The id of the background command"},
    "filter": {"type": "string", "description": "A regular expression: only matching lines are returned"}
  },
  "required": ["bash_id"],
  "additionalProperties": false
}`)
}

// Compact implements tool.Tool.
func (*BashOutput) Compact(params json.RawMessage) string {
	var in shellIDInput
	_ = json.Unmarshal(params, &in) // Compact never fails: show what parses.
	return in.id()
}

// Run implements tool.Tool.
func (b *BashOutput) Run(_ context.Context, _ *tool.Env, params json.RawMessage, _ tool.Output) (tool.Result, error) {
	var in shellIDInput
	if err := decode(params, &in); err != nil {
		return tool.Result{}, err
	}
	var filter *regexp.Regexp
	if in.Filter != "" {
		var err error
		if filter, err = regexp.Compile(in.Filter); err != nil {
			return tool.Result{}, fmt.Errorf("%w: filter: %v", ErrInvalidParams, err)
		}
	}
	if b.Shells == nil {
		return tool.Result{}, fmt.Errorf("%w: %q", ErrUnknownShell, in.id())
	}
	sh, err := b.Shells.get(in.id())
	if err != nil {
		return tool.Result{}, err
	}
	status, running := sh.status() // before the read: output that follows "exited" is complete
	sh.mu.Lock()
	out := sh.unread.String()
	sh.unread = newHeadTail(DefaultMaxUnread)
	sh.mu.Unlock()
	if filter != nil {
		var kept []string
		for _, line := range strings.Split(out, "\n") {
			if filter.MatchString(line) {
				kept = append(kept, line)
			}
		}
		out = strings.Join(kept, "\n")
	}
	out = strings.TrimRight(out, "\n")
	if out == "" {
		out = "(no new output)"
	}
	return tool.Result{
		Content: fmt.Sprintf("%s: %s\n\n%s", sh.id, status, out),
		IsError: !running && status != "exited with status 0",
		Summary: sh.id + " " + status,
	}, nil
}

// KillShell stops a background command and everything it started.
type KillShell struct {
	Shells *Shells
}

// Name implements tool.Tool.
func (*KillShell) Name() string { return "KillShell" }

// Kind implements tool.Tool: it stops only what the session itself started.
func (*KillShell) Kind() tool.Kind { return tool.ReadOnly }

// Description implements tool.Tool.
func (*KillShell) Description() string {
	return `Stops a command started with Bash run_in_background, and everything it started.

- shell_id is the id the Bash call returned (bash_1, bash_2, ...).
- Its unread output stays readable with BashOutput.`
}

// Schema implements tool.Tool.
func (*KillShell) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "shell_id": {"type": "string", "description": "The id of the background command to stop"}
  },
  "required": ["shell_id"],
  "additionalProperties": false
}`)
}

// Compact implements tool.Tool.
func (*KillShell) Compact(params json.RawMessage) string {
	var in shellIDInput
	_ = json.Unmarshal(params, &in) // Compact never fails: show what parses.
	return in.id()
}

// Run implements tool.Tool.
func (k *KillShell) Run(_ context.Context, _ *tool.Env, params json.RawMessage, _ tool.Output) (tool.Result, error) {
	var in shellIDInput
	if err := decode(params, &in); err != nil {
		return tool.Result{}, err
	}
	if k.Shells == nil {
		return tool.Result{}, fmt.Errorf("%w: %q", ErrUnknownShell, in.id())
	}
	sh, err := k.Shells.get(in.id())
	if err != nil {
		return tool.Result{}, err
	}
	if status, running := sh.status(); !running {
		return tool.Result{Content: fmt.Sprintf("%s had already ended (%s)", sh.id, status), Summary: sh.id + " " + status}, nil
	}
	k.Shells.kill(sh)
	return tool.Result{Content: sh.id + " was stopped", Summary: sh.id + " stopped"}, nil
}
