package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/internal/deathsig"
)

// Runner runs the hooks of a Config for one session.
type Runner struct {
	Config Config
	// Dir is where hooks run: the session's working directory.
	Dir string
	// Environ is the hooks' environment: the scrubbed one of every child
	// process (package childenv) with CLAUDE_PROJECT_DIR.
	Environ []string
	// Logger hears of hooks that failed or said something for the user.
	Logger *slog.Logger
	// MaxOutput bounds what is kept of a hook's stdout and of its stderr
	// (0: 1 MiB each).
	MaxOutput int
	// Observe, when set, hears of each hook command as it starts and as
	// it ends (Claude Code's --include-hook-events); it is called from the
	// goroutines that run the hooks, and must return promptly.
	Observe func(Lifecycle)
}

// Lifecycle is one hook command starting (Done false) or ending.
type Lifecycle struct {
	// ID is the same for a hook's start and its end.
	ID    string
	Event Event
	// Name is the event and what its matcher matched (the tool, a
	// SessionStart's source), as Claude Code names hook runs:
	// "PreToolUse:Bash", "SessionStart:startup", "Stop".
	Name string
	Done bool
	// The rest is set when Done.
	Stdout, Stderr string
	ExitCode       int
	// Outcome is "success" (exit 0), "error" or "cancelled" (timed out or
	// stopped).
	Outcome string
}

// Input is the event as hooks get it on stdin: the fields every event has,
// then the event's own (tool_name, tool_input, prompt, ...).
type Input struct {
	SessionID      string
	TranscriptPath string
	Fields         map[string]any
}

// Has reports whether any hook is configured for ev.
func (r *Runner) Has(ev Event) bool {
	if r == nil {
		return false
	}
	for _, m := range r.Config[ev] {
		if len(m.Hooks) > 0 {
			return true
		}
	}
	return false
}

// Run runs every hook of ev whose matcher matches target, side by side,
// and returns what they decided together. It returns when they have all
// ended: each is bounded by its timeout and by ctx, and killed with its
// whole process group past either.
func (r *Runner) Run(ctx context.Context, ev Event, target string, in Input) Outcome {
	var cmds []Command
	if r != nil {
		for i := range r.Config[ev] {
			m := &r.Config[ev][i]
			if m.Matches(target) {
				for _, c := range m.Hooks {
					if c.Type == "command" {
						cmds = append(cmds, c)
					}
				}
			}
		}
	}
	if len(cmds) == 0 {
		return Outcome{}
	}
	doc := map[string]any{}
	for k, v := range in.Fields {
		doc[k] = v
	}
	doc["session_id"] = in.SessionID
	doc["transcript_path"] = in.TranscriptPath
	doc["cwd"] = r.Dir
	doc["hook_event_name"] = string(ev)
	stdin, err := json.Marshal(doc)
	if err != nil {
		return Outcome{Messages: []string{fmt.Sprintf("%s hook input: %v", ev, err)}}
	}
	results := make([]result, len(cmds))
	var wg sync.WaitGroup
	name := string(ev)
	if target != "" {
		name += ":" + target // the tool, or SessionStart's source
	}
	for i, c := range cmds {
		wg.Go(func() {
			id := uuid.NewString()
			if r.Observe != nil {
				r.Observe(Lifecycle{ID: id, Event: ev, Name: name})
			}
			results[i] = r.run(ctx, c, stdin)
			if r.Observe != nil {
				r.Observe(results[i].lifecycle(id, ev, name))
			}
		})
	}
	wg.Wait()
	var out Outcome
	for _, res := range results {
		out.add(ev, res)
	}
	logger := r.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	for _, m := range out.Messages {
		logger.Warn("hook", "event", string(ev), "message", m)
	}
	return out
}

func (res result) lifecycle(id string, ev Event, name string) Lifecycle {
	l := Lifecycle{ID: id, Event: ev, Name: name, Done: true, Stdout: string(res.stdout), Stderr: string(res.stderr), ExitCode: res.code}
	switch {
	case res.cancelled:
		l.Outcome = "cancelled"
	case res.err == nil && res.code == 0:
		l.Outcome = "success"
	default:
		l.Outcome = "error"
	}
	return l
}

// result is how one hook ended.
type result struct {
	name           string // the command, for messages
	code           int
	stdout, stderr []byte
	err            error // it did not run, or ran out of time
	cancelled      bool  // it ran out of time or was stopped
}

func (r *Runner) run(ctx context.Context, c Command, stdin []byte) result {
	res := result{name: c.Command}
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	// The hook runs as Bash runs its commands (package tools): under a
	// guard shell that kills its process group when sluice dies, so no hook
	// outlives sluice however sluice dies. The event comes on a pipe (a
	// background command's stdin would be /dev/null).
	pr, pw, err := os.Pipe()
	if err != nil {
		res.err = fmt.Errorf("%s: %w", c.Command, err)
		return res
	}
	cmd, err := deathsig.Command(ctx, "sluice-hook", c.Command, pr)
	if err != nil {
		pr.Close()
		pw.Close()
		res.err = fmt.Errorf("%s: %w", c.Command, err)
		return res
	}
	cmd.Dir = r.Dir
	cmd.Env = r.Environ
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A hook that left a child holding its output open does not hold
	// sluice once the hook itself has ended or been killed.
	cmd.WaitDelay = time.Second
	limit := r.MaxOutput
	if limit <= 0 {
		limit = 1 << 20
	}
	var stdout, stderr capped
	stdout.max, stderr.max = limit, limit
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	waited := make(chan error, 1)
	err = deathsig.Start(cmd, waited)
	pr.Close()
	if err != nil {
		pw.Close()
		res.err = fmt.Errorf("%s: %w", c.Command, err)
		return res
	}
	go func() {
		// A hook that does not read its input must not block: the write
		// fails once the hook has ended and closed the pipe.
		_, _ = io.Copy(pw, bytes.NewReader(stdin))
		pw.Close()
	}()
	err = <-waited
	res.stdout, res.stderr = stdout.buf.Bytes(), stderr.buf.Bytes()
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		res.cancelled = true
		if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			res.err = fmt.Errorf("%s: timed out after %s", c.Command, c.timeout())
		} else {
			res.err = fmt.Errorf("%s: %w", c.Command, ctx.Err())
		}
	case errors.As(err, &exitErr):
		res.code = exitErr.ExitCode()
		if res.code < 0 { // killed by a signal
			res.err = fmt.Errorf("%s: %w", c.Command, err)
		}
	case err != nil:
		res.err = fmt.Errorf("%s: %w", c.Command, err)
	}
	return res
}

// capped keeps the first max bytes written to it and drops the rest.
type capped struct {
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
