package tui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/sluicehq/sluice/protocol"
)

// longAnswer is a markdown answer of n source lines in sections of
// headings, paragraphs, tight lists, fenced code and tables. Every line but
// the blank and fence lines holds one marker word of its own (words), so
// that a line shown twice or lost is seen; markers are the answer's words
// from the offset from on.
func longAnswer(from, n int) (src string, markers []string) {
	var lines []string
	k := from
	next := func() string {
		w := words(k, 1)[0]
		k++
		markers = append(markers, w)
		return w
	}
	for i := 0; len(lines) < n; i++ {
		lines = append(lines, "## Section "+next(), "")
		lines = append(lines,
			"A paragraph that "+next()+" starts the section and runs long enough to wrap",
			"on narrow terminals, with **bold** and `code` in it "+next()+" so that",
			"its soft line breaks are joined and wrapped again "+next()+".", "")
		for j := 0; j < 4; j++ {
			lines = append(lines, fmt.Sprintf("- item %d of the list %s", j+1, next()))
		}
		lines = append(lines, "")
		if i%2 == 0 {
			lines = append(lines, "```go")
			for j := 0; j < 6; j++ {
				lines = append(lines, fmt.Sprintf("\tfmt.Println(%q) // line %d", next(), j))
			}
			lines = append(lines, "```", "")
		} else {
			lines = append(lines, "| name | value |", "|------|-------|")
			for j := 0; j < 4; j++ {
				lines = append(lines, fmt.Sprintf("| row %d | %s |", j, next()))
			}
			lines = append(lines, "")
		}
		lines = append(lines, "A closing paragraph "+next()+" of the section.", "")
	}
	lines = lines[:n]
	// The markers of the lines cut off are not in the answer.
	var kept []string
	body := strings.Join(lines, "\n")
	for _, m := range markers {
		if strings.Contains(body, m) {
			kept = append(kept, m)
		}
	}
	return body, kept
}

// unfinishedTail is the part of a streamed answer after its last blank line
// outside a code fence: what a later chunk can still change.
func unfinishedTail(src string) string {
	at, fenced := 0, false
	for i := 0; ; {
		j := strings.IndexByte(src[i:], '\n')
		if j < 0 {
			return src[at:]
		}
		l := src[i : i+j]
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
		}
		i += j + 1
		if !fenced && strings.TrimSpace(l) == "" {
			at = i
		}
	}
}

// TestLongAnswerStreamsIntoTheScrollback streams a 300-line answer at
// three widths, resizing the terminal twice mid-stream: at every frame the
// live area holds only the answer's unfinished tail (everything before it
// is printed), no line shows twice, and at the end the scrollback holds
// every line once.
func TestLongAnswerStreamsIntoTheScrollback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		w, h    int
		resizes [2]tea.WindowSizeMsg
	}{
		{100, 30, [2]tea.WindowSizeMsg{{Width: 70, Height: 24}, {Width: 120, Height: 40}}},
		{72, 24, [2]tea.WindowSizeMsg{{Width: 100, Height: 30}, {Width: 50, Height: 20}}},
		{50, 40, [2]tea.WindowSizeMsg{{Width: 44, Height: 16}, {Width: 80, Height: 24}}},
	} {
		t.Run(fmt.Sprintf("%dx%d", tc.w, tc.h), func(t *testing.T) {
			t.Parallel()
			src, markers := longAnswer(0, 300)
			h := newHarness(t, tc.w, tc.h)
			streamed := ""
			h.checks = append(h.checks, func(f frame) {
				if f.alt {
					return
				}
				tail := unfinishedTail(streamed)
				for _, tok := range tokenRE.FindAllString(f.view, -1) {
					if strings.Contains(streamed, tok) && !strings.Contains(tail, tok) {
						t.Fatalf("frame %d: %q is final but in the live area; tail:\n%s\n--- view:\n%s", f.n, tok, tail, f.view)
					}
				}
			})
			h.ev(runState(protocol.RunRunning), userMsg("u1", "a long answer please"), asstMsg("a1"))
			cs := chunks(src, 61)
			for i, c := range cs {
				h.ev(textDelta("a1", 0, c))
				streamed += c
				switch i {
				case len(cs) / 3:
					h.send(tc.resizes[0])
					// Lines complete before the resize are in the
					// scrollback, laid out anew.
					if !strings.Contains(h.current().scroll, markers[0]) {
						t.Fatalf("the answer's start is not in the scrollback mid-stream:\n%s", h.current().scroll)
					}
				case 2 * len(cs) / 3:
					h.send(tc.resizes[1])
				}
			}
			h.ev(textEnd("a1", 0), turnEnd("a1", "end_turn", 10, 10), runState(protocol.RunIdle))
			h.requireOnceInScrollback(markers)
			w := tc.resizes[1].Width
			for i, l := range h.scroll {
				if lw := ansi.StringWidth(l); lw > w {
					t.Fatalf("scrollback line %d is %d wide at width %d: %q", i, lw, w, ansi.Strip(l))
				}
			}
			// In order.
			last := -1
			for _, m := range markers {
				i := strings.Index(h.current().scroll, m)
				if i < last {
					t.Fatalf("%q printed out of order", m)
				}
				last = i
			}
		})
	}
}

// TestStreamedAnswerThroughTheExpandedView opens the expanded view while a
// long answer streams into the scrollback: nothing is printed while it is
// open (the alternate screen holds the terminal), and back in the live
// view what completed meanwhile is printed once.
func TestStreamedAnswerThroughTheExpandedView(t *testing.T) {
	t.Parallel()
	for name, answer := range map[string]func(int, int) (string, []string){"sections": longAnswer, "tight list": longList} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src, markers := answer(1000, 120)
			h := newHarness(t, 80, 30)
			h.ev(runState(protocol.RunRunning), userMsg("u1", "go"), asstMsg("a1"))
			cs := chunks(src, 67)
			for i, c := range cs {
				h.ev(textDelta("a1", 0, c))
				switch i {
				case len(cs) / 3:
					h.key("ctrl+o")
					if !h.current().alt {
						t.Fatal("no expanded view")
					}
				case len(cs) / 2:
					h.key("esc")
				}
			}
			h.ev(textEnd("a1", 0), turnEnd("a1", "end_turn", 1, 1), runState(protocol.RunIdle))
			h.requireOnceInScrollback(markers)
		})
	}
}

// TestLongReasoningFolds streams reasoning far longer than the screen: the
// header with its timer stays in view at every frame, and once it ends the
// block is one line in the scrollback, its text only in the expanded view.
func TestLongReasoningFolds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 80, 24)
	ws := words(2000, 120)
	h.checks = append(h.checks, func(f frame) {
		if !f.alt && len(countIn(f.view, ws)) > 0 && !strings.Contains(f.view, "∴ Thinking") {
			t.Fatalf("frame %d: reasoning without its header:\n%s", f.n, f.view)
		}
	})
	start := h.clock.Now().UnixMilli()
	h.ev(runState(protocol.RunRunning), userMsg("u1", "think"), asstMsg("a1"))
	for i, w := range ws {
		st := int64(0)
		if i == 0 {
			st = start
		}
		h.ev(thinkDelta("a1", 0, w+" is a thought of its own.\n", st))
		if i%40 == 39 {
			h.tick(time.Second)
		}
	}
	if v := h.current().view; !strings.Contains(v, "∴ Thinking 3s…") || !strings.Contains(v, "lines above") {
		t.Fatalf("long reasoning's header or elision missing:\n%s", v)
	}
	h.ev(thinkEnd("a1", 0, start+12_000), textDelta("a1", 1, "The answer zqansw."), textEnd("a1", 1),
		turnEnd("a1", "end_turn", 1, 1), runState(protocol.RunIdle))
	f := h.current()
	if n := countIn(f.screen, ws); len(n) > 0 {
		t.Fatalf("folded reasoning is on screen: %v\n%s", n, f.screen)
	}
	if !strings.Contains(f.scroll, "> think\n\n∴ Thought for 12s\n\n● The answer zqansw.") {
		t.Fatalf("the reasoning is not one line in the scrollback:\n%s", f.scroll)
	}
	h.key("ctrl+o")
	if n := countIn(h.current().view, ws[len(ws)-20:]); len(n) != 20 {
		t.Fatalf("the expanded view lacks the reasoning's text:\n%s", h.current().view)
	}
}

// TestCompactionSaysWhatItIs: while the session compacts, the status says
// so from the view state, with the time since it started and the summary's
// length as it streams; the usual "Working…" returns when it has ended.
func TestCompactionSaysWhatItIs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 80, 24)
	h.typeText("/compact")
	h.key("enter")
	start := h.clock.Now().UnixMilli()
	h.ev(runState(protocol.RunRunning), protocol.CompactionUpdated{Stage: protocol.StageStart, StartedAt: start})
	if v := h.current().view; !strings.Contains(v, "✻ Compacting conversation… 0s · esc to interrupt") || strings.Contains(v, "Working…") {
		t.Fatalf("no compaction label:\n%s", v)
	}
	if !h.m.tickArmed {
		t.Fatal("no tick armed for the compaction's elapsed time")
	}
	for i := 1; i <= 3; i++ {
		h.tick(time.Second)
		h.ev(protocol.CompactionUpdated{Stage: protocol.StageStreaming, Chars: 40})
	}
	if v := h.current().view; !strings.Contains(v, "Compacting conversation… 3s · 120 chars of summary") {
		t.Fatalf("the label does not follow the compaction:\n%s", v)
	}
	h.ev(protocol.CompactBlockAdded{Message: protocol.Message{ID: "c1", Role: protocol.RoleAssistant,
		Blocks: []protocol.Block{{Type: protocol.BlockCompact, Content: "A summary."}}}},
		protocol.CompactionUpdated{Stage: protocol.StageEnd})
	if v := h.current().view; strings.Contains(v, "Compacting") || !strings.Contains(v, "Working…") {
		t.Fatalf("the label outlived the compaction (the job has not ended: Working…):\n%s", v)
	}
	h.ev(runState(protocol.RunIdle))
	h.finish(jobCompact, nil)
	if s := h.current().scroll; !strings.Contains(s, "Conversation compacted") {
		t.Fatalf("no compaction in the scrollback:\n%s", s)
	}
}

// longList is an answer that is one tight ordered list of n items, each
// numbered "1." as models often write them, every fifth with a nested
// tight list of two items; every line holds one marker word.
func longList(from, n int) (src string, markers []string) {
	ws := words(from, 3*n)
	var b strings.Builder
	b.WriteString("Steps:\n")
	k := 0
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "1. step %s\n", ws[k])
		markers = append(markers, ws[k])
		k++
		if i%5 == 4 {
			for j := 0; j < 2; j++ {
				fmt.Fprintf(&b, "   - detail %s\n", ws[k])
				markers = append(markers, ws[k])
				k++
			}
		}
	}
	return strings.TrimSuffix(b.String(), "\n"), markers
}

// unfinishedItem is the part of a streamed tight list from its last item
// whose first line is complete: what a later chunk can still change.
func unfinishedItem(src string) string {
	at := 0
	for i := 0; ; {
		j := strings.IndexByte(src[i:], '\n')
		if j < 0 {
			return src[at:]
		}
		if strings.HasPrefix(src[i:], "1. ") {
			at = i
		}
		i += j + 1
	}
}

// TestLongTightListStreamsIntoTheScrollback streams an answer that is one
// tight list of 300 items at three widths, resizing twice mid-stream: at
// every frame the live area holds no item but the last one begun (each
// finished item is printed as the next begins), and at the end the
// scrollback holds every line once, in order, numbered 1 to 300.
func TestLongTightListStreamsIntoTheScrollback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		w, h    int
		resizes [2]tea.WindowSizeMsg
	}{
		{100, 30, [2]tea.WindowSizeMsg{{Width: 70, Height: 24}, {Width: 120, Height: 40}}},
		{72, 24, [2]tea.WindowSizeMsg{{Width: 100, Height: 30}, {Width: 50, Height: 20}}},
		{40, 40, [2]tea.WindowSizeMsg{{Width: 34, Height: 16}, {Width: 80, Height: 24}}},
	} {
		t.Run(fmt.Sprintf("%dx%d", tc.w, tc.h), func(t *testing.T) {
			t.Parallel()
			src, markers := longList(3000, 300)
			h := newHarness(t, tc.w, tc.h)
			streamed := ""
			h.checks = append(h.checks, func(f frame) {
				if f.alt {
					return
				}
				tail := unfinishedItem(streamed)
				for _, tok := range tokenRE.FindAllString(f.view, -1) {
					if strings.Contains(streamed, tok) && !strings.Contains(tail, tok) {
						t.Fatalf("frame %d: %q is final but in the live area; tail:\n%s\n--- view:\n%s", f.n, tok, tail, f.view)
					}
				}
			})
			h.ev(runState(protocol.RunRunning), userMsg("u1", "a long list please"), asstMsg("a1"))
			cs := chunks(src, 97)
			for i, c := range cs {
				h.ev(textDelta("a1", 0, c))
				streamed += c
				switch i {
				case len(cs) / 3:
					h.send(tc.resizes[0])
					if !strings.Contains(h.current().scroll, markers[0]) {
						t.Fatalf("the list's start is not in the scrollback mid-stream:\n%s", h.current().scroll)
					}
				case 2 * len(cs) / 3:
					h.send(tc.resizes[1])
				}
			}
			h.ev(textEnd("a1", 0), turnEnd("a1", "end_turn", 10, 10), runState(protocol.RunIdle))
			h.requireOnceInScrollback(markers)
			scroll := ansi.Strip(h.current().scroll)
			last := -1
			for _, m := range markers {
				i := strings.Index(scroll, m)
				if i < last {
					t.Fatalf("%q printed out of order", m)
				}
				last = i
			}
			for _, n := range []int{1, 2, 150, 300} {
				if c := len(regexp.MustCompile(fmt.Sprintf(`(?m)^ *%d\. step `, n)).FindAllString(scroll, -1)); c != 1 {
					t.Fatalf("item %d is numbered so %d times in the scrollback:\n%s", n, c, scroll)
				}
			}
			if strings.Contains(scroll, "\n\n1. step") || strings.Contains(scroll, "\n\n2. step") {
				t.Fatalf("blank lines between a tight list's items:\n%s", scroll)
			}
		})
	}
}
