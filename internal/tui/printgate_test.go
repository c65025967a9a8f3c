package tui

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/charmbracelet/x/vt"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
)

// writeLog records every write separately, as the terminal receives them.
type writeLog struct {
	mu     sync.Mutex
	writes [][]byte
}

func (l *writeLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes = append(l.writes, bytes.Clone(p))
	return len(p), nil
}

func (l *writeLog) all() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.writes)
}

// replay feeds writes to a terminal emulator one at a time and calls state
// after each with everything the terminal holds: its scrollback, then its
// screen, as text. The program runs without a terminal on its input, so
// Bubble Tea moves down with a bare line feed, counting on the terminal
// driver's output mapping (ONLCR) to add the carriage return: the replay
// adds it.
func replay(w, h int, writes [][]byte, state func(i int, text string)) {
	e := vt.NewEmulator(w, h)
	// The emulator answers queries into a pipe that must be read. Closing
	// the pipe's writing end ends the reader (Emulator.Close would race
	// with it).
	drained := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, e); close(drained) }()
	defer func() { _ = e.InputPipe().(io.Closer).Close(); <-drained }()
	for i, p := range writes {
		_, _ = e.Write(bytes.ReplaceAll(p, []byte("\n"), []byte("\r\n")))
		var sb strings.Builder
		for _, l := range e.Scrollback().Lines() {
			sb.WriteString(l.String())
			sb.WriteByte('\n')
		}
		sb.WriteString(e.String())
		state(i, sb.String())
	}
}

// terminalText is what the terminal holds after all writes so far.
func terminalText(w, h int, writes [][]byte) string {
	var last string
	replay(w, h, writes, func(_ int, text string) { last = text })
	return last
}

// TestPrintLandsWithItsFrame runs the program against a real session and
// replays its writes one at a time into a terminal emulator: no state the
// terminal passes through may show a block twice, or lose it once shown.
// The answer's blocks are on the terminal in the live area when its turn
// ends; they are then printed into the scrollback while the flushed frame
// still holds them. Without the print gate, Bubble Tea writes the print
// alone, above that frame, and the terminal shows both until the next
// frame.
func TestPrintLandsWithItsFrame(t *testing.T) {
	const w, h = 100, 40
	release := make(chan struct{})
	script := modeltest.NewScript(modeltest.Response(
		modeltest.Start("m1"),
		modeltest.Reasoning(0, "first zqrsna ", "then zqrsnb"),
		modeltest.Text(1, "An answer zqtxta ", "in two zqtxtb ", "lines.\n\nAnd a second paragraph zqtxtc."),
		modeltest.Gate(release),
		modeltest.Stop(model.StopEndTurn),
	))
	sess, err := agent.New(agent.Options{Provider: script, WorkDir: t.TempDir(), Model: "test-model", Stream: modeltest.StreamOptions()})
	if err != nil {
		t.Fatal(err)
	}
	in, keys := io.Pipe()
	defer keys.Close()
	out := &writeLog{}
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Options{
			Session: sess, Prompt: "the question zqaskq",
			Input: in, Output: out, Width: w, Height: h, Style: "dark",
			Environ: []string{"TERM=xterm-256color"},
		})
	}()
	// The deadline only guards against a hang: what is checked is what the
	// terminal shows.
	waitTerminal := func(what string, cond func(text string) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond(terminalText(w, h, out.all())) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; the terminal:\n%s", what, terminalText(w, h, out.all()))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	markers := []string{"zqaskq", "zqtxta", "zqtxtb", "zqtxtc"}
	// The reasoning shows while it streams, if a frame catches it, and
	// folds to its header once it ends.
	folded := []string{"zqrsna", "zqrsnb"}
	// The banner is printed once the first frame is on the terminal; the
	// answer waits in the live area until release.
	waitTerminal("the banner printed and the answer in the live area", func(s string) bool {
		return strings.Contains(s, "✻ sluice") && strings.Contains(s, "zqtxtc") && strings.Contains(s, "Working")
	})
	close(release)
	waitTerminal("the answer printed and the run idle", func(s string) bool {
		return strings.Contains(s, "zqtxtc") && !strings.Contains(s, "Working") && strings.Contains(s, "Thought for")
	})
	if _, err := keys.Write([]byte{4}); err != nil { // ctrl+d
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	writes := out.all()
	seen := map[string]bool{}
	var bad []string
	replay(w, h, writes, func(i int, text string) {
		for _, m := range markers {
			switch n := strings.Count(text, m); {
			case n > 1:
				bad = append(bad, fmt.Sprintf("write %d/%d: %s shown %d times", i+1, len(writes), m, n))
			case n == 0 && seen[m]:
				bad = append(bad, fmt.Sprintf("write %d/%d: %s gone", i+1, len(writes), m))
			case n == 1:
				seen[m] = true
			}
		}
		for _, m := range folded {
			if n := strings.Count(text, m); n > 1 {
				bad = append(bad, fmt.Sprintf("write %d/%d: %s shown %d times", i+1, len(writes), m, n))
			}
		}
	})
	for _, m := range markers {
		if !seen[m] {
			bad = append(bad, m+" never shown")
		}
	}
	if len(bad) > 0 {
		dumpWrites(t, writes)
		t.Fatalf("%d writes; %s\nthe terminal at the end:\n%s", len(writes), strings.Join(bad, "\n"), terminalText(w, h, writes))
	}
}

func dumpWrites(t *testing.T, writes [][]byte) {
	for i, p := range writes {
		t.Logf("write %d (%d bytes): %q", i+1, len(p), p)
	}
}

// TestPrintGate drives the gate as Bubble Tea and the model would, and
// checks what reaches the terminal, write by write. Writes are named:
// f… a frame, p… a piece of a print, q raw output.
func TestPrintGate(t *testing.T) {
	t.Parallel()
	const syncOn = "\x1b[?2026h"
	for _, tc := range []struct {
		name string
		ops  []string // hold, mark, settle N (needFrame expected: settle N +), write text, flush
		want []string
	}{
		{"no print: writes pass", []string{"f1", "f2"}, []string{"f1", "f2"}},
		{"print before the next frame waits for it",
			[]string{"f1", "hold", "mark", "p1", "settle 1 +", "f2", "f3"}, []string{"f1", "p1f2", "f3"}},
		{"a frame between hold and mark may be the old view: not enough",
			[]string{"hold", "f0", "mark", "p1", "settle 1 +", "f2"}, []string{"f0p1f2"}},
		{"a frame after the mark and before the print releases at settle",
			[]string{"hold", "mark", "f1", "p1", "settle 1"}, []string{"f1p1"}},
		{"a frame after the print releases at settle",
			[]string{"hold", "mark", "p1", "p2", "f1", "settle 2", "f2"}, []string{"p1p2f1", "f2"}},
		{"pieces alone are not a frame",
			[]string{"hold", "mark", "p1", "p2", "p3", "settle 3 +", "f1"}, []string{"p1p2p3f1"}},
		{"a second print before the first one's frame: both wait",
			[]string{"hold", "mark", "p1", "settle 1 +", "hold", "f1", "mark", "p2", "settle 1 +", "f2"}, []string{"p1f1p2f2"}},
		{"a second print whose frame came after its mark",
			[]string{"hold", "mark", "p1", "settle 1 +", "hold", "mark", "f1", "p2", "settle 1"}, []string{"p1f1p2"}},
		{"settle without hold", []string{"settle 1", "f1"}, []string{"f1"}},
		{"flush at the end writes what is held",
			[]string{"hold", "mark", "p1", "flush"}, []string{"p1"}},
		{"raw output counts as a frame",
			[]string{"hold", "mark", "q", "p1", "settle 1"}, []string{"qp1"}},
		{"synchronized output opens before the print",
			[]string{"hold", "mark", "p1", "settle 1 +", syncOn + "f1\x1b[?2026l"}, []string{syncOn + "p1" + syncOn + "f1\x1b[?2026l"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := &writeLog{}
			g, w := newPrintGate(out)
			if w != io.Writer(g) {
				t.Fatal("a gate in front of a non-terminal is not the gate itself")
			}
			for _, op := range tc.ops {
				switch f := strings.Fields(op); {
				case op == "hold":
					g.hold()
				case op == "mark":
					g.mark()
				case op == "flush":
					if err := g.flush(); err != nil {
						t.Fatal(err)
					}
				case f[0] == "settle":
					var n int
					fmt.Sscan(f[1], &n)
					want := len(f) == 3
					if got := g.settle(n); got != want {
						t.Fatalf("%s: needFrame %v, want %v", op, got, want)
					}
				default:
					if n, err := w.Write([]byte(op)); err != nil || n != len(op) {
						t.Fatalf("Write(%q) = %d, %v", op, n, err)
					}
				}
			}
			var got []string
			for _, p := range out.all() {
				got = append(got, string(p))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("the terminal got %q, want %q", got, tc.want)
			}
		})
	}
}

// errWriter fails every write.
type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

// TestPrintGateReportsAFailedRelease: a release at settle has no caller to
// tell; the next write reports it, and a release by a write reports it at
// once.
func TestPrintGateReportsAFailedRelease(t *testing.T) {
	t.Parallel()
	g, w := newPrintGate(errWriter{})
	g.hold()
	g.mark()
	if _, err := w.Write([]byte("f1")); err != nil {
		t.Fatalf("a held write failed: %v", err)
	}
	if _, err := w.Write([]byte("p1")); err != nil {
		t.Fatalf("a held write failed: %v", err)
	}
	g.settle(1)
	if _, err := w.Write([]byte("f2")); err == nil {
		t.Fatal("the failed release at settle was not reported")
	}
	g.hold()
	g.mark()
	_, _ = w.Write([]byte("p2"))
	g.settle(1)
	if _, err := w.Write([]byte("f3")); err == nil {
		t.Fatal("the failed release by a write was not reported")
	}
}

// TestPrintGateInFrontOfAFile: in front of a terminal the gate is a
// term.File on the same descriptor, so that Bubble Tea still sizes and
// watches the terminal, and closing it leaves the terminal open.
func TestPrintGateInFrontOfAFile(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	_, gated := newPrintGate(w)
	f, ok := gated.(term.File)
	if !ok || f.Fd() != w.Fd() {
		t.Fatalf("the gate in front of a file is %T, not a term.File on its descriptor", gated)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatalf("writing after Close: %v", err)
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(r, b); err != nil || string(b) != "x" {
		t.Fatalf("read %q, %v", b, err)
	}
}
