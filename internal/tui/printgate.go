package tui

import (
	"bytes"
	"io"
	"sync"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/term"
)

// printGate is the program's output. It makes a print and the frame that
// no longer holds the printed content reach the terminal in one write.
//
// Bubble Tea writes a print (tea.Println) at once, above the frame it last
// flushed, and the next frame on its own ticker. When the printed content
// has just left the live area, that flushed frame still shows it, so for
// up to a frame period the terminal shows it twice: in the print and in
// the old frame below it (or, when a frame without it came first, nowhere).
// Neither write can be moved, but both can be held: from the update that
// takes the content off the view everything written is kept until the
// print and a frame drawn without the content are both in, then written as
// one. The bytes are Bubble Tea's own, in its order; only the states in
// between, which the terminal would have shown, are gone.
//
// The model holds the output in that update (hold), before Bubble Tea is
// handed the view without the content. Frames written from then on may
// still be drawn from the view before it, until the model marks, in a
// later update (mark: Bubble Tea has the new view by then and a frame
// being drawn from the old one has been written), that frames from now on
// are drawn without the content. The print's pieces follow, each one
// write, then settle: with a frame after the mark as well, everything goes
// out; otherwise with the next write, and the model makes Bubble Tea draw
// one. Bubble Tea writes a frame as one Write, a piece as one Write, and
// its queued raw output (terminal queries) as one Write; raw output is
// counted as a frame, which can only release a print early.
type printGate struct {
	w io.Writer

	mu      sync.Mutex
	holding bool
	held    bytes.Buffer
	// marked: frames written now are drawn without the content being
	// printed; writes counts the writes since the mark.
	marked bool
	writes int
	// releaseNext: the print is in but no frame after it yet; the next
	// write releases everything.
	releaseNext bool
	err         error // of a release outside Write, returned by the next Write
}

// newPrintGate returns the gate in front of w and the writer to give
// Bubble Tea: when w is a terminal that writer is one too (term.File), so
// that Bubble Tea still reads its size, watches it for resizes and detects
// its colours.
func newPrintGate(w io.Writer) (*printGate, io.Writer) {
	g := &printGate{w: w}
	if f, ok := w.(term.File); ok {
		return g, &printGateFile{printGate: g, f: f}
	}
	return g, g
}

// Write writes p, or holds it while a print is armed.
func (g *printGate) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.err; err != nil {
		g.err = nil
		return 0, err
	}
	if !g.holding {
		return g.w.Write(p)
	}
	g.held.Write(p)
	if g.marked {
		g.writes++
	}
	if g.releaseNext {
		if err := g.release(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// hold starts holding the output: the view Bubble Tea is about to get no
// longer shows content that is about to be printed. What is already held
// (an earlier print waiting for its frame) stays held.
func (g *printGate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.holding, g.marked, g.releaseNext, g.writes = true, false, false, 0
}

// mark says that Bubble Tea has the view without the content: frames
// written from now on are drawn from it.
func (g *printGate) mark() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.holding {
		g.marked, g.writes = true, 0
	}
}

// settle is called once the print's pieces are written (writes of them
// since the mark). With a frame written after the mark as well,
// everything held goes out now; otherwise with the next write, and
// needFrame says that the caller must make Bubble Tea draw a frame (it
// draws only a changed view).
func (g *printGate) settle(pieces int) (needFrame bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.holding || !g.marked {
		return false
	}
	if g.writes > pieces {
		g.err = g.release()
		return false
	}
	g.releaseNext = true
	return true
}

// settling reports whether a settled print still waits for the next write.
func (g *printGate) settling() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.holding && g.releaseNext
}

// flush writes what is held: the program has ended.
func (g *printGate) flush() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.err; err != nil {
		g.err = nil
		return err
	}
	return g.release()
}

// release writes the held output as one write. When Bubble Tea frames its
// updates in synchronized output (the terminal said it supports mode 2026),
// the frame's opening is moved to the front, so that the print before it
// is part of the same atomic update; the frame closes it.
func (g *printGate) release() error {
	g.holding, g.marked, g.releaseNext, g.writes = false, false, false, 0
	if g.held.Len() == 0 {
		return nil
	}
	out := g.held.Bytes()
	if bytes.Contains(out, []byte(ansi.SetModeSynchronizedOutput)) && !bytes.HasPrefix(out, []byte(ansi.SetModeSynchronizedOutput)) {
		out = append([]byte(ansi.SetModeSynchronizedOutput), out...)
	}
	_, err := g.w.Write(out)
	g.held.Reset()
	return err
}

// printGateFile is a printGate in front of a terminal.
type printGateFile struct {
	*printGate
	f term.File
}

func (g *printGateFile) Read(p []byte) (int, error) { return g.f.Read(p) }
func (g *printGateFile) Fd() uintptr                { return g.f.Fd() }

// Close leaves the terminal open: it is the caller's.
func (g *printGateFile) Close() error { return nil }
