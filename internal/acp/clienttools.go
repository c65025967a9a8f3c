package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/sluicehq/sluice/internal/tools"
	"github.com/sluicehq/sluice/tool"
)

// terminalOutputLimit bounds what a client terminal keeps of a command's
// output, as the local Bash bounds its own.
const terminalOutputLimit = tools.DefaultMaxOutput

// sessionRef is filled with the session once the agent has made it: the
// tools are built before the session id exists.
type sessionRef struct {
	mu sync.Mutex
	ss *session
}

func (r *sessionRef) get() (*session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ss == nil {
		return nil, errors.New("acp: the session is not attached yet")
	}
	return r.ss, nil
}

func (r *sessionRef) set(ss *session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ss = ss
}

// clientTools returns the built-in tools of a session in cwd with those
// the client offers to run swapped in: Read, Write and Edit through its
// fs methods, Bash in its terminals. It returns nil when the client offers
// none of them (the built-ins then run locally).
func (s *Server) clientTools(cwd string, ref *sessionRef) []tool.Tool {
	caps := s.clientCaps()
	if !caps.Fs.ReadTextFile && !caps.Fs.WriteTextFile && !caps.Terminal {
		return nil
	}
	files := &clientFiles{srv: s, ref: ref, read: caps.Fs.ReadTextFile, write: caps.Fs.WriteTextFile}
	ts := tools.BuiltinsIn(cwd)
	for i, t := range ts {
		switch t := t.(type) {
		case *tools.Read:
			if files.read {
				t.Files = files
			}
		case *tools.Write:
			if files.write {
				t.Files = files
			}
		case *tools.Edit:
			// Edit reads and writes: both must go to the editor, or an
			// unsaved buffer would be overwritten from the disk.
			if files.read && files.write {
				t.Files = files
			}
		case *tools.Bash:
			if caps.Terminal {
				ts[i] = &terminalBash{Bash: t, srv: s, ref: ref}
			}
		}
	}
	return ts
}

// clientFiles is tools.Files through the client's fs/* methods. A method
// the client does not offer falls back to the disk.
type clientFiles struct {
	srv         *Server
	ref         *sessionRef
	read, write bool
}

func (f *clientFiles) ReadTextFile(ctx context.Context, path string) (string, error) {
	ss, err := f.ref.get()
	if err != nil {
		return "", err
	}
	resp, err := f.srv.conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: ss.id, Path: path})
	if err != nil {
		return "", fmt.Errorf("the editor could not read %s: %w", path, err)
	}
	return resp.Content, nil
}

func (f *clientFiles) WriteTextFile(ctx context.Context, path, content string) error {
	ss, err := f.ref.get()
	if err != nil {
		return err
	}
	if _, err := f.srv.conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: ss.id, Path: path, Content: content}); err != nil {
		return fmt.Errorf("the editor could not write %s: %w", path, err)
	}
	return nil
}

// terminalBash is Bash run in a client terminal: the client shows the
// command's live output in the tool call (which embeds the terminal), and
// the model gets the output at the end. The schema, description and
// approval are the built-in Bash's.
type terminalBash struct {
	*tools.Bash
	srv *Server
	ref *sessionRef
}

type bashParams struct {
	Command string   `json:"command"`
	Timeout *float64 `json:"timeout"`
}

// Run implements tool.Tool.
func (b *terminalBash) Run(ctx context.Context, env *tool.Env, params json.RawMessage, _ tool.Output) (tool.Result, error) {
	var in bashParams
	if err := json.Unmarshal(params, &in); err != nil || strings.TrimSpace(in.Command) == "" {
		return tool.Result{}, fmt.Errorf("bash: %w: want a command", tools.ErrInvalidParams)
	}
	ss, err := b.ref.get()
	if err != nil {
		return tool.Result{}, err
	}
	conn := b.srv.conn
	term, err := conn.CreateTerminal(ctx, sdk.CreateTerminalRequest{
		SessionId: ss.id, Command: "bash", Args: []string{"-c", in.Command},
		Cwd: sdk.Ptr(env.WorkDir), OutputByteLimit: sdk.Ptr(terminalOutputLimit),
	})
	if err != nil {
		return tool.Result{}, fmt.Errorf("bash: the editor could not open a terminal: %w", err)
	}
	id := term.TerminalId
	// Release and kill must reach the client even when ctx was cancelled.
	bg := context.WithoutCancel(ctx)
	defer conn.ReleaseTerminal(bg, sdk.ReleaseTerminalRequest{SessionId: ss.id, TerminalId: id})
	if call := tool.CallID(ctx); call != "" {
		ss.setTerminal(call, id)
		ss.send(sdk.UpdateToolCall(sdk.ToolCallId(call), sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolTerminalRef(id)})))
	}

	timeout := tools.DefaultTimeout
	if in.Timeout != nil && *in.Timeout > 0 {
		timeout = min(time.Duration(*in.Timeout*float64(time.Millisecond)), tools.MaxTimeout)
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	exit, waitErr := conn.WaitForTerminalExit(wctx, sdk.WaitForTerminalExitRequest{SessionId: ss.id, TerminalId: id})
	var note string
	if waitErr != nil {
		// Timed out or aborted: stop the command, keep what it printed.
		conn.KillTerminal(bg, sdk.KillTerminalRequest{SessionId: ss.id, TerminalId: id})
		note = "Command aborted"
		if ctx.Err() == nil {
			note = "Command timed out after " + timeout.String()
		}
	}
	out, err := conn.TerminalOutput(bg, sdk.TerminalOutputRequest{SessionId: ss.id, TerminalId: id})
	if err != nil {
		return tool.Result{}, fmt.Errorf("bash: the editor did not return the terminal's output: %w", err)
	}
	res := tool.Result{Content: strings.TrimRight(out.Output, "\n")}
	if out.Truncated {
		res.Content = "[output truncated]\n" + res.Content
	}
	switch {
	case note != "":
	case exit.Signal != nil && *exit.Signal != "":
		note = "signal: " + *exit.Signal
	case exit.ExitCode != nil && *exit.ExitCode != 0:
		note = fmt.Sprintf("exit status %d", *exit.ExitCode)
	}
	if note != "" {
		res.IsError = true
		if res.Content != "" {
			res.Content += "\n"
		}
		res.Content += note
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("bash: %w", ctx.Err())
	}
	return res, nil
}
