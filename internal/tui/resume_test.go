package tui

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/provider/demo"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/store"
)

// TestResume: /resume lists the stored sessions, opens the one picked,
// prints its messages with their reasoning durations, and closes the
// session it leaves.
func TestResume(t *testing.T) {
	st, wd := store.NewJSONL(t.TempDir()), t.TempDir()
	opts := agent.Options{Provider: demo.New(demo.Config{Delay: -1}), Store: st, WorkDir: wd, Model: "demo",
		PermissionMode: protocol.ModeBypassPermissions}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	old, err := agent.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Run(ctx, "the stored question"); err != nil {
		t.Fatal(err)
	}
	old.Close()

	cur, err := agent.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	var printed []string
	m := newModel(ctx, Options{
		Width: 100, Height: 40, Style: "dark", Clock: modeltest.NewClock(t0),
		Open: func(id string) (*agent.Session, error) { return agent.Open(opts, id) },
		List: func() ([]agent.SessionInfo, error) { return agent.ListSessions(context.Background(), st, wd) },
	}, newAgentBackend(cur))
	m.printer = func(s string) tea.Cmd {
		printed = append(printed, ansi.Strip(s))
		return func() tea.Msg { return printedMsg{} }
	}
	m.Update(m.command("/resume")())
	if m.picker == nil || !strings.Contains(ansi.Strip(m.View().Content), "the stored question") {
		t.Fatalf("no session to pick:\n%s", ansi.Strip(m.View().Content))
	}
	gone := cur.Subscribe(agent.SubscribeOptions{})
	_, cmd := m.Update(m.key(keyMsg("enter"))())
	run(cmd)
	defer m.sess.Close()
	if m.sess.ID() == cur.ID() {
		t.Fatal("the UI did not switch sessions")
	}
	for range 2 { // the hold after the switch, then the print's
		m.Update(releaseMsg{hold: m.holds})
		m.Update(printedMsg{})
	}
	out := strings.Join(printed, "\n")
	for _, want := range []string{"resumed session", "> the stored question", "∴ Thought for", "What ran"} {
		if !strings.Contains(out, want) {
			t.Errorf("the resumed session's print lacks %q:\n%s", want, out)
		}
	}
	// The session left is closed: its subscription ends.
	wait, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	if _, err := gone.Next(wait); !errors.Is(err, agent.ErrClosed) {
		t.Fatalf("the session left is still open: %v", err)
	}
}

// run executes a command and those of the batches it returns, each in its
// own goroutine, as Bubble Tea does, dropping their messages.
func run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() {
		if b, ok := cmd().(tea.BatchMsg); ok {
			for _, c := range b {
				run(c)
			}
		}
	}()
}
