package tui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/sluicehq/sluice/internal/termmd"
)

// markdown renders answers at one width. A markdown is used only from the
// Bubble Tea event loop (the renderer caches styles).
type markdown struct {
	width int
	r     *termmd.Renderer
}

// newMarkdown returns a renderer wrapping at width columns in style
// ("dark" or "light").
func newMarkdown(style string, width int) *markdown {
	return &markdown{width: width, r: termmd.New(style, width)}
}

// render returns src rendered as lines, without leading or trailing blank
// lines.
func (md *markdown) render(src string) []string {
	return trimBlankEdges(md.r.Render(sanitize(src)))
}

func isBlank(line string) bool { return strings.TrimSpace(ansi.Strip(line)) == "" }

func trimBlankEdges(lines []string) []string {
	for len(lines) > 0 && isBlank(lines[0]) {
		lines = lines[1:]
	}
	for len(lines) > 0 && isBlank(lines[len(lines)-1]) {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// fence tracks whether a position in a markdown source is inside a fenced
// code block, and which fence would close it.
type fence struct {
	char byte // '`' or '~'; 0 outside a fence
	n    int  // length of the opening fence
}

// line updates the state with one source line (without its newline).
func (f *fence) line(l string) {
	t := strings.TrimLeft(l, " ")
	if len(l)-len(t) > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return
	}
	c := t[0]
	n := 0
	for n < len(t) && t[n] == c {
		n++
	}
	if n < 3 {
		return
	}
	switch {
	case f.char == 0:
		if c == '`' && strings.Contains(t[n:], "`") {
			return // not a fence: an info string cannot hold a backtick
		}
		*f = fence{char: c, n: n}
	case c == f.char && n >= f.n && strings.TrimSpace(t[n:]) == "":
		*f = fence{}
	}
}

// streamMD renders a text block that is still streaming without flicker.
// The source up to its last paragraph break outside a code fence is
// stable: it is rendered as markdown once, in segments as each paragraph
// completes, and cached. The tail that is still growing is shown as plain
// wrapped text, fence lines hidden and code indented as termmd does, so
// that a half-open fence or half-written emphasis never reflows the lines
// above it. The cost of a delta is the cost of wrapping the tail.
type streamMD struct {
	width  int
	stable int      // bytes of the source covered by lines
	fence  fence    // state at stable (always outside a fence)
	lines  []string // rendered stable segments, separated by blank lines
	tail   plainStream
}

// view returns the block's lines for src, which extends the source of the
// previous call (a source that does not is rendered afresh), as segments
// to show one after the other. They belong to the cache: callers must not
// modify them.
func (s *streamMD) view(md *markdown, src string) [][]string {
	if s.width != md.width || len(src) < s.stable {
		*s = streamMD{width: md.width}
	}
	if b, f := stableBoundary(src, s.stable, s.fence); b > s.stable {
		seg := md.render(src[s.stable:b])
		if len(seg) > 0 {
			if len(s.lines) > 0 {
				s.lines = append(s.lines, "")
			}
			s.lines = append(s.lines, seg...)
		}
		s.stable, s.fence = b, f
		s.tail = plainStream{}
	}
	done, rest := s.tail.parts(tailSource(src[s.stable:]), md.width)
	if len(done) == 0 && (len(rest) == 0 || len(rest) == 1 && rest[0] == "") {
		return [][]string{s.lines[:len(s.lines):len(s.lines)]}
	}
	if len(s.lines) == 0 {
		return [][]string{done, rest}
	}
	return [][]string{s.lines[:len(s.lines):len(s.lines)], blankLine, done, rest}
}

var blankLine = []string{""}

// stable returns the block's lines that no later source can change: the
// rendered segments of the source up to the last stable boundary (as of
// the last view). They belong to the cache: callers must not modify them.
func (s *streamMD) stableLines() []string { return s.lines[:len(s.lines):len(s.lines)] }

// final returns the lines of the finished block src as the stream
// rendered it: the stable segments, then the rest rendered as the last
// one. Lines of a block printed while it streamed (the stable ones) then
// stay what they were, and the rest follows them.
func (s *streamMD) final(md *markdown, src string) []string {
	s.view(md, src)
	out := s.stableLines()
	if rest := md.render(src[s.stable:]); len(rest) > 0 {
		if len(out) > 0 {
			out = append(out, "")
		}
		out = append(out, rest...)
	}
	return out
}

// stableBoundary returns the end of the last line after from that ends a
// markdown block for good, outside a code fence — a blank line, or an ATX
// heading at the line's start (a heading is one line; what follows it
// starts a new block) — and the fence state there; (from, f) when there is
// none. from is at a line start and f is the state at from.
func stableBoundary(src string, from int, f fence) (int, fence) {
	best, bestF := from, f
	cur := f
	for i := from; i < len(src); {
		j := strings.IndexByte(src[i:], '\n')
		if j < 0 {
			break // an incomplete line is never stable
		}
		l := src[i : i+j]
		cur.line(l)
		i += j + 1
		if cur.char == 0 && (strings.TrimSpace(l) == "" || atxHeading(l)) {
			best, bestF = i, cur
		}
	}
	return best, bestF
}

// atxHeading reports whether l is an ATX heading starting at the line's
// start ("## Title"). An indented one may belong to a list item.
func atxHeading(l string) bool {
	n := 0
	for n < len(l) && l[n] == '#' {
		n++
	}
	return n >= 1 && n <= 6 && (n == len(l) || l[n] == ' ' || l[n] == '\t')
}

// tailSource is how the still-growing tail of an answer is shown: fence
// lines are dropped and code is indented, so that the tail looks like what
// the markdown renderer will make of it.
func tailSource(tail string) string {
	if !strings.Contains(tail, "```") && !strings.Contains(tail, "~~~") {
		return strings.TrimLeft(tail, "\n")
	}
	var f fence
	var b strings.Builder
	lines := strings.Split(tail, "\n")
	for i, l := range lines {
		before := f.char
		f.line(l)
		switch {
		case before != f.char: // an opening or closing fence
			continue
		case f.char != 0:
			b.WriteString("  ")
		}
		b.WriteString(l)
		if i < len(lines)-1 {
			b.WriteByte('\n')
		}
	}
	return strings.TrimLeft(b.String(), "\n")
}

// plainStream wraps growing plain text so that a delta costs what is
// new: complete lines are wrapped once, and so are the rows of the last,
// incomplete line but its last row (greedy wrapping never changes them).
// Each call's source must extend the previous one's (blocks only grow
// while they stream); a shorter source or another width starts afresh.
type plainStream struct {
	width int
	done  int      // bytes of the source covered by lines
	lines []string // wrapped rows of the source before done
	// done is at a line start, or inside the last line when rows of it
	// were committed.
}

// parts returns src wrapped: the rows that are final (they belong to the
// cache; callers must not modify them), then those that are not.
func (p *plainStream) parts(src string, width int) (done, rest []string) {
	if p.width != width || len(src) < p.done {
		*p = plainStream{width: width}
	}
	if j := strings.LastIndexByte(src[p.done:], '\n'); j >= 0 {
		end := p.done + j
		p.lines = append(p.lines, wrapPlain(src[p.done:end], width)...)
		p.done = end + 1
	}
	left := src[p.done:]
	if left == "" {
		return p.lines[:len(p.lines):len(p.lines)], nil
	}
	clean := sanitize(left)
	rows, last := wrapLine(clean, width)
	if last > 0 && clean == left {
		// Commit the rows before the last one.
		p.lines = append(p.lines, rows[:len(rows)-1]...)
		p.done += last
		rows = rows[len(rows)-1:]
	}
	return p.lines[:len(p.lines):len(p.lines)], rows
}
