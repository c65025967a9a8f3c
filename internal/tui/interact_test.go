package tui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/sluicehq/sluice/protocol"
)

// TestExpandedViewIsAStillSnapshot: Ctrl+O mid-stream shows a snapshot
// that no frame changes — deltas, tool output, a new message, timer ticks
// — while everything keeps being applied; going back resumes live from
// the current state, prints what finished meanwhile, and shows nothing
// twice.
func TestExpandedViewIsAStillSnapshot(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 80, 30)
	start := h.clock.Now().UnixMilli()
	first, second := words(0, 10), words(100, 10)
	h.ev(runState(protocol.RunRunning), userMsg("u1", "go"), asstMsg("a1"),
		thinkDelta("a1", 0, "pondering zqthnk ", start),
		toolStart("a1", 1, "t1", "Bash"), toolParams("a1", 1, "t1", "Bash", `{"command":"make"}`))
	for _, c := range chunks(strings.Join(first[:5], " ")+" ", 6) {
		h.ev(textDelta("a1", 2, c))
	}
	h.key("ctrl+o")
	snap := h.current()
	if !snap.alt || !strings.Contains(snap.view, "Expanded view") {
		t.Fatalf("ctrl+o did not open the expanded view:\n%s", snap.view)
	}
	if !strings.Contains(snap.view, `"command": "make"`) {
		t.Fatalf("the expanded view lacks the full parameters:\n%s", snap.view)
	}
	h.checks = append(h.checks, func(f frame) {
		if f.alt && f.view != snap.view {
			t.Fatalf("frame %d: the expanded view changed:\n%s\n--- was:\n%s", f.n, f.view, snap.view)
		}
	})
	for _, c := range chunks(strings.Join(first[5:], " ")+" ", 6) {
		h.ev(textDelta("a1", 2, c))
	}
	h.tick(3 * time.Second)
	h.ev(thinkDelta("a1", 0, "still ", 0), thinkEnd("a1", 0, start+3000),
		toolRunning("a1", 1, "t1", "Bash", `{"command":"make"}`, "make", "zqoutp\n", "zqoutp"),
		toolEnd("a1", 1, "t1", "Bash", `{"command":"make"}`, "zqoutp\n", "zqoutp", true, ""),
		textEnd("a1", 2), turnEnd("a1", "tool_use", 1, 1), asstMsg("a2"))
	for _, c := range chunks(strings.Join(second[:5], " ")+" ", 6) {
		h.ev(textDelta("a2", 0, c))
	}
	if len(h.scroll) != len(strings.Split(snap.scroll, "\n")) {
		t.Fatal("something was printed on the alternate screen")
	}
	h.autoRelease = false
	h.key("ctrl+o")
	if h.current().alt {
		t.Fatal("ctrl+o did not close the expanded view")
	}
	// Printing waits until the main screen is back on the terminal; what
	// waits is shown in the live area meanwhile.
	if !h.m.holdPrints || len(h.scroll) != len(strings.Split(snap.scroll, "\n")) {
		t.Fatal("printed before the main screen was back")
	}
	for _, w := range first {
		if f := h.current(); strings.Count(f.view, w) != 1 {
			t.Fatalf("%q waits to be printed but the live area lacks it:\n%s", w, f.view)
		}
	}
	h.autoRelease = true
	h.send(releaseMsg{hold: h.m.holds})
	back := h.current()
	// What finished meanwhile is printed now; the live area resumes from
	// the current state.
	for _, w := range first {
		if strings.Count(back.scroll, w) != 1 {
			t.Fatalf("%q not printed once on return:\n%s", w, back.screen)
		}
	}
	for _, w := range second[:5] {
		if !strings.Contains(back.view, w) {
			t.Fatalf("%q streamed meanwhile but the live area lacks it:\n%s", w, back.view)
		}
	}
	for _, c := range chunks(strings.Join(second[5:], " ")+" ", 6) {
		h.ev(textDelta("a2", 0, c))
	}
	h.ev(textEnd("a2", 0), turnEnd("a2", "end_turn", 1, 1), runState(protocol.RunIdle))
	h.requireOnceInScrollback(append(first, second...))
}

func TestExpandedViewScrolls(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 60, 10)
	h.ev(runState(protocol.RunRunning), userMsg("u1", "go"), asstMsg("a1"),
		textDelta("a1", 0, strings.Join(words(0, 80), " ")))
	h.key("ctrl+o")
	bottom := h.current().view
	h.key("pgup")
	if h.current().view == bottom {
		t.Fatal("pgup did not scroll")
	}
	h.key("G")
	if h.current().view != bottom {
		t.Fatal("G did not go back to the end")
	}
	h.key("esc")
	if h.current().alt {
		t.Fatal("esc did not leave the expanded view")
	}
}

// TestInputAndQueue: multi-line input, history, messages sent while the
// agent works (sent at once, shown queued from the view state until the
// session sends them), and Esc aborting with the dropped work back in the
// prompt.
func TestInputAndQueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 80, 30)
	h.typeText("first line")
	h.key("alt+enter")
	h.typeText("second line\\")
	h.key("enter") // a trailing backslash continues the message
	h.typeText("third")
	if got := h.m.input.Value(); got != "first line\nsecond line\nthird" {
		t.Fatalf("input = %q", got)
	}
	h.key("enter")
	if !h.m.busy() || len(h.m.sent) != 1 || !slices.Contains(h.b.Calls(), "Run first line\nsecond line\nthird") {
		t.Fatalf("the message did not go to the session (sent %d): %q", len(h.m.sent), h.b.Calls())
	}
	h.ev(runState(protocol.RunRunning), userMsg("u1", "first line\nsecond line\nthird"), asstMsg("a1"))
	// Typed while the agent works: sent to the session at once (which
	// steers a message into the run), shown queued until it is sent.
	h.typeText("next one")
	h.key("enter")
	h.typeText("!ls")
	h.key("enter")
	if calls := h.b.Calls(); !slices.Contains(calls, "Run next one") || !slices.Contains(calls, "Bang ls") {
		t.Fatalf("work typed mid-run did not go to the session: %q", calls)
	}
	h.ev(protocol.QueueChanged{Queued: []protocol.QueuedWork{{MessageID: "u2", Kind: protocol.QueueMessage, Text: "next one"}, {MessageID: "u3", Kind: protocol.QueueBang, Text: "ls"}}})
	if v := h.current().view; !strings.Contains(v, "queued: next one") || !strings.Contains(v, "queued: !ls") {
		t.Fatalf("the queue is not shown:\n%s", v)
	}
	// Esc interrupts: the agent is asked to abort, the partial answer
	// stays, the dropped work returns to the prompt.
	h.ev(textDelta("a1", 0, "partial zqpart"))
	h.key("esc")
	if !slices.Contains(h.b.Calls(), "Abort") {
		t.Fatalf("esc did not abort: %v", h.b.Calls())
	}
	if got := h.m.input.Value(); got != "next one\n!ls" {
		t.Fatalf("queued messages not restored to the prompt: %q", got)
	}
	h.ev(protocol.QueueChanged{})
	if v := h.current().view; strings.Contains(v, "queued:") {
		t.Fatalf("the emptied queue is still shown:\n%s", v)
	}
	h.ev(textEnd("a1", 0), protocol.ErrorBlockAdded{MessageID: "a1", BlockIndex: 1, Error: "Request was aborted"},
		runState(protocol.RunIdle))
	h.finish(jobMessage, nil)
	s := h.current().scroll
	if !strings.Contains(s, "partial zqpart") || !strings.Contains(s, "Request was aborted") {
		t.Fatalf("the partial answer is not kept:\n%s", s)
	}
	// History: up recalls, down returns to the draft.
	h.m.input.Reset()
	h.typeText("draft")
	h.key("up")
	if got := h.m.input.Value(); got != "!ls" {
		t.Fatalf("up recalled %q", got)
	}
	h.key("up")
	if got := h.m.input.Value(); got != "next one" {
		t.Fatalf("up twice recalled %q", got)
	}
	h.key("down", "down")
	if got := h.m.input.Value(); got != "draft" {
		t.Fatalf("down did not return to the draft: %q", got)
	}
}

// TestWorkGoesInOrder: work typed while the agent runs goes to the session
// at once, in the order typed; the UI is busy until all of it has ended.
func TestWorkGoesInOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 80, 30)
	h.ev(runState(protocol.RunRunning))
	h.m.submit("one")
	h.m.submit("!pwd")
	h.m.submit("/compact")
	if calls := h.b.Calls(); !slices.Equal(calls, []string{"Run one", "Bang pwd", "Compact"}) {
		t.Fatalf("calls %q", calls)
	}
	h.ev(runState(protocol.RunIdle))
	h.finish(jobMessage, nil)
	h.finish(jobBang, nil)
	if len(h.m.sent) != 1 || !h.m.busy() {
		t.Fatalf("sent %d, busy %v: the compaction has not ended", len(h.m.sent), h.m.busy())
	}
	h.finish(jobCompact, errNothing)
	if !strings.Contains(h.current().view, "compact: nothing to compact") {
		t.Fatalf("compact's failure not shown:\n%s", h.current().view)
	}
	if h.m.busy() {
		t.Fatal("still busy with nothing running or sent")
	}
}

type errString string

func (e errString) Error() string { return string(e) }

const errNothing = errString("nothing to compact yet")

// TestPermissionPrompt: a request shows inline in place of the prompt; the
// answer goes to the session; a request answered elsewhere goes away.
func TestPermissionPrompt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 80, 30)
	h.ev(runState(protocol.RunRunning), userMsg("u1", "go"), asstMsg("a1"),
		toolStart("a1", 0, "t1", "Bash"),
		protocol.PermissionRequest{RequestID: "r1", MessageID: "a1", ToolID: "t1", Name: "Bash", Parameters: `{"command":"rm x"}`, CompactParams: "rm x", Reason: "runs a command"},
		protocol.PermissionRequest{RequestID: "r2", MessageID: "a1", ToolID: "t2", Name: "Write", Parameters: `{}`, CompactParams: "a.txt"})
	v := h.current().view
	if !strings.Contains(v, "Allow Bash(rm x)?") || !strings.Contains(v, "don't ask again") {
		t.Fatalf("no permission prompt:\n%s", v)
	}
	h.typeText("x") // not an answer: ignored, not typed
	if h.m.input.Value() != "" {
		t.Fatal("a key meant for the prompt went to the input")
	}
	h.key("down", "enter")
	if !slices.Contains(h.b.Calls(), "AnswerPermission r1 allow_always") {
		t.Fatalf("calls: %v", h.b.Calls())
	}
	if !strings.Contains(h.current().view, "Allow Write(a.txt)?") {
		t.Fatalf("the next request is not shown:\n%s", h.current().view)
	}
	h.ev(protocol.PermissionResolved{RequestID: "r1", Decision: "allow_always"},
		protocol.PermissionResolved{RequestID: "r2", Decision: "deny"})
	if strings.Contains(h.current().view, "Allow ") {
		t.Fatalf("a request answered elsewhere is still shown:\n%s", h.current().view)
	}
}

func TestCommands(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 80, 30)
	h.ev(userMsg("u1", "first question"), asstMsg("a1"), textDelta("a1", 0, "x"), textEnd("a1", 0),
		turnEnd("a1", "end_turn", 1, 1), userMsg("u2", "second question"))

	h.m.submit("/help")
	h.send(nopMsg{})
	if !strings.Contains(h.current().scroll, "/rewind") {
		t.Fatalf("/help printed nothing useful:\n%s", h.current().scroll)
	}

	h.m.submit("/memory")
	h.send(nopMsg{})
	if !strings.Contains(h.current().scroll, "/work/AGENTS.md (2 lines)") {
		t.Fatalf("/memory did not list the memory file:\n%s", h.current().scroll)
	}

	cmd := h.m.submit("/btw what does add return?")
	h.send(cmd())
	if sc := h.current().scroll; !strings.Contains(sc, "btw: what does add return?") || !strings.Contains(sc, "It returns the sum.") {
		t.Fatalf("/btw did not show the question and answer:\n%s", sc)
	}

	h.m.submit("/model other-model")
	h.send(nopMsg{})
	if h.b.Model() != "other-model" || !strings.Contains(h.current().view, "other-model") {
		t.Fatalf("/model NAME: model %q, view:\n%s", h.b.Model(), h.current().view)
	}
	h.m.opts.Models = []string{"m1", "m2"}
	h.m.submit("/model")
	h.key("down", "enter")
	if h.b.Model() != "m2" {
		t.Fatalf("/model picker chose %q", h.b.Model())
	}

	// /rewind lists user messages, newest first; the pick is rewound to
	// and its text comes back into the prompt.
	h.m.submit("/rewind")
	h.send(nopMsg{})
	if v := h.current().view; !strings.Contains(v, "second question") || !strings.Contains(v, "first question") {
		t.Fatalf("rewind picker:\n%s", v)
	}
	h.key("down")
	h.m.key(keyMsg("enter"))()
	h.send(rewoundMsg{gen: h.m.gen, text: "first question"})
	if !slices.Contains(h.b.Calls(), "Rewind u1") || h.m.input.Value() != "first question" {
		t.Fatalf("calls %v, input %q", h.b.Calls(), h.m.input.Value())
	}

	h.m.input.Reset()
	h.m.submit("/nope")
	h.send(nopMsg{})
	if !strings.Contains(h.current().view, "unknown command /nope") {
		t.Fatalf("unknown command not reported:\n%s", h.current().view)
	}
	if h.m.submit("/resume") != nil || !strings.Contains(h.m.status, "not available") {
		t.Fatalf("/resume without a store: %q", h.m.status)
	}
}

// TestCtrlC: clears the prompt, interrupts work, quits on the second
// press when idle.
func TestCtrlC(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 80, 30)
	h.typeText("abc")
	h.key("ctrl+c")
	if h.m.input.Value() != "" {
		t.Fatal("ctrl+c did not clear the prompt")
	}
	if h.m.key(keyMsg("ctrl+c")) != nil {
		t.Fatal("the first ctrl+c on an empty prompt quit")
	}
	if cmd := h.m.key(keyMsg("ctrl+c")); cmd == nil {
		t.Fatal("the second ctrl+c did not quit")
	}
}

// TestStatusAndNotices: the status line shows the model, tokens and cost;
// a stall or a retry shows a notice until the stream moves again.
func TestStatusAndNotices(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 100, 30)
	h.m.submit("hi")
	h.send(nopMsg{})
	h.ev(runState(protocol.RunRunning), userMsg("u1", "hi"), asstMsg("a1"), textDelta("a1", 0, "partial"))
	h.ev(protocol.StreamNotice{Kind: protocol.NoticeStalled, IdleMs: 31_000})
	if v := h.current().view; !strings.Contains(v, "stalled: nothing received for 31s") {
		t.Fatalf("no stall notice:\n%s", v)
	}
	h.ev(textDelta("a1", 0, " more"))
	if v := h.current().view; strings.Contains(v, "stalled") {
		t.Fatalf("the stall notice outlived the stream's recovery:\n%s", v)
	}
	h.ev(textEnd("a1", 0), turnEnd("a1", "end_turn", 12_345, 678), runState(protocol.RunIdle))
	h.finishCost(jobMessage, 0.0421)
	v := h.current().view
	for _, want := range []string{"test-model", "↑12.3k ↓678 tokens", "$0.0421"} {
		if !strings.Contains(v, want) {
			t.Fatalf("status line lacks %q:\n%s", want, v)
		}
	}
}

// TestExpandWaitsForPrint: ctrl+o pressed while a print is on its way
// opens the expanded view only once the print is through, so that nothing
// is printed onto the alternate screen.
func TestExpandWaitsForPrint(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 80, 30)
	h.m.Update(eventsMsg{gen: h.m.gen, evs: []protocol.Event{h.publish(userMsg("u1", "question"))}})
	h.m.Update(releaseMsg{hold: h.m.holds})
	if !h.m.printing {
		t.Fatal("the user message is not being printed")
	}
	h.m.Update(keyMsg("ctrl+o"))
	if h.m.expanded != nil {
		t.Fatal("the expanded view opened while a print was on its way")
	}
	h.m.Update(printedMsg{})
	if h.m.expanded == nil {
		t.Fatal("the expanded view did not open after the print")
	}
}

// TestResyncRefreshesPermissions: the prompts are the list's pending
// requests, so a snapshot pulled after a gap brings a request the UI
// missed and drops one resolved meanwhile, and the run state comes with
// it.
func TestResyncRefreshesPermissions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 80, 30)
	h.ev(runState(protocol.RunRunning), userMsg("u1", "go"), asstMsg("a1"),
		toolStart("a1", 0, "t1", "Bash"),
		protocol.PermissionRequest{RequestID: "r1", MessageID: "a1", ToolID: "t1", Name: "Bash", Parameters: `{"command":"rm x"}`, CompactParams: "rm x"})
	if !strings.Contains(h.current().view, "Allow Bash(rm x)?") {
		t.Fatalf("no permission prompt:\n%s", h.current().view)
	}
	// Lost on the way: r1 answered elsewhere, a second tool asking, then
	// the run ends while that one is still pending.
	h.publish(protocol.PermissionResolved{RequestID: "r1", Decision: protocol.DecisionAllow})
	h.publish(toolStart("a1", 1, "t2", "Write"))
	h.publish(protocol.PermissionRequest{RequestID: "r2", MessageID: "a1", BlockIndex: 1, ToolID: "t2", Name: "Write", Parameters: `{}`, CompactParams: "a.txt"})
	before := h.b.subs
	h.ev(toolStart("a1", 2, "t3", "Read")) // reveals the gap
	if h.b.subs != before+1 {
		t.Fatal("no snapshot was pulled after the gap")
	}
	v := h.current().view
	if strings.Contains(v, "Allow Bash(rm x)?") || !strings.Contains(v, "Allow Write(a.txt)?") {
		t.Fatalf("after the resync the prompts are not the session's:\n%s", v)
	}
	h.key("enter")
	if !slices.Contains(h.b.Calls(), "AnswerPermission r2 allow") {
		t.Fatalf("calls: %v", h.b.Calls())
	}
	if strings.Contains(h.current().view, "Allow ") {
		t.Fatalf("an answered prompt is still shown:\n%s", h.current().view)
	}
	// The answer's resolution is lost too, and the run ends: the next
	// resync finds nothing pending and the session idle.
	h.publish(protocol.PermissionResolved{RequestID: "r2", Decision: protocol.DecisionAllow})
	h.publish(runState(protocol.RunIdle))
	h.ev(userMsg("u2", "next"))
	if len(h.m.answered) != 0 || h.m.list.Running() || h.m.busy() {
		t.Fatalf("after the second resync: answered %v, running %v", h.m.answered, h.m.list.Running())
	}
}

// TestCollapsedToolOutputCountsHiddenLines: a tool's collapsed output is
// its last lines, after a line that says how many more there are.
func TestCollapsedToolOutputCountsHiddenLines(t *testing.T) {
	t.Parallel()
	yes := true
	tests := []struct {
		name, result, short string
		stage               protocol.Stage
		want                string // "" for no such line
	}{
		{"ended, 12 lines, 5 shown", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "8\n9\n10\n11\n12", protocol.StageEnd, "… +7 lines (ctrl+o to expand)"},
		{"running, 6 lines so far", "a\nb\nc\nd\ne\nf\n", "b\nc\nd\ne\nf", protocol.StageRunning, "… +1 line (ctrl+o to expand)"},
		{"everything shown", "a\nb\n", "a\nb", protocol.StageEnd, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := protocol.Block{Type: protocol.BlockTool, Name: "Bash", CompactParams: "seq 12", Stage: tt.stage,
				Result: tt.result, ShortResult: tt.short}
			if tt.stage == protocol.StageEnd {
				b.Success = &yes
			}
			got := ansi.Strip(strings.Join(toolLines(b, 80), "\n"))
			if tt.want == "" {
				if strings.Contains(got, "+") {
					t.Fatalf("a hidden-lines hint where none is hidden:\n%s", got)
				}
				return
			}
			hint := strings.Index(got, tt.want)
			if hint < 0 || hint > strings.LastIndex(got, tt.short[strings.LastIndexByte(tt.short, '\n')+1:]) {
				t.Fatalf("want %q before the short result:\n%s", tt.want, got)
			}
		})
	}
}

// TestTasksListed: the background tasks running are listed under the
// transcript from the view state, also when nothing runs, until they end.
func TestTasksListed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 80, 30)
	h.ev(protocol.TaskUpdated{Task: protocol.Task{TaskID: "bash_1", Description: "npm run dev\n--port 3000", StartedAt: 1}, State: protocol.TaskRunning},
		protocol.TaskUpdated{Task: protocol.Task{TaskID: "bash_2", Description: "go test ./...", StartedAt: 2}, State: protocol.TaskRunning},
		protocol.TaskUpdated{Task: protocol.Task{TaskID: "bash_1", Description: "npm run dev\n--port 3000", StartedAt: 1, ShortResult: "compiling\nready on :3000\n"}, State: protocol.TaskRunning})
	v := h.current().view
	if !strings.Contains(v, "bash_1 running: npm run dev · ready on :3000") || !strings.Contains(v, "bash_2 running: go test ./...") || strings.Contains(v, "--port") || strings.Contains(v, "compiling") {
		t.Fatalf("the running tasks are not listed:\n%s", v)
	}
	h.ev(protocol.TaskUpdated{Task: protocol.Task{TaskID: "bash_1"}, State: protocol.TaskEnded, Status: "killed"})
	if v := h.current().view; strings.Contains(v, "bash_1") || !strings.Contains(v, "bash_2 running") {
		t.Fatalf("an ended task is still listed:\n%s", v)
	}
}

// TestPlanShown: a TodoWrite call shows the plan, its checklist, in the
// transcript.
func TestPlanShown(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 80, 30)
	params := `{"todos":[{"content":"Read the code","status":"completed","activeForm":"Reading"},{"content":"Fix the bug","status":"in_progress","activeForm":"Fixing"}]}`
	h.ev(runState(protocol.RunRunning), userMsg("u1", "plan it"), asstMsg("a1"), toolStart("a1", 0, "p1", "TodoWrite"),
		toolEnd("a1", 0, "p1", "TodoWrite", params, "The todo list is updated.", "☒ Read the code\n◼ Fix the bug", true, ""),
		turnEnd("a1", "tool_use", 1, 1), runState(protocol.RunIdle))
	f := h.current()
	if s := f.scroll + f.view; !strings.Contains(s, "☒ Read the code") || !strings.Contains(s, "◼ Fix the bug") {
		t.Fatalf("the plan is not shown:\n%s\n%s", f.scroll, f.view)
	}
}
