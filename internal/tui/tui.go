// Package tui is sluice's terminal face: the interactive agent that runs
// when sluice is started without a subcommand and without -p.
//
// # Using it
//
//	err := tui.Run(ctx, tui.Options{
//		Session: sess,                                  // required
//		Open:    func(id string) (*agent.Session, error) { return agent.Open(opts, id) },
//		List:    func() ([]agent.SessionInfo, error) { return agent.ListSessions(ctx, store, wd) },
//		Models:  []string{"claude-sonnet-4-5", "claude-opus-4-1"},
//	})
//
// Run returns when the user quits (/exit, ctrl+d, ctrl+c twice) or ctx is
// done. It owns the sessions it shows: the session it leaves for another
// (/resume) and the one on screen when it returns are closed (closing a
// session twice is harmless).
//
// # How the screen works
//
// The UI keeps its own copy of the session with the one reducer,
// protocol.List, fed by a subscription (Session.SnapshotAndSubscribe).
// Every event is applied when it arrives; a burst already queued is
// applied whole before the next frame, and Bubble Tea's frame rate is the
// only limit on terminal writes. There is no data-layer throttle.
//
// The screen has two parts, as Ink's <Static> does it. Finished content is
// printed once into the terminal's scrollback, above the program, and is
// never printed again. The live area below it holds only what can still
// change: the blocks of the message being written, then queued messages,
// notices, the prompt and the status line. A print cursor (message pm,
// block pb) separates the two. Blocks never reopen in sluice's protocol,
// so a block is printed whole or not at all, and the live area starts
// exactly after the last printed block: no content is ever on screen
// twice.
//
// An assistant message is printed only when nothing can take it back: a
// failed attempt is discarded (assistantMessageDiscarded) before its retry,
// so a message prints only once it is settled — its turn ended, it holds an
// error, a later message exists or the session is idle. Its blocks then
// print as each ends, in order.
//
// Answers are rendered as markdown (internal/termmd) when printed. While an answer streams,
// the part up to its last paragraph break (or a list's last item begun)
// outside a code fence is rendered as markdown once per paragraph (or
// item) and the growing tail is shown as plain
// text, so a half-open fence never makes the screen flicker.
//
// Bubble Tea prints above the frame it last flushed, and flushes on its
// own ticker, which the model cannot observe (charmbracelet/bubbletea#1736).
// Three measures keep a print from showing content twice or not at all. A
// print taller than the room above the flushed frame would weld rows of
// that frame into the scrollback for good, so the live frame is kept a
// quarter of the terminal shorter than the terminal and prints are split
// into pieces of at most that quarter, which fit whichever frame was
// flushed last. Content is printed in the update that takes it from the
// live area, and the program's output goes through a gate (printGate)
// that holds the print until a frame without the content is written too,
// then writes both at once: the terminal never shows the print below an
// old frame that still holds it. And content that has to wait to be
// printed (behind an earlier print, the first frame, or the expanded
// view's return to the main screen) stays in the live area meanwhile.
//
// A resize that changes the width or shortens the terminal clears the
// terminal, scrollback too, and prints everything again at the new size:
// the terminal reflows the old frame in ways Bubble Tea cannot follow.
// Bubble Tea buffers the cursor move of a screen clear (tea.ClearScreen)
// until its next frame but writes a print at once, so until a clear the
// model asks for is handled the frame's cursor stays in the frame's top
// left corner, where that move is empty (clearScreen).
//
// Ctrl+O shows an expanded view (whole parameters, results and reasoning)
// on the alternate screen: a still snapshot taken when it opens. Events go
// on being applied meanwhile, and what becomes final is printed when the
// user goes back to the live view.
//
// # Concurrency
//
// Everything the UI holds is used by the Bubble Tea event loop only. Work
// that blocks (a run, a shell command, compaction, rewind, clear, opening
// a session, reading the next events, the reasoning timer) runs in Bubble
// Tea commands that return messages and touch no UI state. The reasoning
// timer uses Options.Clock, so tests move time by hand.
package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	tea "charm.land/bubbletea/v2"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model"
)

// Options configure Run.
type Options struct {
	// Session is the session to show first. Required.
	Session *agent.Session
	// Open opens a stored session for /resume; List lists them. When
	// either is nil, /resume is not available.
	Open func(id string) (*agent.Session, error)
	List func() ([]agent.SessionInfo, error)
	// Models are the names /model offers (/model NAME takes any name).
	Models []string
	// Prompt, when set, is sent as the first message.
	Prompt string
	// Input and Output default to the process's terminal (os.Stdin and
	// os.Stdout).
	Input  io.Reader
	Output io.Writer
	// Width and Height set the terminal's size when Output is not a
	// terminal (tests); a terminal reports its own.
	Width, Height int
	// Environ is the environment used to detect the terminal's abilities
	// (default: the process's).
	Environ []string
	// Style is the answers' colours, "dark" or "light"; empty picks one
	// from the terminal's background.
	Style string
	// Clock drives the reasoning timer (default model.SystemClock).
	Clock model.Clock
}

// Run runs the interactive agent until the user quits or ctx is done, then
// closes the session on screen. It returns nil then, and an error only when
// the terminal failed or the session did not close cleanly.
func Run(ctx context.Context, opts Options) error {
	if opts.Session == nil {
		return errors.New("tui: Options.Session is required")
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := newModel(ctx, opts, newAgentBackend(opts.Session))
	m.holdPrints = true
	out := opts.Output
	if out == nil {
		out = os.Stdout
	}
	gate, gated := newPrintGate(out)
	m.gate = gate
	popts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithOutput(gated)}
	if opts.Input != nil {
		popts = append(popts, tea.WithInput(opts.Input))
	}
	if opts.Width > 0 && opts.Height > 0 {
		popts = append(popts, tea.WithWindowSize(opts.Width, opts.Height))
	}
	if opts.Environ != nil {
		popts = append(popts, tea.WithEnvironment(opts.Environ))
	}
	_, err := tea.NewProgram(m, popts...).Run()
	if ferr := gate.flush(); ferr != nil && err == nil {
		err = fmt.Errorf("tui: writing to the terminal: %w", ferr)
	}
	cancel()
	m.sub.Close()
	if cerr := m.sess.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("tui: closing the session: %w", cerr)
	}
	switch {
	case errors.Is(err, tea.ErrProgramKilled) && parent.Err() != nil:
		// ctx ended the program: that is how the caller stops it.
		return nil
	case errors.Is(err, tea.ErrInterrupted):
		// SIGINT from outside the terminal: the user quits.
		return nil
	}
	return err
}
