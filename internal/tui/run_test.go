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

// TestRunWithAgent runs the real program against a real session with the
// demo model: the first prompt streams reasoning and a tool call, the
// permission prompt is answered, the tool's output and the markdown answer
// arrive, and ctrl+d quits. Every goroutine ends (TestMain checks).
func TestRunWithAgent(t *testing.T) {
	sess, err := agent.New(agent.Options{Provider: demo.New(demo.Config{Delay: -1}), WorkDir: t.TempDir(), Model: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	in, keys := io.Pipe()
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Options{
			Session: sess, Prompt: "show me a tool",
			Input: in, Output: out, Width: 100, Height: 40, Style: "dark",
			Environ: []string{"TERM=xterm-256color"},
		})
	}()
	waitFor(t, out, "Allow Bash(")
	if _, err := keys.Write([]byte("1")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, "to talk to a real model.")
	if _, err := keys.Write([]byte{4}); err != nil { // ctrl+d
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	keys.Close()
	s := ansi.Strip(out.String())
	for _, want := range []string{"show me a tool", "Thought for", "Bash(" + demo.BashCommand, "step 5", "## What ran"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
