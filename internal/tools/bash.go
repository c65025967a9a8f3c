package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/internal/deathsig"
	"github.com/sluicehq/sluice/tool"
)

// Bash defaults.
const (
	// DefaultTimeout is a command's timeout when the call gives none.
	DefaultTimeout = 2 * time.Minute
	// MaxTimeout is the longest timeout a call may ask for.
	MaxTimeout = 10 * time.Minute
	// DefaultMaxOutput bounds the output kept for the result: the model
	// reads it, so it follows Claude Code's 30,000 characters rather than
	// what memory could hold.
	DefaultMaxOutput = 30000
	// DefaultKillGrace is the time between SIGTERM and SIGKILL.
	DefaultKillGrace = 2 * time.Second
	// DefaultDrainGrace is how long output is still read once the shell
	// has exited, for background jobs that keep the output open.
	DefaultDrainGrace = 250 * time.Millisecond
)

// Bash runs a shell command: bash -c (sh -c where bash is missing) in the
// working directory, in its own process group, with stdin empty. Its stdout
// and stderr go, merged, to the call's Output as they are produced (chunks as
// they are read, never splitting a UTF-8 character); the result keeps the
// first and last parts of long output. A timeout or a cancelled ctx kills
// the whole process group: SIGTERM, then SIGKILL after KillGrace. When the
// process running Bash dies, however it dies (kill -9), the group is killed
// too, by a guard shell (package deathsig): no command outlives sluice.
//
// A background job (cmd &) that still holds the output when the shell exits
// is read for DrainGrace more, then its output is closed: it keeps running
// only if it writes elsewhere (cmd > log 2>&1 &), which the description tells
// the model.
type Bash struct {
	// MaxOutput bounds the output kept for the result; 0 means
	// DefaultMaxOutput. Everything still streams to the Output.
	MaxOutput int
	// KillGrace is the time a killed command has between SIGTERM and
	// SIGKILL; 0 means DefaultKillGrace.
	KillGrace time.Duration
	// DrainGrace is how long output is read after the shell exits; 0 means
	// DefaultDrainGrace.
	DrainGrace time.Duration
	// Shells holds the commands run with run_in_background; nil refuses
	// them.
	Shells *Shells
}

type bashInput struct {
	Command         string   `json:"command"`
	Timeout         *float64 `json:"timeout,omitempty"`
	Description     string   `json:"description,omitempty"`
	RunInBackground bool     `json:"run_in_background,omitempty"`
}

// Running implements tool.Background: the background commands still running.
func (b *Bash) Running() []tool.Task {
	if b.Shells == nil {
		return nil
	}
	return b.Shells.Running()
}

// WatchTasks implements tool.TaskWatcher.
func (b *Bash) WatchTasks(f func(t tool.Task, ended bool, status string)) {
	if b.Shells != nil {
		b.Shells.WatchTasks(f)
	}
}

// Stop implements tool.Background: it kills the background commands.
func (b *Bash) Stop() {
	if b.Shells != nil {
		b.Shells.Stop()
	}
}

// Name implements tool.Tool.
func (*Bash) Name() string { return "Bash" }

// Kind implements tool.Tool.
func (*Bash) Kind() tool.Kind { return tool.Execute }

// Description implements tool.Tool.
func (*Bash) Description() string {
	return `Runs a shell command with bash in the working directory and returns its output (stdout and stderr merged).

- Each call starts a fresh shell: cd, variables and aliases do not carry over to later calls. Use absolute paths, or chain commands with && in one call.
- Quote paths that contain spaces ("path with spaces/file.txt").
- The output streams to the user while the command runs. Very long output is kept only in part: its beginning and its end.
- timeout is in milliseconds: 120000 (2 minutes) by default, at most 600000 (10 minutes). A command that runs past it is killed, together with everything it started.
- stdin is empty and there is no terminal: commands that wait for input (editors, pagers, interactive prompts) will not work; pass flags such as --yes or --no-pager.
- run_in_background: true starts a long command (a server, a watcher, a long build) and returns its id at once; read its output with BashOutput and stop it with KillShell. It has no timeout and is stopped when the session ends. Do not add & to such a command.
- A background job (cmd &) in a normal call keeps running after the call only if its output goes to a file: cmd > out.log 2>&1 &
- Prefer the dedicated tools to shell equivalents: Read over cat/head/tail, Edit over sed/awk, Write over echo > or heredocs, Glob over find/ls, Grep over grep/rg.
- description: a few words saying what the command does, shown to the user (for example "Run the unit tests").`
}

// Schema implements tool.Tool.
func (*Bash) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The command to run"},
    "timeout": {"type": "number", "description": "Optional timeout in milliseconds (at most 600000)"},
    "description": {"type": "string", "description": "What the command does, in 5-10 words, shown to the user"},
    "run_in_background": {"type": "boolean", "description": "Run the command in the background; read its output later with BashOutput"}
  },
  "required": ["command"],
  "additionalProperties": false
}`)
}

// Compact implements tool.Tool: the command's first line, with an ellipsis
// when more lines follow.
func (*Bash) Compact(params json.RawMessage) string {
	var in bashInput
	_ = json.Unmarshal(params, &in) // Compact never fails: show what parses.
	cmd := strings.TrimSpace(in.Command)
	if first, _, more := strings.Cut(cmd, "\n"); more {
		return strings.TrimSpace(first) + " …"
	}
	return cmd
}

func (in *bashInput) timeout() time.Duration {
	if in.Timeout == nil || *in.Timeout <= 0 {
		return DefaultTimeout
	}
	ms := *in.Timeout
	if ms >= float64(MaxTimeout/time.Millisecond) {
		return MaxTimeout
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// Run implements tool.Tool. A non-zero exit or a timeout is a result with
// IsError set; a cancelled ctx returns the output so far and an error
// wrapping ctx.Err().
func (b *Bash) Run(ctx context.Context, env *tool.Env, params json.RawMessage, out tool.Output) (tool.Result, error) {
	var in bashInput
	if err := decode(params, &in); err != nil {
		return tool.Result{}, fmt.Errorf("bash: %w", err)
	}
	if strings.TrimSpace(in.Command) == "" {
		return tool.Result{}, fmt.Errorf("bash: %w: command is empty", ErrInvalidParams)
	}
	if env == nil || env.WorkDir == "" {
		return tool.Result{}, fmt.Errorf("bash: %w", ErrNoWorkDir)
	}
	if err := ctx.Err(); err != nil {
		return tool.Result{}, fmt.Errorf("bash: %w", err)
	}
	if in.RunInBackground {
		if b.Shells == nil {
			return tool.Result{}, fmt.Errorf("bash: %w: run_in_background is not available here", ErrInvalidParams)
		}
		id, err := b.Shells.start(env, in.Command, tool.CallID(ctx))
		if err != nil {
			return tool.Result{}, fmt.Errorf("bash: %w", err)
		}
		return tool.Result{
			Content: fmt.Sprintf("Command running in the background with id %s. Read its output with BashOutput, stop it with KillShell.", id),
			Summary: "running in the background as " + id,
		}, nil
	}
	timeout := in.timeout()

	// Its own process group, so that killing it kills what it started;
	// the guard kills the group when sluice dies, however it dies (kill -9).
	cmd, err := guardedCommand(env, in.Command)
	if err != nil {
		return tool.Result{}, fmt.Errorf("bash: %w", err)
	}

	pr, pw, err := os.Pipe()
	if err != nil {
		return tool.Result{}, fmt.Errorf("bash: %w", err)
	}
	defer pr.Close()
	cmd.Stdout, cmd.Stderr = pw, pw
	waited := make(chan error, 1)
	err = deathsig.Start(cmd, waited)
	pw.Close() // The children hold the write end now; EOF comes when they all close it.
	if err != nil {
		return tool.Result{}, fmt.Errorf("bash: %w", err)
	}

	kept := newHeadTail(orDefault(b.MaxOutput, DefaultMaxOutput))
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		copyOutput(pr, out, kept)
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var waitErr error
	var timedOut, aborted bool
	select {
	case waitErr = <-waited:
	case <-timer.C:
		timedOut = true
		waitErr = b.kill(cmd.Process.Pid, waited, copied)
	case <-ctx.Done():
		aborted = true
		waitErr = b.kill(cmd.Process.Pid, waited, copied)
	}
	// The shell is gone; read what is left in the pipe, but not forever.
	_ = pr.SetReadDeadline(time.Now().Add(orDefault(b.DrainGrace, DefaultDrainGrace)))
	<-copied

	res := tool.Result{Content: strings.TrimRight(kept.String(), "\n")}
	var note string
	switch {
	case aborted:
		note = "Command aborted"
	case timedOut:
		note = "Command timed out after " + timeout.String()
	case waitErr != nil:
		var exitErr *exec.ExitError
		if !errors.As(waitErr, &exitErr) {
			return res, fmt.Errorf("bash: %w", waitErr)
		}
		note = exitErr.Error() // "exit status N" or "signal: killed"
	}
	if note != "" {
		res.IsError = true
		if res.Content != "" {
			res.Content += "\n"
		}
		res.Content += note
	}
	if aborted {
		return res, fmt.Errorf("bash: %w", ctx.Err())
	}
	return res, nil
}

// kill stops the process group led by pid: SIGTERM, then, once the shell has
// been reaped and the output closed (everything in the group is gone) or
// KillGrace has passed, SIGKILL for whatever remains. It returns the shell's
// wait error.
func (b *Bash) kill(pid int, waited <-chan error, copied <-chan struct{}) error {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	grace := time.NewTimer(orDefault(b.KillGrace, DefaultKillGrace))
	defer grace.Stop()
	var err error
	reaped, closed := false, false
wait:
	for !reaped || !closed {
		select {
		case err = <-waited:
			reaped, waited = true, nil
		case <-copied:
			closed, copied = true, nil
		case <-grace.C:
			// Something ignores SIGTERM, or holds the output after leaving
			// the group (the drain deadline will end that read).
			break wait
		}
	}
	// Anything left in the group dies now. The group ID cannot have been
	// reused while a member lived; when the group is empty this is a no-op
	// (ESRCH).
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	if !reaped {
		err = <-waited
	}
	return err
}

// copyOutput streams r to out and keeps it in kept until EOF or the read
// deadline. Chunks go out as they are read, except for a trailing partial
// UTF-8 character, held back until the rest of it arrives so that no
// consumer decodes half a character.
func copyOutput(r *os.File, out tool.Output, kept *headTail) {
	s := &streamer{out: out, kept: kept, buf: make([]byte, 32*1024)}
	for {
		n, err := r.Read(s.buf[s.pending:])
		s.emit(n)
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// The deadline ends the wait for writers that linger, not the
			// reading of what they wrote: a read past the deadline fails
			// without looking at the pipe, so read what it holds directly.
			s.drain(r)
		}
		s.flush()
		return
	}
}

// maxDrain bounds the final read of a pipe that a lingering writer keeps
// filling.
const maxDrain = 1 << 20

// streamer passes output on in chunks that end on character boundaries.
type streamer struct {
	out     tool.Output
	kept    *headTail
	buf     []byte
	pending int // Bytes of an incomplete character at the start of buf.
}

// emit passes on the n bytes just read after the pending ones, holding back
// an incomplete character at the end.
func (s *streamer) emit(n int) {
	n = max(n, 0) + s.pending
	k := completeRunes(s.buf[:n])
	s.write(s.buf[:k])
	s.pending = copy(s.buf, s.buf[k:n])
}

// flush passes on what is held back: the stream has ended, the character
// will not be completed.
func (s *streamer) flush() {
	s.write(s.buf[:s.pending])
	s.pending = 0
}

func (s *streamer) write(p []byte) {
	if len(p) == 0 {
		return
	}
	if s.out != nil {
		_, _ = s.out.Write(p) // Output never fails.
	}
	s.kept.Write(p)
}

// drain reads what the pipe holds without waiting for more.
func (s *streamer) drain(r *os.File) {
	if r.SetReadDeadline(time.Time{}) != nil {
		return
	}
	rc, err := r.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		for total := 0; total < maxDrain; {
			n, err := syscall.Read(int(fd), s.buf[s.pending:])
			if n <= 0 || err != nil {
				break // EAGAIN: empty; 0: every writer is gone.
			}
			s.emit(n)
			total += n
		}
		return true // Never wait.
	})
}

// orDefault returns v, or def when v is zero.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
