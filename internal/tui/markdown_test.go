package tui

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/sluicehq/sluice/protocol"
)

const sampleAnswer = "# Plan\n\nFirst **bold** step, then `code`.\n\n" +
	"```go\nfunc main() {\n\tfmt.Println(\"hi\")\n\n\tos.Exit(0)\n}\n```\n\n" +
	"- one\n- two\n\n" +
	"~~~\nraw ``` inside\n~~~\n\nDone."

// TestStreamingMarkdownIsStable feeds an answer a few bytes at a time: the
// rendered segments only ever grow (nothing above the tail reflows), no
// fence line is ever shown, and a blank line inside a code fence never
// closes a segment.
func TestStreamingMarkdownIsStable(t *testing.T) {
	t.Parallel()
	md := newMarkdown("dark", 60)
	var s streamMD
	var prev []string
	for n := 1; n <= len(sampleAnswer); n++ {
		src := sampleAnswer[:n]
		out := slices.Concat(s.view(md, src)...)
		if !slices.Equal(s.lines[:min(len(prev), len(s.lines))], prev) || len(s.lines) < len(prev) {
			t.Fatalf("at %d bytes the stable lines changed:\n%q\n--- was:\n%q", n, s.lines, prev)
		}
		prev = slices.Clone(s.lines)
		for _, l := range out {
			p := strings.TrimSpace(ansi.Strip(l))
			if strings.HasPrefix(p, "```") || strings.HasPrefix(p, "~~~") {
				t.Fatalf("at %d bytes a fence line shows: %q", n, l)
			}
		}
		if s.st.fence.char != 0 {
			t.Fatalf("at %d bytes a segment ended inside a fence", n)
		}
	}
	if want := strings.Index(sampleAnswer, "Done."); s.stable != want {
		t.Fatalf("stable = %d, want %d (the start of the last paragraph)", s.stable, want)
	}
}

func TestFinishedAnswerHighlightsCode(t *testing.T) {
	t.Parallel()
	md := newMarkdown("dark", 60)
	lines := md.render(sampleAnswer)
	var code string
	for _, l := range lines {
		if strings.Contains(ansi.Strip(l), "fmt.Println") {
			code = l
		}
	}
	if code == "" {
		t.Fatalf("no code line in:\n%s", strings.Join(lines, "\n"))
	}
	// Highlighting colours the parts of the line differently.
	if strings.Count(code, "\x1b[38;5;") < 3 {
		t.Fatalf("code is not highlighted: %q", code)
	}
	for _, l := range lines {
		if strings.HasSuffix(ansi.Strip(l), " ") {
			t.Fatalf("padding left on %q", l)
		}
	}
}

func TestFence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lines []string
		open  bool
	}{
		{[]string{"```go"}, true},
		{[]string{"```go", "```"}, false},
		{[]string{"````", "```"}, true}, // a shorter fence does not close
		{[]string{"~~~", "```"}, true},  // nor another character
		{[]string{"``` a`b"}, false},    // not a fence
		{[]string{"    ```"}, false},    // indented code, not a fence
		{[]string{"```", "``` x"}, true},
	} {
		var f fence
		for _, l := range tc.lines {
			f.line(l)
		}
		if (f.char != 0) != tc.open {
			t.Errorf("%q: open = %v, want %v", tc.lines, f.char != 0, tc.open)
		}
	}
}

// TestStreamingAnswerFrames streams the sample answer through the UI:
// no frame shows a fence line or a word twice, and the printed answer is
// the finished rendering.
func TestStreamingAnswerFrames(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 70, 50)
	h.checks = append(h.checks, func(f frame) {
		for _, l := range strings.Split(f.view, "\n") {
			if p := strings.TrimSpace(l); strings.HasPrefix(p, "```") || strings.HasPrefix(p, "~~~") {
				t.Fatalf("frame %d shows a fence line:\n%s", f.n, f.view)
			}
		}
	})
	h.ev(runState(protocol.RunRunning), userMsg("u1", "plan?"), asstMsg("a1"))
	for _, c := range chunks(sampleAnswer, 3) {
		h.ev(textDelta("a1", 0, c))
	}
	h.ev(textEnd("a1", 0), turnEnd("a1", "end_turn", 1, 1), runState(protocol.RunIdle))
	s := h.current().scroll
	for _, want := range []string{"Plan", "First bold step", "fmt.Println(\"hi\")", "• one", "raw ``` inside", "Done."} {
		if strings.Count(s, want) != 1 {
			t.Fatalf("%q printed %d times:\n%s", want, strings.Count(s, want), s)
		}
	}
}

func TestPlainStreamRewrapsOnlyTheLastLine(t *testing.T) {
	t.Parallel()
	var p plainStream
	text := "alpha beta gamma\ndelta epsilon\nzeta"
	for n := 1; n <= len(text); n++ {
		got := slices.Concat(p.parts(text[:n], 8))
		want := wrapPlain(strings.TrimSuffix(text[:n], "\n"), 8)
		if !slices.Equal(got, want) {
			t.Fatalf("at %d: got %q want %q", n, got, want)
		}
	}
	if p.done != strings.LastIndexByte(text, '\n')+1 {
		t.Fatalf("complete lines are not cached: done = %d", p.done)
	}
}

// TestSanitize: escape sequences and control characters from a model or a
// tool never reach the terminal; text, newlines and tabs (as spaces) do.
func TestSanitize(t *testing.T) {
	t.Parallel()
	in := "red \x1b[31mtext\x1b[0m\x1b[2J\x1b]0;title\x07 bell\a tab\there\nnext\r line"
	got := sanitize(in)
	if want := "red text bell tab here\nnext line"; got != want {
		t.Fatalf("sanitize = %q, want %q", got, want)
	}
	for _, l := range wrapPlain(in, 80) {
		if strings.ContainsAny(l, "\x1b\a\r\t") {
			t.Fatalf("a control character survived wrapping: %q", l)
		}
	}
}

func TestWrapLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line  string
		width int
		want  []string
	}{
		{"", 10, []string{""}},
		{"alpha beta gamma", 10, []string{"alpha beta", "gamma"}},
		{"  indented code line", 12, []string{"  indented", "code line"}},
		{"abcdefghijklmnop", 5, []string{"abcde", "fghij", "klmno", "p"}},
		{"a  b", 3, []string{"a", "b"}}, // spaces where a row breaks are dropped
		{"中文字符测试", 5, []string{"中文", "字符", "测试"}},
		{"word   ", 10, []string{"word"}},
	} {
		got, _ := wrapLine(tc.line, tc.width)
		if !slices.Equal(got, tc.want) {
			t.Errorf("wrapLine(%q, %d) = %q, want %q", tc.line, tc.width, got, tc.want)
		}
	}
}

// TestWrapLineIsPrefixStable: appending to a line never changes its rows
// but the last, and the last row starts where wrapLine says — what lets
// plainStream wrap a streaming line in pieces.
func TestWrapLineIsPrefixStable(t *testing.T) {
	t.Parallel()
	line := "Streaming text grows a word at a time, with a verylongwordthatmustbecutacrossrows and 中文 too."
	var prev []string
	for n := 1; n <= len(line); n++ {
		if !utf8.RuneStart(line[n%len(line)]) && n < len(line) {
			continue
		}
		rows, last := wrapLine(line[:n], 12)
		if len(prev) > 1 && !slices.Equal(rows[:len(prev)-1], prev[:len(prev)-1]) {
			t.Fatalf("at %d bytes earlier rows changed: %q then %q", n, prev, rows)
		}
		tail, _ := wrapLine(line[last:n], 12)
		if !slices.Equal(tail, rows[len(rows)-1:]) {
			t.Fatalf("at %d bytes the last row does not start at %d: %q vs %q", n, last, tail, rows[len(rows)-1:])
		}
		prev = rows
	}
}

// FuzzStreamMDStable streams a source in pieces: the stable lines (what
// the UI prints while the block streams) only ever grow, each time keeping
// the lines before, and the finished block's lines start with them — so
// nothing printed early is changed, repeated or lost at the end.
func FuzzStreamMDStable(f *testing.F) {
	f.Add(sampleAnswer, uint8(7))
	f.Add("## a\nb\n\n| x | y |\n|---|---|\n| 1 | 2 |\n\n- i\n\n  more\n", uint8(3))
	f.Add("```\n\n# not a heading\n```\n# h\ntext", uint8(2))
	f.Add("Steps:\n1. a\n   - a1\n   ```\n   - x\n   ```\n1. b\n\n1. c\n\n   more\n- other\n> q", uint8(5))
	f.Add("- a\n- b\n\n- c\n  - c1\n- d\ntext\n***\n* e", uint8(1))
	f.Fuzz(func(t *testing.T, src string, step uint8) {
		if len(src) > 2000 {
			return
		}
		n := int(step%32) + 1
		md := newMarkdown("dark", 30)
		var s streamMD
		var prev []string
		for end := n; ; end += n {
			end = min(end, len(src))
			s.view(md, src[:end])
			got := s.stableLines()
			if len(got) < len(prev) || !slices.Equal(got[:len(prev)], prev) {
				t.Fatalf("at %d bytes the stable lines changed:\n%q\n--- were:\n%q", end, got, prev)
			}
			prev = slices.Clone(got)
			if end == len(src) {
				break
			}
		}
		if fin := s.final(md, src); len(fin) < len(prev) || !slices.Equal(fin[:len(prev)], prev) {
			t.Fatalf("the finished block does not start with the stable lines:\n%q\n--- stable:\n%q", fin, prev)
		}
	})
}

// TestStreamedListsRenderAsWhole streams lists a byte at a time: a list's
// items become stable one by one (each once the next begins), and the
// finished block reads as the whole source rendered at once — numbered
// on when the source numbers every item "1.", nested lists in their
// items. A tight list turned loose by a later blank line keeps its
// printed items tight.
func TestStreamedListsRenderAsWhole(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, src string
		want      []string // nil: the whole source rendered at once
		stableAt  string   // the stable lines end with this item once the next begins
	}{
		{name: "tight", src: "- a\n- b\n- c", stableAt: "• a"},
		{name: "numbered ones", src: "1. a\n1. b\n   - b1\n   - b2\n1. c\n1. d\n1. e\n1. f\n1. g\n1. h\n1. i\n1. j\n   - j1\n1. k", stableAt: "9. i"},
		{name: "after a paragraph", src: "Steps:\n1. a\n2. b\n\nDone.", stableAt: "1. a"},
		{name: "loose item", src: "- a\n\n  more a\n- b\n- c", stableAt: "  more a"},
		{name: "then a heading", src: "- a\n- b\n# H\ntext", stableAt: "• a"},
		{name: "turned loose", src: "- a\n- b\n\n- c\n- d", want: []string{"• a", "• b", "", "• c", "", "• d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			md := newMarkdown("dark", 40)
			var s streamMD
			sawStable := false
			for n := 1; n <= len(tc.src); n++ {
				s.view(md, tc.src[:n])
				if st := s.stableLines(); len(st) > 0 && strings.HasPrefix(ansi.Strip(st[len(st)-1]), tc.stableAt) {
					sawStable = true
				}
			}
			if tc.stableAt != "" && !sawStable {
				t.Errorf("%q never ended the stable lines", tc.stableAt)
			}
			got := stripAll(s.final(md, tc.src))
			want := tc.want
			if want == nil {
				want = stripAll(md.render(tc.src))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("streamed:\n%s\n--- want:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func stripAll(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = ansi.Strip(l)
	}
	return out
}
