package tui

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testbin"
)

// tmux drives a program in a real pseudo-terminal: tmux runs it in a
// detached session on a private server, keys are sent with send-keys and
// the screen (with its scrollback) is read with capture-pane.
type tmux struct {
	t    *testing.T
	sock string
}

func (x *tmux) run(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-S", x.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	return string(out), err
}

func (x *tmux) must(args ...string) string {
	x.t.Helper()
	out, err := x.run(args...)
	if err != nil {
		x.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return out
}

// history is everything the pane shows and has scrolled away, wrapped
// lines joined.
func (x *tmux) history() string { return x.must("capture-pane", "-p", "-J", "-S", "-", "-t", "t") }

// screen is what the pane shows now.
func (x *tmux) screen() string { return x.must("capture-pane", "-p", "-J", "-t", "t") }

func (x *tmux) keys(keys ...string) {
	x.t.Helper()
	x.must(append([]string{"send-keys", "-t", "t"}, keys...)...)
}

// waitFor waits until cond holds for the pane's history. The deadline is
// only a guard against a hang: what is checked is what the screen shows.
func (x *tmux) waitFor(what string, cond func(history, screen string) bool) {
	x.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		h, s := x.history(), x.screen()
		if cond(h, s) {
			return
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("timed out waiting for %s; screen:\n%s\n--- history:\n%s", what, s, h)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (x *tmux) waitText(s string) {
	x.t.Helper()
	x.waitFor(`"`+s+`"`, func(h, _ string) bool { return strings.Contains(h, s) })
}

// TestPseudoTerminal runs the built sluice binary under tmux against the
// demo model and checks the terminal's scrollback: a tool call with its
// permission prompt and streaming output, a shell command, the expanded
// view there and back, an answer interrupted with Esc; every finished
// block is in the scrollback exactly once, and ctrl+d quits cleanly.
func TestPseudoTerminal(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("SLUICE_REQUIRE_TMUX") != "" {
			t.Fatal("tmux is required (SLUICE_REQUIRE_TMUX is set) but not installed")
		}
		t.Skip("tmux is not installed")
	}
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	dir := t.TempDir()
	bin := testbin.Sluice(t)
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	x := &tmux{t: t, sock: filepath.Join(dir, "tmux.sock")}
	// The shell records the program's exit status; the pane stays for
	// the test to read. Sessions are stored in the test's directory.
	status := filepath.Join(dir, "status")
	x.must("new-session", "-d", "-x", "100", "-y", "30", "-s", "t", "-c", work,
		"-e", "SLUICE_HOME="+filepath.Join(dir, "home"),
		fmt.Sprintf("%s --provider demo --demo-delay 30ms; echo $? > %s; sleep 600", bin, status))
	t.Cleanup(func() { _, _ = x.run("kill-server") })

	x.waitText("✻ sluice")
	x.keys("show me a tool", "Enter")
	x.waitText("Allow Bash(")
	x.keys("1")
	x.waitFor("the tool's output streaming", func(_, s string) bool { return strings.Contains(s, "step 2") })
	x.waitText("to talk to a real model.")
	x.waitFor("idle", func(_, s string) bool { return !strings.Contains(s, "Working…") })

	x.keys("!echo bang-output", "Enter")
	x.waitFor("the shell command's output", func(h, _ string) bool { return strings.Contains(h, "⎿  bang-output") })

	const expandedFooter = "ctrl+o/esc back to the live view"
	x.keys("C-o")
	x.waitFor("the expanded view", func(_, s string) bool { return strings.Contains(s, expandedFooter) })
	x.keys("C-o")
	x.waitFor("the live view", func(_, s string) bool {
		return !strings.Contains(s, expandedFooter) && strings.Contains(s, "Ask anything")
	})

	x.keys("tell me again", "Enter")
	x.waitFor("the answer streaming", func(_, s string) bool {
		_, after, ok := strings.Cut(s, "> tell me again")
		return ok && regexp.MustCompile(`(?m)^(∴|●) `).MatchString(after)
	})
	x.keys("Escape")
	x.waitText("Request was aborted")
	x.waitFor("idle", func(_, s string) bool { return !strings.Contains(s, "Working…") })

	h := x.history()
	for _, tc := range []struct {
		re   string
		want int
	}{
		{`(?m)^> show me a tool$`, 1},
		{`(?m)^∴ Thought for (\d+s|<1s)$`, 2}, // the first turn's, and the aborted one's
		{`(?m)^● Let me show you how a tool call streams`, 1},
		{`(?m)^● Bash\(`, 2}, // the loop, and the shell command
		{`(?m)^     step 5$`, 1},
		{`(?m)^  What ran$`, 1},
		{`多语言也没问题`, 1},
		{`to talk to a real model\.`, 1},
		{`(?m)^! echo bang-output$`, 1},
		{`(?m)^  ⎿  bang-output$`, 1},
		{`(?m)^> tell me again$`, 1},
		{`(?m)^✗ Request was aborted$`, 1},
		{`Allow Bash`, 0},
		{expandedFooter, 0},
	} {
		if got := len(regexp.MustCompile(tc.re).FindAllStringIndex(h, -1)); got != tc.want {
			t.Errorf("%s: %d times in the terminal, want %d", tc.re, got, tc.want)
		}
	}
	if t.Failed() {
		t.Fatalf("terminal history:\n%s", h)
	}

	x.keys("C-d")
	x.waitFor("the program to exit", func(_, _ string) bool {
		b, err := os.ReadFile(status)
		return err == nil && strings.HasSuffix(string(b), "\n")
	})
	if b, _ := os.ReadFile(status); strings.TrimSpace(string(b)) != "0" {
		t.Fatalf("the program exited with status %s", b)
	}
}

// TestTypeaheadWhileStarting types a message while sluice is still starting
// (an MCP server it waits for) and checks that the terminal did not echo it
// above the banner and that Enter sent it as a message once the UI was up.
func TestTypeaheadWhileStarting(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("SLUICE_REQUIRE_TMUX") != "" {
			t.Fatal("tmux is required (SLUICE_REQUIRE_TMUX is set) but not installed")
		}
		t.Skip("tmux is not installed")
	}
	if testing.Short() {
		t.Skip("runs the program")
	}
	bin := testbin.Sluice(t)
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	// The MCP server holds sluice's start until the test writes to the
	// fifo; opening it for writing returns once the server waits on it.
	fifo := filepath.Join(dir, "start")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(conf, fmt.Appendf(nil, `{"mcpServers":{"slow":{"command":"sh","args":["-c","read x < %s; exit 1"]}}}`, fifo), 0o600); err != nil {
		t.Fatal(err)
	}
	x := &tmux{t: t, sock: filepath.Join(dir, "tmux.sock")}
	status := filepath.Join(dir, "status")
	x.must("new-session", "-d", "-x", "100", "-y", "30", "-s", "t", "-c", work,
		"-e", "SLUICE_HOME="+filepath.Join(dir, "home"),
		fmt.Sprintf("%s --provider demo --demo-delay 1ms --mcp-config %s; echo $? > %s; sleep 600", bin, conf, status))
	t.Cleanup(func() { _, _ = x.run("kill-server") })

	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // sluice is starting its MCP server now
	if err != nil {
		t.Fatal(err)
	}
	x.keys("-l", "typed early")
	x.keys("Enter")
	if _, err := w.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	w.Close()

	x.waitText("✻ sluice")
	x.waitFor("the early message sent", func(h, _ string) bool { return strings.Contains(h, "> typed early") })
	before, _, _ := strings.Cut(x.history(), "✻ sluice")
	if strings.Contains(before, "typed early") {
		t.Errorf("the keys were echoed before the banner:\n%s", before)
	}
	x.waitText("Allow Bash(") // the demo's first turn runs a tool
	x.keys("1")
	x.waitFor("idle", func(_, s string) bool { return !strings.Contains(s, "Working…") })
	x.keys("C-d")
	x.waitFor("the program to exit", func(_, _ string) bool {
		b, err := os.ReadFile(status)
		return err == nil && strings.HasSuffix(string(b), "\n")
	})
	if b, _ := os.ReadFile(status); strings.TrimSpace(string(b)) != "0" {
		t.Fatalf("the program exited with status %s", b)
	}
}

// TestPseudoTerminalShrinkMidStream shrinks the terminal while an answer
// streams: the scrollback must then hold every line of the answer once,
// and no stale frame (a second input box, a "Working…" status) may be left
// in it.
func TestPseudoTerminalShrinkMidStream(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("SLUICE_REQUIRE_TMUX") != "" {
			t.Fatal("tmux is required (SLUICE_REQUIRE_TMUX is set) but not installed")
		}
		t.Skip("tmux is not installed")
	}
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	dir := t.TempDir()
	bin := testbin.Sluice(t)
	x := &tmux{t: t, sock: filepath.Join(dir, "tmux.sock")}
	x.must("new-session", "-d", "-x", "100", "-y", "30", "-s", "t", "-c", dir,
		"-e", "SLUICE_HOME="+filepath.Join(dir, "home"),
		fmt.Sprintf("%s --provider demo --demo-delay 30ms --permission-mode bypassPermissions; sleep 600", bin))
	t.Cleanup(func() { _, _ = x.run("kill-server") })

	x.waitText("✻ sluice")
	x.keys("show me a tool", "Enter")
	x.waitFor("the answer streaming", func(_, s string) bool { return strings.Contains(s, "What ran") })
	x.must("resize-window", "-t", "t", "-x", "64", "-y", "18")
	// The answer's last sentence wraps at 64 columns.
	last := regexp.MustCompile(`to\s+talk\s+to\s+a\s+real\s+model\.`)
	x.waitFor("the answer's end", func(h, _ string) bool { return last.MatchString(h) })
	x.waitFor("idle", func(_, s string) bool { return !strings.Contains(s, "Working…") })

	h := x.history()
	for _, tc := range []struct {
		re   string
		want int
	}{
		{`(?m)^> show me a tool$`, 1},
		{`The command finished`, 1},
		{`(?m)^  What ran$`, 1},
		{`(?m)^  What sluice did$`, 1},
		{`(?m)^  Things to try next$`, 1},
		{`多语言也没问题`, 1},
		{last.String(), 1},
		{`Working…`, 0},
		{`Ask anything`, 1}, // the input box on the screen, none in the scrollback
	} {
		if got := len(regexp.MustCompile(tc.re).FindAllStringIndex(h, -1)); got != tc.want {
			t.Errorf("%s: %d times in the terminal, want %d", tc.re, got, tc.want)
		}
	}
	if t.Failed() {
		t.Fatalf("terminal history:\n%s", h)
	}
}
