package tui

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/session"
)

// fakeBackend stands for a session in the frame tests: it records what the
// UI asks, and its state is the harness's "truth" list (what the agent
// would hold), so that a snapshot pulled mid-stream is consistent with the
// events.
type fakeBackend struct {
	mu    sync.Mutex
	calls []string
	model string
	truth *protocol.List
	subs  int
	works []*fakeWork
}

func (f *fakeBackend) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeBackend) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeBackend) ID() string      { return "session-1" }
func (f *fakeBackend) WorkDir() string { return "/work" }
func (f *fakeBackend) Model() string   { f.mu.Lock(); defer f.mu.Unlock(); return f.model }
func (f *fakeBackend) SetModel(_ context.Context, n string) error {
	f.record("SetModel %s", n)
	f.mu.Lock()
	f.model = n
	f.mu.Unlock()
	return nil
}
func (f *fakeBackend) PermissionMode() protocol.PermissionMode { return protocol.ModeDefault }
func (f *fakeBackend) SetPermissionMode(_ context.Context, m protocol.PermissionMode) error {
	f.record("SetPermissionMode %s", m)
	return nil
}
func (f *fakeBackend) Tools() []string               { return nil }
func (f *fakeBackend) Subagents() []session.Subagent { return nil }
func (f *fakeBackend) Interrupt(_ context.Context, reason string) error {
	f.record("Interrupt")
	return nil
}
func (f *fakeBackend) SetThinkingBudget(_ context.Context, n int) error {
	f.record("SetThinkingBudget %d", n)
	return nil
}
func (f *fakeBackend) Owner() string { return "" }
func (f *fakeBackend) Ask(_ context.Context, q string) (string, error) {
	f.record("Ask %s", q)
	return "It returns the sum.", nil
}
func (f *fakeBackend) Memory() []agent.MemoryFile {
	return []agent.MemoryFile{{Path: "/work/AGENTS.md", Content: "Rules.\nMore rules."}}
}
func (f *fakeBackend) Submit(ctx context.Context, text string, force bool) (string, error) {
	f.record("Submit %s %v", text, force)
	return "", nil
}
func (f *fakeBackend) SubmitMessage(ctx context.Context, text string, _ ...agent.Image) (string, session.Job, error) {
	f.record("Run %s", text)
	return "", f.newWork(), nil
}
func (f *fakeBackend) SubmitBang(ctx context.Context, c string) (session.Job, error) {
	f.record("Bang %s", c)
	return f.newWork(), nil
}
func (f *fakeBackend) SubmitCompact(ctx context.Context) (session.Job, error) {
	f.record("Compact")
	return f.newWork(), nil
}

// newWork is a piece of work that runs at once when nothing else is
// unfinished, and is queued otherwise (as the agent does).
func (f *fakeBackend) newWork() *fakeWork {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := &fakeWork{done: make(chan struct{})}
	for _, o := range f.works {
		select {
		case <-o.done:
		default:
			w.queued = true
		}
	}
	if !w.queued {
		w.res.MessageID = "ran"
	}
	f.works = append(f.works, w)
	return w
}

// fakeWork is a fakeBackend's job: it ends when the test sends its
// runDoneMsg, or, queued, when Abort drops it.
type fakeWork struct {
	done   chan struct{}
	queued bool
	res    session.JobResult
}

func (w *fakeWork) Done() <-chan struct{} { return w.done }
func (w *fakeWork) Wait(ctx context.Context) (session.JobResult, error) {
	select {
	case <-w.done:
		return w.res, nil
	case <-ctx.Done():
		return w.res, ctx.Err()
	}
}
func (f *fakeBackend) Rewind(ctx context.Context, id string) (int64, error) {
	f.record("Rewind %s", id)
	return f.truth.Seq(), nil
}
func (f *fakeBackend) Clear(ctx context.Context) (int64, error) {
	f.record("Clear")
	return f.truth.Seq(), nil
}
func (f *fakeBackend) Abort(_ context.Context, reason string) error {
	f.record("Abort")
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.works {
		select {
		case <-w.done:
		default:
			if w.queued {
				close(w.done)
			}
		}
	}
	return nil
}
func (f *fakeBackend) AnswerPermission(_ context.Context, id string, d protocol.Decision) error {
	f.record("AnswerPermission %s %s", id, d)
	return nil
}
func (f *fakeBackend) Close() error                { f.record("Close"); return nil }
func (f *fakeBackend) Messages() protocol.Snapshot { return f.truth.Snapshot() }
func (f *fakeBackend) Seq() int64                  { return f.truth.Seq() }
func (f *fakeBackend) Running() bool               { return f.truth.Snapshot().Running }
func (f *fakeBackend) SnapshotAndSubscribe() (protocol.Snapshot, session.Subscription) {
	f.mu.Lock()
	f.subs++
	f.mu.Unlock()
	return f.truth.Snapshot(), idleEvents{}
}
func (f *fakeBackend) SubscribeFrom(int64) (session.Subscription, error) {
	f.record("SubscribeFrom")
	return idleEvents{}, nil
}

// idleEvents is a subscription on which nothing arrives: the harness
// hands events to the model itself.
type idleEvents struct{}

func (idleEvents) Next(ctx context.Context) (protocol.Event, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (idleEvents) Pending() int { return 0 }
func (idleEvents) Close()       {}

// harness drives the UI model frame by frame and checks every frame. A frame
// is what the terminal shows after one message: the scrollback printed so
// far and the view (or, on the alternate screen, the view alone).
type harness struct {
	t      *testing.T
	m      *ui
	b      *fakeBackend
	clock  *modeltest.Clock
	truth  protocol.List // the agent's list: the events, all applied
	seq    int64
	scroll []string // printed lines
	acks   int      // prints waiting for their acknowledgement
	frames int
	// autoRelease ends holds on printing at once (their timers fire).
	autoRelease bool
	// slowPrints leaves prints unacknowledged (on their way to the
	// terminal) until ackPrints.
	slowPrints bool
	// checks run on every frame (the duplicate check is always on).
	checks []func(f frame)
}

type frame struct {
	n      int
	screen string // ANSI stripped
	view   string // ANSI stripped
	scroll string // ANSI stripped
	alt    bool
}

var t0 = time.UnixMilli(1_700_000_000_000)

func newHarness(t *testing.T, w, h int) *harness {
	t.Helper()
	hs := &harness{t: t, clock: modeltest.NewClock(t0), autoRelease: true}
	hs.b = &fakeBackend{model: "test-model", truth: &hs.truth}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	hs.m = newModel(ctx, Options{Width: w, Height: h, Style: "dark", Clock: hs.clock}, hs.b)
	hs.m.printer = func(s string) tea.Cmd {
		hs.scroll = append(hs.scroll, strings.Split(s, "\n")...)
		hs.acks++
		return nil
	}
	hs.m.reprinter = func(s string) tea.Cmd {
		// The terminal is cleared: the scrollback is what is printed now.
		hs.scroll = strings.Split(s, "\n")
		hs.acks++
		return nil
	}
	hs.m.Init()
	hs.check()
	hs.ack()
	return hs
}

// send delivers one message, then, as Bubble Tea and the timers would,
// the end of a hold on printing and the acknowledgement of a print,
// checking the frame after each.
func (h *harness) send(msg tea.Msg) {
	h.t.Helper()
	h.m.Update(msg)
	h.check()
	h.ack()
}

func (h *harness) ack() {
	h.t.Helper()
	for (h.acks > 0 && !h.slowPrints) || (h.m.holdPrints && h.autoRelease) {
		if h.acks > 0 && !h.slowPrints {
			h.acks--
			h.m.Update(printedMsg{})
		} else {
			h.m.Update(releaseMsg{hold: h.m.holds})
		}
		h.check()
	}
}

// ev publishes events as the agent would: each gets the next seq, is
// applied to the truth and delivered to the UI, one frame per event.
func (h *harness) ev(evs ...protocol.Event) {
	h.t.Helper()
	for _, e := range evs {
		h.send(eventsMsg{gen: h.m.gen, evs: []protocol.Event{h.publish(e)}})
	}
}

// burst delivers events in one batch (one frame).
func (h *harness) burst(evs ...protocol.Event) {
	h.t.Helper()
	out := make([]protocol.Event, len(evs))
	for i, e := range evs {
		out[i] = h.publish(e)
	}
	h.send(eventsMsg{gen: h.m.gen, evs: out})
}

// publish stamps and applies an event to the truth without delivering it.
func (h *harness) publish(e protocol.Event) protocol.Event {
	h.t.Helper()
	h.seq++
	e = protocol.WithHeader(e, protocol.Header{SessionID: "session-1", Seq: h.seq})
	if err := h.truth.Apply(e); err != nil {
		h.t.Fatalf("scripted event %d does not fit: %v", h.seq, err)
	}
	return e
}

func (h *harness) key(keys ...string) {
	h.t.Helper()
	for _, k := range keys {
		h.send(keyMsg(k))
	}
}

func (h *harness) typeText(s string) {
	h.t.Helper()
	for _, r := range s {
		h.send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

func keyMsg(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "alt+enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter, Mod: tea.ModAlt}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "ctrl+o":
		return tea.KeyPressMsg{Code: 'o', Mod: tea.ModCtrl}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	}
	r := []rune(s)
	if len(r) != 1 {
		panic("keyMsg: unknown key " + s)
	}
	return tea.KeyPressMsg{Code: r[0], Text: s}
}

// finish ends the oldest unfinished work of kind the UI sent, as the
// session would, and delivers its runDoneMsg.
func (h *harness) finish(kind jobKind, err error) { h.end(kind, 0, err) }

// finishCost is finish for a run that cost usd.
func (h *harness) finishCost(kind jobKind, usd float64) { h.end(kind, usd, nil) }

func (h *harness) end(kind jobKind, usd float64, err error) {
	h.t.Helper()
	for _, s := range h.m.sent {
		if s.kind != kind {
			continue
		}
		if fw, ok := s.w.(*fakeWork); ok {
			select {
			case <-fw.done:
			default:
				close(fw.done)
			}
		}
		h.send(runDoneMsg{gen: h.m.gen, kind: kind, w: s.w, cost: usd, err: err})
		return
	}
	h.t.Fatalf("no unfinished work of kind %d was sent", kind)
}

// tick moves the clock and delivers the timer's tick.
func (h *harness) tick(d time.Duration) {
	h.t.Helper()
	h.clock.Advance(d)
	h.send(tickMsg{})
}

func (h *harness) current() frame {
	v := h.m.View()
	view := ansi.Strip(v.Content)
	scroll := ansi.Strip(strings.Join(h.scroll, "\n"))
	f := frame{n: h.frames, view: view, scroll: scroll, alt: v.AltScreen}
	if v.AltScreen {
		f.screen = view
	} else {
		f.screen = scroll + "\n" + view
	}
	return f
}

// tokenRE matches the marker words the scripts are written with: each is
// unique, so a marker seen twice on one screen is content shown twice.
var tokenRE = regexp.MustCompile(`\bzq[a-z]{4}\b`)

func (h *harness) check() {
	h.t.Helper()
	h.frames++
	f := h.current()
	seen := map[string]int{}
	for _, tok := range tokenRE.FindAllString(f.screen, -1) {
		seen[tok]++
		if seen[tok] == 2 {
			h.t.Fatalf("frame %d shows %q twice:\n%s", f.n, tok, f.screen)
		}
	}
	for _, c := range h.checks {
		c(f)
	}
}

// words makes n unique marker words, starting from a per-script offset.
func words(from, n int) []string {
	out := make([]string, n)
	for i := range out {
		k := from + i
		out[i] = fmt.Sprintf("zq%c%c%c%c", 'a'+k/17576%26, 'a'+k/676%26, 'a'+k/26%26, 'a'+k%26)
	}
	return out
}

// chunks splits text into pieces of n bytes, cutting words: a typewriter.
func chunks(text string, n int) []string {
	var out []string
	for len(text) > n {
		out = append(out, text[:n])
		text = text[n:]
	}
	return append(out, text)
}

// Event builders.

func userMsg(id, text string) protocol.Event {
	return protocol.UserMessageAdded{Message: protocol.Message{ID: id, Role: protocol.RoleUser,
		Blocks: []protocol.Block{{Type: protocol.BlockText, Content: text}}}}
}

func asstMsg(id string) protocol.Event {
	return protocol.AssistantMessageAdded{Message: protocol.Message{ID: id, Role: protocol.RoleAssistant, Blocks: []protocol.Block{}}}
}

func textDelta(id string, bi int, chunk string) protocol.Event {
	return protocol.AssistantContentUpdated{MessageID: id, BlockIndex: bi, Chunk: chunk, Stage: protocol.StageStreaming}
}

func textEnd(id string, bi int) protocol.Event {
	return protocol.AssistantContentUpdated{MessageID: id, BlockIndex: bi, Stage: protocol.StageEnd}
}

func thinkDelta(id string, bi int, chunk string, startedAt int64) protocol.Event {
	return protocol.AssistantReasoningUpdated{MessageID: id, BlockIndex: bi, Chunk: chunk, Stage: protocol.StageStreaming, StartedAt: startedAt}
}

func thinkEnd(id string, bi int, endedAt int64) protocol.Event {
	return protocol.AssistantReasoningUpdated{MessageID: id, BlockIndex: bi, Stage: protocol.StageEnd, EndedAt: endedAt}
}

func turnEnd(id, reason string, in, out int) protocol.Event {
	return protocol.TurnEnded{MessageID: id, StopReason: reason, Usage: &protocol.Usage{InputTokens: in, OutputTokens: out}}
}

func runState(s protocol.RunState) protocol.Event { return protocol.RunStateChanged{State: s} }

func toolStart(id string, bi int, toolID, name string) protocol.Event {
	return protocol.ToolBlockUpdated{MessageID: id, BlockIndex: bi, ToolID: toolID, Name: name, Stage: protocol.StageStart}
}

func toolParams(id string, bi int, toolID, name, chunk string) protocol.Event {
	return protocol.ToolBlockUpdated{MessageID: id, BlockIndex: bi, ToolID: toolID, Name: name, Stage: protocol.StageStreaming, ParametersChunk: chunk}
}

func toolRunning(id string, bi int, toolID, name, params, compact, resultChunk, short string) protocol.Event {
	return protocol.ToolBlockUpdated{MessageID: id, BlockIndex: bi, ToolID: toolID, Name: name, Stage: protocol.StageRunning,
		Parameters: params, CompactParams: compact, ResultChunk: resultChunk, ShortResult: short}
}

func toolEnd(id string, bi int, toolID, name, params, result, short string, ok bool, errText string) protocol.Event {
	return protocol.ToolBlockUpdated{MessageID: id, BlockIndex: bi, ToolID: toolID, Name: name, Stage: protocol.StageEnd,
		Parameters: params, Result: &result, ShortResult: short, Success: &ok, Error: errText}
}

// countIn counts the marker words of ws in s.
func countIn(s string, ws []string) map[string]int {
	set := map[string]bool{}
	for _, w := range ws {
		set[w] = true
	}
	n := map[string]int{}
	for _, tok := range tokenRE.FindAllString(s, -1) {
		if set[tok] {
			n[tok]++
		}
	}
	return n
}

// requireOnceInScrollback asserts that each word is printed exactly once
// and that none is left in the live area.
func (h *harness) requireOnceInScrollback(ws []string) {
	h.t.Helper()
	f := h.current()
	got := countIn(f.scroll, ws)
	for _, w := range ws {
		if got[w] != 1 {
			h.t.Fatalf("%q printed %d times, want once; scrollback:\n%s", w, got[w], f.scroll)
		}
	}
	if live := countIn(f.view, ws); len(live) > 0 {
		h.t.Fatalf("finished words still in the live area: %v\n%s", live, f.view)
	}
}

// nopMsg is a message the model ignores: it renders a frame.
type nopMsg struct{}
