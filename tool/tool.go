// Package tool defines what the agent needs of a tool: its schema for the
// model, how to show its parameters briefly, whether it needs approval, and
// how to run it with streamed output. The built-in tools (Bash, Read, Write,
// Edit, Glob, Grep) and MCP servers' tools implement it; Go programs that
// embed sluice may add their own.
package tool

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/sluicehq/sluice/protocol"
)

// Tool is one tool the model may call.
type Tool interface {
	// Name is the name the model calls the tool by ("Bash", "Read", ...).
	Name() string
	// Description tells the model what the tool does.
	Description() string
	// Schema is the JSON schema of the tool's input.
	Schema() json.RawMessage
	// Kind says what the tool does to the world; it decides approval and
	// whether calls may run in parallel.
	Kind() Kind
	// Compact renders params in one short line for display (Bash: the
	// command; Read: the path). It must not fail: on bad params it returns
	// what it can.
	Compact(params json.RawMessage) string
	// Run runs one call. Output written to out streams to every face while
	// the tool runs. The returned Result is what the model and the final
	// tool block get. Run returns an error only when the call could not be
	// carried out (bad params, a path outside the working directory, ctx
	// cancelled); the error text is shown to the model as a failed result.
	//
	// Run must return promptly once ctx is done: aborting a run, a
	// rewind, a clear and closing the session wait for it. A tool that
	// starts processes or goroutines stops them before it returns.
	Run(ctx context.Context, env *Env, params json.RawMessage, out Output) (Result, error)
}

// Kind classifies tools for permissions and scheduling.
type Kind int

const (
	// ReadOnly tools change nothing; they run without approval in every
	// mode and may run in parallel with each other.
	ReadOnly Kind = iota
	// Edit tools change files in the working directory: approved
	// automatically in acceptEdits mode.
	Edit
	// Execute tools run commands: they need approval unless the mode
	// bypasses permissions.
	Execute
)

// Env is the environment a call runs in.
type Env struct {
	// WorkDir is the session's working directory (absolute).
	WorkDir string
	// AllowedDirs are further directories file tools may touch.
	AllowedDirs []string
	// Environ is the environment for commands (nil: the process's).
	Environ []string
}

// Output receives a running tool's output as it is produced.
type Output interface {
	// Write appends output. It never blocks for long and never fails.
	Write(p []byte) (int, error)
}

// Result is the outcome of a call.
type Result struct {
	// Content is the whole output, for the model and the final tool block.
	Content string
	// IsError marks a call that ran but failed (a non-zero exit status, no
	// match for an edit).
	IsError bool
	// Summary, when set, is a short human description shown instead of the
	// last lines of Content (for example "Wrote 12 lines to a.go").
	Summary string
	// EndsRun, on a call that succeeded, ends the run once the calls of
	// its response are done, as a success: the model is not asked again
	// (a final answer given through a tool, as print mode's
	// StructuredOutput).
	EndsRun bool
	// File, from a file tool, is what the call read or changed, as data
	// for the faces (the tool block's end event); the model sees Content
	// only.
	File *protocol.ToolFile
}

// ErrOutsideWorkDir is returned for a path outside the working directory
// and the allowed directories.
var ErrOutsideWorkDir = errors.New("path is outside the working directory")

type callIDKey struct{}

// WithCallID returns ctx carrying the id of the tool call being run. The
// agent sets it, so that a tool whose work shows elsewhere (a client's
// terminal) can say which call it belongs to.
func WithCallID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callIDKey{}, id)
}

// CallID returns the id of the tool call ctx runs ("" outside a call).
func CallID(ctx context.Context) string {
	id, _ := ctx.Value(callIDKey{}).(string)
	return id
}

// Replacer is a tool whose call replaces a file's whole content (Write).
// The agent asks it, before the call runs, for the text the call would
// replace, so that every face can show the call as a diff.
type Replacer interface {
	// Replaced returns the text of the file the call would replace: ok is
	// false when there is none (a new file, bad params), or when it is not
	// text or longer than max bytes.
	Replaced(ctx context.Context, env *Env, params json.RawMessage, max int) (text string, ok bool)
}
