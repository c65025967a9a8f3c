package tui

import (
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/sluicehq/sluice/internal/termmd"
)

// markdown renders answers at one width. A markdown is used only from the
// Bubble Tea event loop (the renderer caches styles).
type markdown struct {
	width int
	style string
	r     *termmd.Renderer
}

// newMarkdown returns a renderer wrapping at width columns in style
// ("dark" or "light").
func newMarkdown(style string, width int) *markdown {
	return &markdown{width: width, style: style, r: termmd.New(style, width)}
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
// The source up to its last final boundary outside a code fence — a
// paragraph break, a heading, or the start of a tight list's next item —
// is stable: it is rendered as markdown once, a segment at a time, and
// cached. The tail that is still growing is shown as plain wrapped text,
// fence lines hidden and code indented as termmd does, so that a
// half-open fence or half-written emphasis never reflows the lines above
// it. The cost of a delta is the cost of wrapping the tail.
//
// A list's items are segments of their own (an item's nested lines belong
// to it), so a long list goes to the scrollback item by item. A tight
// list that a later blank line turns loose keeps its printed items tight;
// the items after the blank line are separated by blank lines, as a loose
// list's are.
type streamMD struct {
	width  int
	stable int      // bytes of the source covered by lines
	st     mdState  // scanner state at stable (always outside a fence)
	tight  bool     // the segment at stable follows the lines without a blank line
	lines  []string // rendered stable segments
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
	for {
		b, st, tight, ok := nextBoundary(src, s.stable, s.st)
		if !ok {
			break
		}
		s.add(s.render(md, src[s.stable:b]))
		s.stable, s.st, s.tight = b, st, tight
		s.tail = plainStream{}
	}
	done, rest := s.tail.parts(tailSource(src[s.stable:]), md.width)
	if len(done) == 0 && (len(rest) == 0 || len(rest) == 1 && rest[0] == "") {
		return [][]string{s.lines[:len(s.lines):len(s.lines)]}
	}
	if len(s.lines) == 0 || s.tight {
		return [][]string{s.lines[:len(s.lines):len(s.lines)], done, rest}
	}
	return [][]string{s.lines[:len(s.lines):len(s.lines)], blankLine, done, rest}
}

// add appends the rendered segment that starts at stable.
func (s *streamMD) add(seg []string) {
	if len(seg) == 0 {
		return
	}
	if len(s.lines) > 0 && !s.tight {
		s.lines = append(s.lines, "")
	}
	s.lines = append(s.lines, seg...)
}

// render renders the segment seg that starts at stable. An ordered list's
// item, rendered alone, shows the number it has in its list (a list
// numbered "1." throughout counts up). An item's content after a blank
// line is rendered where the item's content starts.
func (s *streamMD) render(md *markdown, seg string) []string {
	l := s.st.list
	if !l.active {
		return md.render(seg)
	}
	first, _, _ := strings.Cut(seg, "\n")
	if m, ok := parseItem(first); ok && l.sibling(m) {
		if m.ordered {
			seg = renumber(seg, m, l.n)
		}
		return md.render(seg)
	}
	in := l.m.content
	if !l.blank || len(first)-len(strings.TrimLeft(first, " ")) < in || md.width <= in+8 {
		return md.render(seg)
	}
	lines := strings.Split(seg, "\n")
	for i, x := range lines {
		k := 0
		for k < in && k < len(x) && x[k] == ' ' {
			k++
		}
		lines[i] = x[k:]
	}
	pad := strings.Repeat(" ", in)
	out := newMarkdown(md.style, md.width-in).render(strings.Join(lines, "\n"))
	for i, x := range out {
		if x != "" {
			out[i] = pad + x
		}
	}
	return out
}

// renumber gives the ordered item seg, whose first line's marker is m,
// the number n, moving the item's indented lines with its content so that
// they stay in the item.
func renumber(seg string, m listMarker, n int) string {
	num := strconv.Itoa(n)
	d := len(num) - (m.numEnd - m.indent)
	lines := strings.Split(seg, "\n")
	lines[0] = lines[0][:m.indent] + num + lines[0][m.numEnd:]
	for i, x := range lines[1:] {
		if len(x)-len(strings.TrimLeft(x, " ")) < m.content {
			continue
		}
		if d > 0 {
			lines[i+1] = strings.Repeat(" ", d) + x
		} else {
			lines[i+1] = x[-d:]
		}
	}
	return strings.Join(lines, "\n")
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
	// The last line is complete now: a list's last item is a segment of
	// its own, as its others are.
	c := *s
	c.lines = slices.Clone(s.lines)
	c.view(md, src+"\n")
	out := c.stableLines()
	if rest := c.render(md, (src + "\n")[min(c.stable, len(src)):]); len(rest) > 0 {
		if len(out) > 0 && !c.tight {
			out = append(out, "")
		}
		out = append(out, rest...)
	}
	return out
}

// mdState is what the boundary scanner knows at a line start.
type mdState struct {
	fence fence
	list  listState
}

// listState is the list whose item the scanner is in, if any.
type listState struct {
	active bool
	m      listMarker // the current item's marker
	n      int        // the number the next item of an ordered list shows
	loose  bool       // a blank line separated two of its items
	blank  bool       // the last line was blank
}

// sibling reports whether an item line m is the list's next item (and not
// a nested one or another list's).
func (l listState) sibling(m listMarker) bool {
	return m.indent < l.m.content && m.ordered == l.m.ordered && m.mark == l.m.mark
}

// listMarker is how a list item's first line starts.
type listMarker struct {
	indent  int  // columns before the marker
	mark    byte // '-', '*' or '+'; an ordered item's delimiter '.' or ')'
	ordered bool
	num     int // an ordered item's number
	numEnd  int // the end of its digits
	content int // the column its content starts at
}

// parseItem returns the marker of l when l is a list item's first line
// with text after the marker (an empty item never counts: it cannot
// interrupt a paragraph, and "-" may still be a setext underline).
func parseItem(l string) (listMarker, bool) {
	var m listMarker
	for m.indent < len(l) && l[m.indent] == ' ' {
		m.indent++
	}
	if m.indent > 3 || m.indent == len(l) || thematicBreak(l) {
		return m, false
	}
	i := m.indent
	switch c := l[i]; {
	case c == '-' || c == '*' || c == '+':
		m.mark = c
		i++
	case c >= '0' && c <= '9':
		j := i
		for j < len(l) && j-i < 9 && l[j] >= '0' && l[j] <= '9' {
			j++
		}
		if j == len(l) || (l[j] != '.' && l[j] != ')') {
			return m, false
		}
		m.ordered, m.mark, m.numEnd = true, l[j], j
		m.num, _ = strconv.Atoi(l[i:j])
		i = j + 1
	default:
		return m, false
	}
	sp := 0
	for i+sp < len(l) && l[i+sp] == ' ' {
		sp++
	}
	if sp == 0 || strings.TrimSpace(l[i:]) == "" {
		return m, false
	}
	if sp > 4 {
		sp = 1 // indented code inside the item
	}
	m.content = i + sp
	return m, true
}

// thematicBreak reports whether l is a thematic break ("---", "* * *").
func thematicBreak(l string) bool {
	t := strings.TrimSpace(l)
	if len(l)-len(strings.TrimLeft(l, " ")) > 3 || t == "" || !strings.ContainsRune("-*_", rune(t[0])) {
		return false
	}
	n := 0
	for _, r := range t {
		switch {
		case r == rune(t[0]):
			n++
		case r != ' ' && r != '\t':
			return false
		}
	}
	return n >= 3
}

// interrupts reports whether l, less indented than the current item's
// content and after a line of it, ends the list rather than continuing
// the item's paragraph lazily.
func interrupts(l string, f fence) bool {
	t := strings.TrimLeft(l, " ")
	if atxHeading(t) || thematicBreak(l) || strings.HasPrefix(t, ">") {
		return true
	}
	f.line(l)
	if f.char != 0 {
		return true
	}
	m, ok := parseItem(l)
	return ok && (!m.ordered || m.num == 1)
}

// nextBoundary returns the first boundary after from (a line start where
// the scanner is in state st): the end of a blank line or of an ATX
// heading at the line's start (a heading is one line; what follows it
// starts a new block), the start of a list that interrupts a paragraph,
// the start of a list's next item (tight when no blank line came between
// its items), or the first line after a list; all outside a code fence.
// It returns the state there, and whether the segment there follows the
// one before without a blank line; ok is false when there is none yet.
// Only complete lines are read: an incomplete line is never stable.
func nextBoundary(src string, from int, st mdState) (end int, _ mdState, tight, ok bool) {
	cur := st
	for i := from; i < len(src); {
		j := strings.IndexByte(src[i:], '\n')
		if j < 0 {
			break
		}
		l := src[i : i+j]
		next := i + j + 1
		if cur.fence.char != 0 {
			cur.fence.line(l)
			i = next
			continue
		}
		blank := strings.TrimSpace(l) == ""
		if lst := &cur.list; lst.active {
			if blank {
				lst.blank = true
				return next, cur, false, true
			}
			m, item := parseItem(l)
			indent := len(l) - len(strings.TrimLeft(l, " "))
			switch {
			case item && lst.sibling(m):
				if i > from {
					return i, cur, !lst.blank && !lst.loose, true
				}
				if lst.blank {
					lst.loose = true
				}
				lst.m, lst.n, lst.blank = m, lst.n+1, false
				cur.fence.line(l)
				i = next
				continue
			case indent >= lst.m.content || !lst.blank && !interrupts(l, cur.fence):
				// The item's own content, or a lazy continuation line.
				if lst.blank {
					lst.loose = true
				}
				lst.blank = false
				cur.fence.line(l)
				i = next
				continue
			}
			// The list ends before l.
			cur.list = listState{}
			if i > from {
				return i, cur, false, true
			}
		}
		if m, item := parseItem(l); item {
			if i > from && !strings.HasPrefix(strings.TrimLeft(src[from:], " "), "<") &&
				(!m.ordered || m.num == 1) {
				return i, cur, false, true // a list interrupting a paragraph
			}
			if i == from {
				cur.list = listState{active: true, m: m, n: m.num + 1}
				cur.fence.line(l)
				i = next
				continue
			}
		}
		cur.fence.line(l)
		i = next
		if cur.fence.char == 0 && (blank || atxHeading(l)) {
			return i, cur, false, true
		}
	}
	return from, st, false, false
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

// atxHeading reports whether l is an ATX heading starting at the line's
// start ("## Title"). An indented one may belong to a list item.
func atxHeading(l string) bool {
	n := 0
	for n < len(l) && l[n] == '#' {
		n++
	}
	return n >= 1 && n <= 6 && (n == len(l) || l[n] == ' ' || l[n] == '\t')
}
