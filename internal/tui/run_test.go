package tui

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/provider/demo"
	"github.com/sluicehq/sluice/internal/testbin"
)

func TestMain(m *testing.M) {
	// Chroma's regular expressions keep a coarse clock goroutine for
	// their timeouts, started once per process.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/dlclark/regexp2.runClock"), goleak.Cleanup(func(int) { testbin.Cleanup() }))
}

// syncBuffer is the program's output, read by the test while written.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the output shows want. The deadline only guards
// against a hang: correctness is decided by what the output shows.
func waitFor(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(ansi.Strip(out.String()), want) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %q; output:\n%s", want, ansi.Strip(out.String()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// program is the real program run against a session in a goroutine, as
// the tests below drive it: keys through a pipe, the output recorded.
type program struct {
	t    *testing.T
	keys *io.PipeWriter
	out  *syncBuffer
	done chan error
}

// startProgram runs the program on sess with prompt as its first message,
// at 100x40.
func startProgram(t *testing.T, sess *agent.Session, prompt string) *program {
	in, keys := io.Pipe()
	p := &program{t: t, keys: keys, out: &syncBuffer{}, done: make(chan error, 1)}
	go func() {
		p.done <- Run(context.Background(), Options{
			Session: sess, Prompt: prompt,
			Input: in, Output: p.out, Width: 100, Height: 40, Style: "dark",
			Environ: []string{"TERM=xterm-256color"},
		})
	}()
	return p
}

// wait waits until the output shows want.
func (p *program) wait(want string) {
	p.t.Helper()
	waitFor(p.t, p.out, want)
}

// press types b.
func (p *program) press(b []byte) {
	p.t.Helper()
	if _, err := p.keys.Write(b); err != nil {
		p.t.Fatal(err)
	}
}

// output is what the program wrote so far, without escape sequences.
func (p *program) output() string { return ansi.Strip(p.out.String()) }

// quit presses ctrl+d, waits for the program to end and returns its
// output.
func (p *program) quit() string {
	p.t.Helper()
	p.press([]byte{4})
	if err := <-p.done; err != nil {
		p.t.Fatalf("Run: %v", err)
	}
	p.keys.Close()
	return p.output()
}

// TestRunWithAgent runs the real program against a real session with the
// demo model: the first prompt streams reasoning and a tool call, the
// permission prompt is answered, the tool's output and the markdown answer
// arrive, and ctrl+d quits. Every goroutine ends (TestMain checks).
func TestRunWithAgent(t *testing.T) {
	sess, err := agent.New(agent.Options{Provider: demo.New(demo.Config{Delay: -1}), WorkDir: t.TempDir(), Model: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	prog := startProgram(t, sess, "show me a tool")
	prog.wait("Allow Bash(")
	prog.press([]byte("1"))
	prog.wait("to talk to a real model.")
	s := prog.quit()
	for _, want := range []string{"show me a tool", "Thought for", "Bash(" + demo.BashCommand, "step 5", "What ran"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
