package tui

import (
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sluicehq/sluice/protocol"
)

// TestTypewriterAnswerThenScrollback: an answer shows delta by delta in the
// live area, is printed once when its turn ends, and leaves the live area.
func TestTypewriterAnswerThenScrollback(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 80, 40)
	ws := words(0, 40)
	text := strings.Join(ws, " ")

	h.ev(runState(protocol.RunRunning), userMsg("u1", "question zqzzzz"), asstMsg("a1"))
	if !strings.Contains(h.current().scroll, "zqzzzz") {
		t.Fatalf("the user message is final at once and should be printed:\n%s", h.current().screen)
	}
	shown := ""
	for _, c := range chunks(text, 7) {
		h.ev(textDelta("a1", 0, c))
		shown += c
		f := h.current()
		// Every complete word streamed so far is on screen, in the live
		// area, and nothing of this answer is printed yet: its one
		// paragraph can still change.
		for _, w := range tokenRE.FindAllString(shown, -1) {
			if !strings.Contains(f.view, w) {
				t.Fatalf("frame %d: %q streamed but not shown:\n%s", f.n, w, f.view)
			}
		}
		if n := countIn(f.scroll, ws); len(n) > 0 {
			t.Fatalf("frame %d: a streaming answer was printed: %v", f.n, n)
		}
	}
	// An ended block is printed at once.
	h.ev(textEnd("a1", 0))
	h.requireOnceInScrollback(ws)
	h.ev(turnEnd("a1", "end_turn", 100, 20))
	h.requireOnceInScrollback(ws)
	h.ev(runState(protocol.RunIdle))
	h.requireOnceInScrollback(ws)
	if got := h.current().view; !strings.Contains(got, "↑100 ↓20 tokens") {
		t.Fatalf("status line lacks the tokens:\n%s", got)
	}
}

// TestInterleavedBlocks covers T→R→T and R→T→R runs in one message with a
// tool's output arriving between them: each run is its own block, and no
// frame shows anything twice; at the end everything is printed once, in
// order, but reasoning, which is printed folded to its header.
func TestInterleavedBlocks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		kinds string // t = text, r = reasoning, b = bash tool output between
	}{
		{"T-R-T", "trt"},
		{"R-T-R", "rtr"},
		{"T-tool-R-T", "tbrt"},
		{"R-T-tool-R-T", "rtbrt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, 80, 60)
			h.ev(runState(protocol.RunRunning), userMsg("u1", "go"), asstMsg("a1"))
			var all, reasoning []string
			start := h.clock.Now().UnixMilli()
			for bi, k := range tc.kinds {
				ws := words(100*bi, 12)
				all = append(all, ws...)
				switch k {
				case 't':
					for _, c := range chunks(strings.Join(ws, " ")+" ", 9) {
						h.ev(textDelta("a1", bi, c))
					}
					h.ev(textEnd("a1", bi))
				case 'r':
					all = all[:len(all)-len(ws)]
					reasoning = append(reasoning, ws...)
					for i, c := range chunks(strings.Join(ws, " ")+" ", 9) {
						st := int64(0)
						if i == 0 {
							st = start
						}
						h.ev(thinkDelta("a1", bi, c, st))
					}
					h.ev(thinkEnd("a1", bi, start+3000))
				case 'b':
					h.ev(toolStart("a1", bi, "t1", "Bash"),
						toolParams("a1", bi, "t1", "Bash", `{"command":"echo"}`),
						toolRunning("a1", bi, "t1", "Bash", `{"command":"echo"}`, "echo", "", ""))
					out := ""
					for _, w := range ws {
						out += w + "\n"
						h.ev(toolRunning("a1", bi, "t1", "Bash", `{"command":"echo"}`, "echo", w+"\n", lastLines(out, 5)))
					}
					h.ev(toolEnd("a1", bi, "t1", "Bash", `{"command":"echo"}`, out, lastLines(out, 5), true, ""))
					// Only the short result is shown: the earlier lines
					// of the output are in the expanded view only.
					all = append(all[:len(all)-len(ws)], ws[len(ws)-5:]...)
				}
			}
			h.ev(turnEnd("a1", "end_turn", 10, 10), runState(protocol.RunIdle))
			h.requireOnceInScrollback(all)
			if n := countIn(h.current().screen, reasoning); len(n) > 0 {
				t.Fatalf("folded reasoning shown: %v\n%s", n, h.current().screen)
			}
			if n := strings.Count(h.current().scroll, "∴ Thought for 3s"); n != strings.Count(tc.kinds, "r") {
				t.Fatalf("%d folded reasoning headers:\n%s", n, h.current().scroll)
			}
			// The blocks are printed in order.
			scroll := h.current().scroll
			last := -1
			for _, w := range all {
				i := strings.Index(scroll, w)
				if i < last {
					t.Fatalf("%q printed out of order:\n%s", w, scroll)
				}
				last = i
			}
		})
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestDiscardedAttempt: a failed attempt streams a paragraph (printed as
// it completes), part of another and starts a tool, then is discarded and
// retried. What was printed stays under a divider, the rest leaves the
// screen, and the retry prints below; no frame shows a word twice.
func TestDiscardedAttempt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 80, 40)
	printed, tail, retry := words(0, 10), words(10, 10), words(20, 20)
	h.ev(runState(protocol.RunRunning), userMsg("u1", "go"), asstMsg("a1"))
	for _, c := range chunks(strings.Join(printed, " ")+"\n\n"+strings.Join(tail, " "), 5) {
		h.ev(textDelta("a1", 0, c))
	}
	h.ev(toolStart("a1", 1, "t1", "Read"), toolParams("a1", 1, "t1", "Read", `{"file_path":`))
	h.ev(protocol.StreamNotice{Kind: protocol.NoticeRetrying, Attempt: 1, DelayMs: 500, Cause: "overloaded_error"})
	if v := h.current().view; !strings.Contains(v, "Retrying (attempt 1") {
		t.Fatalf("no retry notice:\n%s", v)
	}
	h.ev(protocol.AssistantMessageDiscarded{MessageID: "a1", Reason: "overloaded"})
	// The first paragraph was printed as it completed: it stays, under a
	// divider. What was not printed is gone.
	f := h.current()
	if n := countIn(f.screen, tail); len(n) > 0 || strings.Contains(f.screen, "Read") {
		t.Fatalf("the discarded attempt's live part is still on screen: %v\n%s", n, f.screen)
	}
	if !strings.Contains(f.scroll, "── the answer above was cut off (overloaded); it starts again below ──") {
		t.Fatalf("no divider under the discarded attempt:\n%s", f.scroll)
	}
	h.ev(asstMsg("a2"))
	if v := h.current().view; strings.Contains(v, "Retrying") {
		t.Fatalf("the retry notice outlived the new attempt:\n%s", v)
	}
	for _, c := range chunks(strings.Join(retry, " "), 6) {
		h.ev(textDelta("a2", 0, c))
	}
	h.ev(textEnd("a2", 0), turnEnd("a2", "end_turn", 1, 1), runState(protocol.RunIdle))
	h.requireOnceInScrollback(append(printed, retry...))
	s := h.current().scroll
	if strings.Index(s, printed[0]) > strings.Index(s, "cut off") || strings.Index(s, "cut off") > strings.Index(s, retry[0]) {
		t.Fatalf("the scrollback is out of order:\n%s", s)
	}
}

// TestRefreshMidStream: a snapshot refresh (/clear, /rewind, compaction,
// a resync after a gap) in the middle of a stream never shows content
// twice, and the deltas after it keep appending.
func TestRefreshMidStream(t *testing.T) {
	t.Parallel()
	type step func(h *harness)
	streamHalf := func(h *harness, id string, ws []string) {
		for _, c := range chunks(strings.Join(ws, " ")+" ", 8) {
			h.ev(textDelta(id, 0, c))
		}
	}
	for _, tc := range []struct {
		name string
		run  step
	}{
		{"clear", func(h *harness) {
			old := words(0, 10)
			h.ev(runState(protocol.RunRunning), userMsg("u1", "one"), asstMsg("a1"))
			streamHalf(h, "a1", old)
			h.ev(protocol.MessagesCleared{})
			if n := countIn(h.current().screen, old); len(n) > 0 {
				t.Errorf("cleared content still on screen: %v", n)
			}
			if !strings.Contains(h.current().scroll, "conversation cleared") {
				t.Errorf("no divider for the clear:\n%s", h.current().scroll)
			}
			neu := words(100, 10)
			h.ev(userMsg("u2", "two"), asstMsg("a2"))
			streamHalf(h, "a2", neu)
			h.ev(textEnd("a2", 0), turnEnd("a2", "end_turn", 1, 1), runState(protocol.RunIdle))
			h.requireOnceInScrollback(neu)
		}},
		{"rewind", func(h *harness) {
			first := words(0, 6)
			h.ev(runState(protocol.RunRunning), userMsg("u1", "one"), asstMsg("a1"))
			streamHalf(h, "a1", first)
			h.ev(textEnd("a1", 0), turnEnd("a1", "end_turn", 1, 1), runState(protocol.RunIdle))
			h.requireOnceInScrollback(first)
			h.ev(runState(protocol.RunRunning), userMsg("u2", "two"), asstMsg("a2"))
			streamHalf(h, "a2", words(50, 6))
			h.ev(protocol.MessagesRewound{AnchorMessageID: "u2"})
			if n := countIn(h.current().screen, words(50, 6)); len(n) > 0 {
				t.Errorf("rewound content still on screen: %v", n)
			}
			neu := words(100, 6)
			h.ev(userMsg("u3", "three"), asstMsg("a3"))
			streamHalf(h, "a3", neu)
			h.ev(textEnd("a3", 0), turnEnd("a3", "end_turn", 1, 1), runState(protocol.RunIdle))
			h.requireOnceInScrollback(append(first, neu...))
		}},
		{"rewind printed", func(h *harness) {
			first := words(0, 6)
			h.ev(runState(protocol.RunRunning), userMsg("u1", "one"), asstMsg("a1"))
			streamHalf(h, "a1", first)
			h.ev(textEnd("a1", 0), turnEnd("a1", "end_turn", 1, 1), runState(protocol.RunIdle))
			h.ev(protocol.MessagesRewound{AnchorMessageID: "u1"})
			if !strings.Contains(h.current().scroll, "rewound to before: one") {
				t.Errorf("no divider for the rewind:\n%s", h.current().scroll)
			}
			neu := words(100, 6)
			h.ev(runState(protocol.RunRunning), userMsg("u2", "again"), asstMsg("a2"))
			streamHalf(h, "a2", neu)
			h.ev(textEnd("a2", 0), turnEnd("a2", "end_turn", 1, 1), runState(protocol.RunIdle))
			h.requireOnceInScrollback(append(first, neu...))
		}},
		{"compact", func(h *harness) {
			first := words(0, 6)
			h.ev(runState(protocol.RunRunning), userMsg("u1", "one"), asstMsg("a1"))
			streamHalf(h, "a1", first)
			h.ev(textEnd("a1", 0), turnEnd("a1", "end_turn", 1, 1))
			h.ev(protocol.CompactBlockAdded{Message: protocol.Message{ID: "c1", Role: protocol.RoleAssistant,
				Blocks: []protocol.Block{{Type: protocol.BlockCompact, Content: "summary zqsumm"}}}})
			neu := words(100, 6)
			h.ev(asstMsg("a2"))
			streamHalf(h, "a2", neu)
			h.ev(textEnd("a2", 0), turnEnd("a2", "end_turn", 1, 1), runState(protocol.RunIdle))
			h.requireOnceInScrollback(append(first, neu...))
		}},
		{"resync after a gap", func(h *harness) {
			ws := words(0, 16)
			h.ev(runState(protocol.RunRunning), userMsg("u1", "one"), asstMsg("a1"))
			cs := chunks(strings.Join(ws, " "), 6)
			for _, c := range cs[:len(cs)/2] {
				h.ev(textDelta("a1", 0, c))
			}
			// One delta is lost on the way: the next one reveals the gap,
			// the UI pulls a snapshot (which holds both) and goes on.
			h.publish(textDelta("a1", 0, cs[len(cs)/2]))
			before := h.b.subs
			h.ev(textDelta("a1", 0, cs[len(cs)/2+1]))
			if h.b.subs != before+1 {
				t.Fatalf("no snapshot was pulled after the gap")
			}
			for _, c := range cs[len(cs)/2+2:] {
				h.ev(textDelta("a1", 0, c))
			}
			h.ev(textEnd("a1", 0), turnEnd("a1", "end_turn", 1, 1), runState(protocol.RunIdle))
			h.requireOnceInScrollback(ws)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(newHarness(t, 80, 40))
		})
	}
}

// TestToolBlocks: the streaming parameters' last 30 characters (newlines
// as \n) until the compact form is known, the growing short result while
// running, the outcome at the end, and two tools updating independently.
func TestToolBlocks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 100, 40)
	h.ev(runState(protocol.RunRunning), userMsg("u1", "go"), asstMsg("a1"),
		toolStart("a1", 0, "t1", "Write"), toolStart("a1", 1, "t2", "Bash"))
	// While the parameters stream, no piece of their JSON shows: the call
	// is being prepared.
	p1 := "{\"file_path\":\"/tmp/a.txt\",\n\"content\":\"line one\nline two\"}"
	for _, c := range chunks(p1, 4) {
		h.ev(toolParams("a1", 0, "t1", "Write", c))
		v := h.current().view
		if !strings.Contains(v, "● Write preparing…") || strings.ContainsAny(v, `{"`) {
			t.Fatalf("want Write preparing… and no JSON in:\n%s", v)
		}
	}
	// The second tool moves while the first waits: each shows its own.
	h.ev(toolParams("a1", 1, "t2", "Bash", `{"command":"make"}`),
		toolRunning("a1", 1, "t2", "Bash", `{"command":"make"}`, "make", "", ""))
	v := h.current().view
	if !strings.Contains(v, "Bash(make)") || !strings.Contains(v, "Running…") || !strings.Contains(v, "Write preparing…") {
		t.Fatalf("two tools not shown independently:\n%s", v)
	}
	out := ""
	for i := 1; i <= 8; i++ {
		line := words(200+i, 1)[0]
		out += line + "\n"
		h.ev(toolRunning("a1", 1, "t2", "Bash", `{"command":"make"}`, "make", line+"\n", lastLines(out, 5)))
		if v := h.current().view; !strings.Contains(v, line) {
			t.Fatalf("the short result does not grow with %q:\n%s", line, v)
		}
	}
	h.ev(toolRunning("a1", 0, "t1", "Write", p1, "/tmp/a.txt", "", ""))
	if v := h.current().view; !strings.Contains(v, "Write(/tmp/a.txt)") {
		t.Fatalf("compact params not shown once known:\n%s", v)
	}
	h.ev(toolEnd("a1", 1, "t2", "Bash", `{"command":"make"}`, out, lastLines(out, 5), false, "exit status 2"))
	if v := h.current().view; !strings.Contains(v, "Error: exit status 2") {
		t.Fatalf("failure not shown:\n%s", v)
	}
	h.ev(toolEnd("a1", 0, "t1", "Write", p1, "wrote 2 lines", "wrote 2 lines", true, ""))
	h.ev(turnEnd("a1", "tool_use", 1, 1), asstMsg("a2"), textDelta("a2", 0, "done zqdone"), textEnd("a2", 0),
		turnEnd("a2", "end_turn", 1, 1), runState(protocol.RunIdle))
	s := h.current().scroll
	for _, want := range []string{"Write(/tmp/a.txt)", "wrote 2 lines", "Bash(make)", "Error: exit status 2"} {
		if strings.Count(s, want) != 1 {
			t.Fatalf("%q printed %d times:\n%s", want, strings.Count(s, want), s)
		}
	}
}

// TestThinkingTimer: the header ticks every second from the block's start
// while it streams, freezes to the final duration at the end, shows the
// same duration after a reload, and shows none when a time is missing or
// inverted.
func TestThinkingTimer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 80, 40)
	start := h.clock.Now().UnixMilli()
	h.ev(runState(protocol.RunRunning), userMsg("u1", "go"), asstMsg("a1"), thinkDelta("a1", 0, "hmm ", start))
	if !strings.Contains(h.current().view, "Thinking 0s") {
		t.Fatalf("no timer:\n%s", h.current().view)
	}
	if !h.m.tickArmed {
		t.Fatal("no tick armed while reasoning streams")
	}
	for s := 1; s <= 9; s++ {
		h.tick(time.Second)
		if want := "Thinking " + strconv.Itoa(s) + "s"; !strings.Contains(h.current().view, want) {
			t.Fatalf("after %ds want %q:\n%s", s, want, h.current().view)
		}
		if !h.m.tickArmed {
			t.Fatal("the timer stopped ticking")
		}
	}
	// Deltas between ticks do not move the timer off the clock.
	h.clock.Advance(400 * time.Millisecond)
	h.ev(thinkDelta("a1", 0, "more ", 0))
	if !strings.Contains(h.current().view, "Thinking 9s") {
		t.Fatalf("want Thinking 9s:\n%s", h.current().view)
	}
	h.ev(thinkEnd("a1", 0, start+15_000))
	if !strings.Contains(h.current().screen, "Thought for 15s") {
		t.Fatalf("want the frozen duration:\n%s", h.current().screen)
	}
	h.tick(5 * time.Second)
	if !strings.Contains(h.current().screen, "Thought for 15s") {
		t.Fatalf("the frozen duration moved:\n%s", h.current().screen)
	}
	h.ev(textDelta("a1", 1, "answer"), textEnd("a1", 1), turnEnd("a1", "end_turn", 1, 1), runState(protocol.RunIdle))
	if !strings.Contains(h.current().scroll, "Thought for 15s") {
		t.Fatalf("printed header lacks the duration:\n%s", h.current().scroll)
	}
	if h.m.tickArmed {
		// The last tick was consumed; nothing streams: no new one.
		t.Fatal("a tick is armed with nothing streaming")
	}

	// A reloaded session: the same duration, no ticking; missing or
	// inverted times show none.
	r := newHarness(t, 80, 40)
	r.truth.Reset(protocol.Snapshot{Messages: []protocol.Message{{ID: "a1", Role: protocol.RoleAssistant, StopReason: "end_turn", Blocks: []protocol.Block{
		{Type: protocol.BlockReasoning, Content: "first", Stage: protocol.StageEnd, StartedAt: start, EndedAt: start + 15_000},
		{Type: protocol.BlockReasoning, Content: "second", Stage: protocol.StageEnd, EndedAt: start + 15_000},
		{Type: protocol.BlockReasoning, Content: "third", Stage: protocol.StageEnd, StartedAt: start + 9_000, EndedAt: start},
		{Type: protocol.BlockReasoning, Content: "fourth", Stage: protocol.StageEnd, StartedAt: start},
	}}}})
	r.m.attach(r.b, "")
	r.send(nopMsg{})
	s := r.current().scroll
	if strings.Count(s, "Thought for 15s") != 1 || strings.Count(s, "∴ Thought\n") != 3 {
		t.Fatalf("reloaded headers wrong:\n%s", s)
	}
	if r.m.tickArmed {
		t.Fatal("a reloaded session ticks")
	}
}

// TestResizeReprintsTheScrollback shrinks the terminal while an answer
// streams: the terminal is cleared and the scrollback printed again, laid
// out for the new width — every word once, no line wider than the
// terminal — and a print on its way first lands before the reprint.
func TestResizeReprintsTheScrollback(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 100, 30)
	first, second := words(0, 60), words(60, 40)
	h.ev(runState(protocol.RunRunning), userMsg("u1", "question zqzzzz"), asstMsg("a1"),
		textDelta("a1", 0, strings.Join(first, " ")), textEnd("a1", 0), turnEnd("a1", "end_turn", 10, 5))
	h.requireOnceInScrollback(first)
	wide := 0
	for _, l := range h.scroll {
		wide = max(wide, ansi.StringWidth(l))
	}
	if wide <= 64 {
		t.Fatalf("the scrollback is at most %d wide before the resize: the test shrinks nothing", wide)
	}

	// A print is on its way (not acknowledged yet) when the size changes:
	// the reprint waits for it.
	h.m.Update(eventsMsg{gen: h.m.gen, evs: []protocol.Event{h.publish(userMsg("u2", "again zqzzzy"))}})
	if !h.m.printing {
		t.Fatal("the user message is not being printed")
	}
	h.m.Update(tea.WindowSizeMsg{Width: 64, Height: 18})
	if !h.m.reprint {
		t.Fatal("the reprint did not wait for the print on its way")
	}
	h.check()
	h.ack()
	if h.m.reprint {
		t.Fatal("no reprint after the print landed")
	}
	fits := func() {
		t.Helper()
		for i, l := range h.scroll {
			if w := ansi.StringWidth(l); w > 64 {
				t.Fatalf("scrollback line %d is %d wide after the resize to 64: %q", i, w, ansi.Strip(l))
			}
		}
	}
	fits()
	h.requireOnceInScrollback(first)
	h.requireOnceInScrollback([]string{"zqzzzz", "zqzzzy"})

	// The next answer streams after the reprint, then a resize mid-stream
	// reprints without it: it is still live.
	h.ev(asstMsg("a2"), textDelta("a2", 0, strings.Join(second[:20], " ")))
	h.send(tea.WindowSizeMsg{Width: 60, Height: 18})
	if n := countIn(h.current().scroll, second); len(n) > 0 {
		t.Fatalf("the streaming answer was printed by the reprint: %v", n)
	}
	h.requireOnceInScrollback(first)
	h.ev(textDelta("a2", 0, " "+strings.Join(second[20:], " ")), textEnd("a2", 0),
		turnEnd("a2", "end_turn", 10, 5), runState(protocol.RunIdle))
	h.requireOnceInScrollback(append(first, second...))
	fits()
}

// TestCursorHomeUntilTheClear: from the update that decides a screen clear
// (a reprint, or a print still waiting for a frame after its pieces) until
// Bubble Tea has handled the tea.ClearScreen (clearedMsg), the frame's
// cursor is in the frame's top left corner; then it is back in the input
// box. Bubble Tea handles a tea.ClearScreen by buffering a move of its
// cursor to that corner, written with the next frame, while prints are
// written at once from where it believes the cursor is: a frame flushed
// between the clear's print and the tea.ClearScreen left the move
// unwritten and the reprint inserted into the middle of that frame
// (TestPseudoTerminalShrinkMidStream under load). With the cursor in the
// corner after every frame the move is empty.
func TestCursorHomeUntilTheClear(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// start runs the updates up to the one that may clear the screen.
		start func(m *ui)
		// clears: a tea.ClearScreen is then on its way, and the cursor in
		// the corner until clearedMsg.
		clears bool
	}{
		{"reprint", func(m *ui) { m.teaReprinter("the scrollback") }, true},
		{"print waiting for a frame", func(m *ui) {
			m.gate, _ = newPrintGate(io.Discard)
			m.teaPrinter("a line")
			m.Update(markMsg{})
			m.Update(settleMsg{writes: 1}) // no frame came
			m.Update(frameCheckMsg{})
		}, true},
		{"print whose frame came", func(m *ui) {
			m.gate, _ = newPrintGate(io.Discard)
			m.teaPrinter("a line")
			m.Update(markMsg{})
			m.Update(settleMsg{writes: 1})
			_, _ = m.gate.Write([]byte("a frame")) // released the print
			m.Update(frameCheckMsg{})
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, 100, 30)
			h.ev(runState(protocol.RunRunning), userMsg("u1", "question zqzzzz"), asstMsg("a1"),
				textDelta("a1", 0, "an answer streaming"))
			box := h.m.View().Cursor
			if box == nil || box.Y == 0 {
				t.Fatalf("the input box's cursor is %+v, want one below the frame's first row", box)
			}
			tc.start(h.m)
			if tc.clears {
				if c := h.m.View().Cursor; c == nil || c.X != 0 || c.Y != 0 {
					t.Fatalf("the cursor is %+v before the clear is handled, want the frame's top left corner", c)
				}
				h.m.Update(clearedMsg{})
			}
			if c := h.m.View().Cursor; c == nil || *c != *box {
				t.Fatalf("the cursor is %+v once the clear is handled, want the input box's %+v", c, box)
			}
		})
	}
}

// TestWaitingPrintStaysInTheLiveArea: an answer that ends while an earlier
// print is still on its way waits for it; meanwhile it stays in the live
// area, then it is printed and leaves it in the same frame. It is on the
// screen once in every frame (the harness checks that it is never twice).
func TestWaitingPrintStaysInTheLiveArea(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 80, 40)
	ws := words(0, 12)
	h.slowPrints = true
	h.ev(runState(protocol.RunRunning), userMsg("u1", "question zqzzzz"), asstMsg("a1"))
	if h.acks != 1 {
		t.Fatalf("%d prints on their way, want the user message's", h.acks)
	}
	h.checks = append(h.checks, func(f frame) {
		if n := countIn(f.screen, ws); len(n) > 0 && len(n) != len(ws) {
			t.Fatalf("frame %d shows only part of the answer: %v\n%s", f.n, n, f.screen)
		}
	})
	h.ev(textDelta("a1", 0, strings.Join(ws, " ")), textEnd("a1", 0), turnEnd("a1", "end_turn", 1, 1))
	f := h.current()
	if n := countIn(f.scroll, ws); len(n) > 0 {
		t.Fatalf("printed before the earlier print was through: %v", n)
	}
	if n := countIn(f.view, ws); len(n) != len(ws) {
		t.Fatalf("the answer waits to be printed but the live area shows %v of it:\n%s", n, f.view)
	}
	h.slowPrints = false
	h.ack()
	h.requireOnceInScrollback(ws)
	if n := countIn(h.current().view, ws); len(n) > 0 {
		t.Fatalf("the printed answer is still in the live area: %v", n)
	}
}
