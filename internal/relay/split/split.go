// Package split cuts a long text into chat messages that each fit a
// platform's length limit, measured the platform's way (UTF-16 code units).
//
// A text goes out in as few messages as the limit allows: first the fewest
// messages is found, cutting each as late as the rules below let it; then
// each cut is made at the best place that keeps that number. Where to cut,
// in order of preference: between paragraphs, then at a line break, then
// after a sentence end (。！？ anywhere, . ! ? before white space), then at
// a space; only where a message's window holds none of these, anywhere — but
// never inside a grapheme cluster (a character with its combining marks, a
// surrogate pair, an emoji sequence), unless a single cluster is longer than
// a whole message, and then only between code points. A cut inside a fenced code block closes
// the fence at the end of one message and reopens it, with the same info
// string, at the start of the next. Runs of blank lines inside a message are
// kept as they are.
//
// Nothing is lost: the Body and Sep fields of the parts, concatenated, give
// back the input exactly; Reopen and Close are the fence repairs.
package split

import (
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// Message length limits of the platforms, in UTF-16 code units.
const (
	WeChatLimit   = 4000
	TelegramLimit = 4096
)

// MinLimit is the smallest limit Split accepts: one code point of any kind
// must fit in a message, or no progress could be made.
const MinLimit = 2

// Units returns the length of s in UTF-16 code units, the measure both
// platforms apply to a message. An invalid UTF-8 byte counts as one unit,
// as it becomes U+FFFD on the wire.
func Units(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// Part is one message of a split text.
type Part struct {
	// Reopen repeats the opener line of a code fence that an earlier cut
	// interrupted, with its line break; empty otherwise.
	Reopen string
	// Body is the piece of the input this message carries.
	Body string
	// Close closes a code fence left open by the cut after Body; empty
	// otherwise.
	Close string
	// Sep is the white space of the input at the cut after Body (a
	// blank-line run, a line break, spaces). It is not sent; it is kept so
	// that the parts account for every byte of the input.
	Sep string
}

// Text is what the message says.
func (p Part) Text() string { return p.Reopen + p.Body + p.Close }

// Messages splits text and returns the texts of the parts that are not
// blank.
func Messages(text string, limit int) []string {
	var out []string
	for _, p := range Split(text, limit) {
		if t := p.Text(); strings.TrimSpace(t) != "" {
			out = append(out, t)
		}
	}
	return out
}

// Split cuts text into parts whose Text is at most limit UTF-16 code units
// long. An empty text has no parts. It panics if limit < MinLimit.
func Split(text string, limit int) []Part {
	if limit < MinLimit {
		panic("split: limit below MinLimit")
	}
	if text == "" {
		return nil
	}
	s := newScanner(text)
	var parts []Part
	for pos := 0; pos < len(text); {
		reopen := ""
		if f := s.fenceAt(pos); f != nil {
			reopen = f.opener + "\n"
		}
		if Units(reopen)+s.units(pos, len(text)) <= limit {
			parts = append(parts, Part{Reopen: reopen, Body: text[pos:]})
			break
		}
		// The best cut that leaves a rest needing no more messages than
		// the fullest cut's rest.
		full := s.next(pos, limit)
		p := s.part(pos, limit, func(rest int) bool { return s.noMore(rest, full, limit) })
		parts = append(parts, p)
		pos += len(p.Body) + len(p.Sep)
	}
	return parts
}

// part cuts the message that starts at pos (the rest not fitting): at the
// first kind of cut, in order of preference, whose latest place accept
// takes, or else at the latest place of any kind.
func (s *scanner) part(pos, limit int, accept func(restStart int) bool) Part {
	reopen := ""
	if f := s.fenceAt(pos); f != nil {
		reopen = f.opener + "\n"
	}
	p, ok := s.cutWithRepairs(pos, reopen, limit, accept)
	if !ok {
		// The repairs leave no room for even one code point (an absurdly
		// long fence opener): cut without them.
		bodyEnd, restStart, _ := s.cut(pos, limit, accept)
		p = Part{Body: s.text[pos:bodyEnd], Sep: s.text[bodyEnd:restStart]}
	}
	return p
}

// fullest accepts no cut, so that part cuts at the latest place.
func fullest(int) bool { return false }

// next returns where the message after the one starting at pos starts when
// that one is cut at its latest place (len(text) when the rest fits).
// Results are memoized: the chains of cuts from nearby starts soon join.
func (s *scanner) next(pos, limit int) int {
	if n, ok := s.nexts[pos]; ok {
		return n
	}
	n := len(s.text)
	reopen := 0
	if f := s.fenceAt(pos); f != nil {
		reopen = Units(f.opener) + 1
	}
	if reopen+s.units(pos, len(s.text)) > limit {
		p := s.part(pos, limit, fullest)
		n = pos + len(p.Body) + len(p.Sep)
	}
	s.nexts[pos] = n
	return n
}

// noMore reports whether the text from rest takes no more messages than
// the text from full, rest <= full, when every message is cut at its latest
// place — the fewest the rules allow, as a later start never needs more
// messages. The two chains of cuts are walked side by side until the first
// catches up with the second or the second ends.
func (s *scanner) noMore(rest, full, limit int) bool {
	for rest < full {
		if full == len(s.text) {
			return false
		}
		rest, full = s.next(rest, limit), s.next(full, limit)
	}
	return true
}

// cutWithRepairs finds the cut after pos for a message that starts with
// reopen, leaving room for the fence it may have to close.
func (s *scanner) cutWithRepairs(pos int, reopen string, limit int, accept func(restStart int) bool) (Part, bool) {
	budget := limit - Units(reopen)
	for budget > 0 {
		bodyEnd, restStart, ok := s.cut(pos, budget, accept)
		if !ok {
			return Part{}, false
		}
		closing := s.closing(bodyEnd)
		if s.units(pos, bodyEnd)+Units(closing) <= budget {
			return Part{Reopen: reopen, Body: s.text[pos:bodyEnd], Close: closing, Sep: s.text[bodyEnd:restStart]}, true
		}
		// Reserve room for the closing fence and look again; the budget
		// shrinks every time, so this ends.
		budget = min(budget-1, limit-Units(reopen)-Units(closing))
	}
	return Part{}, false
}

// closing returns what closes the fence open at a cut whose body ends at
// bodyEnd, or "".
func (s *scanner) closing(bodyEnd int) string {
	f := s.fenceAt(bodyEnd)
	if f == nil {
		return ""
	}
	if bodyEnd > 0 && s.text[bodyEnd-1] == '\n' {
		return f.marker
	}
	return "\n" + f.marker
}

// fence is a fenced code block of the text.
type fence struct {
	opener string // the opener line, without its line break
	marker string // the closing marker: the opener's run of ` or ~
	// openStart is the offset of the opener line.
	openStart int
	// openEnd is the offset just after the opener line's text; closeStart
	// the offset of the closing line, or the text's length when the fence
	// is never closed. A cut at an offset in [openEnd, closeStart] is
	// inside the fence.
	openEnd, closeStart int
}

// scanner holds what Split needs to know about every offset of the text.
type scanner struct {
	text string
	// unitsBefore[i] is the number of UTF-16 units before byte offset i,
	// for i at a code point start or at len(text).
	unitsBefore []int
	runeStart   []bool // offset i starts a code point (or is len(text))
	cluster     []bool // offset i starts a grapheme cluster (or is len(text))
	blankEnd    []int  // blankEnd[i] is the first offset >= i not a blank
	// spaceStart[i] is the smallest j such that text[j:i] is all blanks
	// and line breaks.
	spaceStart []int
	fences     []fence
	nexts      map[int]int // next's memo
}

func newScanner(text string) *scanner {
	n := len(text)
	s := &scanner{
		text:        text,
		unitsBefore: make([]int, n+1),
		runeStart:   make([]bool, n+1),
		cluster:     make([]bool, n+1),
		blankEnd:    make([]int, n+1),
		spaceStart:  make([]int, n+1),
		nexts:       map[int]int{},
	}
	for i := 1; i <= n; i++ {
		if c := text[i-1]; isBlank(c) || c == '\n' {
			s.spaceStart[i] = s.spaceStart[i-1]
		} else {
			s.spaceStart[i] = i
		}
	}
	s.blankEnd[n] = n
	for i := n - 1; i >= 0; i-- {
		if isBlank(text[i]) {
			s.blankEnd[i] = s.blankEnd[i+1]
		} else {
			s.blankEnd[i] = i
		}
	}
	units := 0
	for i := 0; i < n; {
		r, size := utf8.DecodeRuneInString(text[i:])
		s.runeStart[i] = true
		for j := i; j < i+size; j++ {
			s.unitsBefore[j] = units
		}
		if r >= 0x10000 {
			units += 2
		} else {
			units++
		}
		i += size
	}
	s.unitsBefore[n] = units
	s.runeStart[n] = true
	state := -1
	for off, rest := 0, text; rest != ""; {
		s.cluster[off] = true
		var c string
		c, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		off += len(c)
	}
	s.cluster[n] = true
	s.fences = scanFences(text)
	return s
}

func (s *scanner) units(from, to int) int { return s.unitsBefore[to] - s.unitsBefore[from] }

// fenceAt returns the fence a cut at offset p is inside of, or nil.
func (s *scanner) fenceAt(p int) *fence {
	if p >= len(s.text) {
		return nil
	}
	i := sort.Search(len(s.fences), func(i int) bool { return s.fences[i].closeStart >= p })
	if i < len(s.fences) && s.fences[i].openEnd <= p {
		return &s.fences[i]
	}
	return nil
}

// inOpener reports whether a cut at offset p falls inside a fence's opener
// line, which would leave its info string behind.
func (s *scanner) inOpener(p int) bool {
	i := sort.Search(len(s.fences), func(i int) bool { return s.fences[i].openEnd >= p })
	return i < len(s.fences) && s.fences[i].openStart < p && p < s.fences[i].openEnd
}

// windowEnd returns the largest code point start e >= pos such that
// text[pos:e] is at most budget units.
func (s *scanner) windowEnd(pos, budget int) int {
	target := s.unitsBefore[pos] + budget
	// unitsBefore is non-decreasing; find the first offset past target.
	e := pos + sort.Search(len(s.text)-pos+1, func(k int) bool { return s.unitsBefore[pos+k] > target }) - 1
	for e > pos && !s.runeStart[e] {
		e--
	}
	return e
}

// cut chooses where the message starting at pos ends when the rest does not
// fit in budget units: the body is text[pos:bodyEnd], the next message
// starts at restStart. It takes the latest paragraph end, line end,
// sentence end or space, the first of these kinds whose cut accept takes,
// or else the latest of them all. ok is false when not even one code point
// fits.
func (s *scanner) cut(pos, budget int, accept func(restStart int) bool) (bodyEnd, restStart int, ok bool) {
	wend := s.windowEnd(pos, budget)
	if wend == len(s.text) {
		return wend, wend, true
	}
	for _, find := range []func(pos, wend int) int{s.paragraphCut, s.lineCut, s.sentenceCut, s.spaceCut} {
		if e := find(pos, wend); e > pos && !s.inOpener(e) {
			rest := s.sepEnd(e)
			if accept(rest) {
				return e, rest, true
			}
			if rest > restStart {
				bodyEnd, restStart = e, rest
			}
		}
	}
	if restStart > 0 {
		return bodyEnd, restStart, true
	}
	for e := wend; e > pos; e-- {
		if s.cluster[e] {
			return e, e, true
		}
	}
	// One grapheme cluster is longer than the whole budget: cut it between
	// code points, the least harm left.
	if wend > pos {
		return wend, wend, true
	}
	return 0, 0, false
}

func isBlank(b byte) bool { return b == ' ' || b == '\t' || b == '\r' }

// bodyEndBefore returns where the body that starts at pos ends for a cut at
// the line break at offset nl: before all the white space there, blank
// lines included; pos when there is nothing else.
func (s *scanner) bodyEndBefore(pos, nl int) int {
	return max(pos, s.spaceStart[nl])
}

// lineBreaks calls try with the offsets of the line breaks that a body
// ending in (pos, wend] may be cut at, latest first, until try returns a
// body end.
func (s *scanner) lineBreaks(pos, wend int, try func(pos, nl int) int) int {
	// A break just past the window still counts when only blanks lie
	// between: they are dropped with the break.
	ext := wend
	if b := s.blankEnd[wend]; b < len(s.text) && s.text[b] == '\n' {
		ext = b
	}
	for nl := pos + strings.LastIndexByte(s.text[pos:ext+1], '\n'); nl >= pos; nl = pos + strings.LastIndexByte(s.text[pos:nl], '\n') {
		if e := try(pos, nl); e > pos && e <= wend && s.cluster[e] {
			return e
		}
	}
	return 0
}

// paragraphCut returns the latest body end in (pos, wend] that ends a
// paragraph (a line followed by a blank line), or 0.
func (s *scanner) paragraphCut(pos, wend int) int {
	return s.lineBreaks(pos, wend, func(pos, nl int) int {
		if !s.blankLineAfter(nl) {
			return 0
		}
		return s.bodyEndBefore(pos, nl)
	})
}

// blankLineAfter reports whether the line after the line break at nl is
// blank.
func (s *scanner) blankLineAfter(nl int) bool {
	for i := nl + 1; i < len(s.text); i++ {
		switch c := s.text[i]; {
		case c == '\n':
			return true
		case !isBlank(c):
			return false
		}
	}
	return false
}

// lineCut returns the latest body end in (pos, wend] that ends a line, or 0.
func (s *scanner) lineCut(pos, wend int) int {
	return s.lineBreaks(pos, wend, s.bodyEndBefore)
}

// sentenceCut returns the latest body end in (pos, wend] just after a
// sentence end, or 0. 。！？ end a sentence wherever they are; . ! ? only
// before white space, so that 3.14 and a.b stay whole.
func (s *scanner) sentenceCut(pos, wend int) int {
	for e := wend; e > pos; e-- {
		if !s.runeStart[e] || !s.cluster[e] {
			continue
		}
		r, _ := utf8.DecodeLastRuneInString(s.text[pos:e])
		switch r {
		case '。', '！', '？':
			return e
		case '.', '!', '?':
			if e < len(s.text) && (isBlank(s.text[e]) || s.text[e] == '\n') {
				return e
			}
		}
	}
	return 0
}

// spaceCut returns the latest body end in (pos, wend] where a run of spaces
// starts, or 0.
func (s *scanner) spaceCut(pos, wend int) int {
	for e := wend; e > pos; e-- {
		if (s.text[e] == ' ' || s.text[e] == '\t') && !isBlank(s.text[e-1]) && s.cluster[e] {
			return e
		}
	}
	return 0
}

// sepEnd returns where the next message starts after a body ending at e:
// past the white space there, but not past the indentation of the next
// line, and on a grapheme cluster start.
func (s *scanner) sepEnd(e int) int {
	end, lastNL := e, -1
	for end < len(s.text) && (isBlank(s.text[end]) || s.text[end] == '\n') {
		if s.text[end] == '\n' {
			lastNL = end
		}
		end++
	}
	if lastNL >= 0 {
		end = lastNL + 1
	}
	for end > e && !s.cluster[end] {
		end--
	}
	return end
}

// scanFences finds the fenced code blocks of text, in order, following
// CommonMark: an opener is a line indented by at most three spaces that
// starts with at least three backticks (whose info string has no backtick)
// or tildes; the closer is the same character, at least as many, and
// nothing else but spaces. A fence never closed runs to the end.
func scanFences(text string) []fence {
	var fences []fence
	var open *fence
	var openChar byte
	var openLen int
	for start := 0; start < len(text); {
		end := strings.IndexByte(text[start:], '\n')
		next := len(text)
		if end < 0 {
			end = len(text)
		} else {
			end += start
			next = end + 1
		}
		line := strings.TrimSuffix(text[start:end], "\r")
		if open == nil {
			if c, n, ok := fenceOpener(line); ok {
				fences = append(fences, fence{
					opener:    line,
					marker:    strings.Repeat(string(c), n),
					openStart: start,
					openEnd:   start + len(line),
				})
				open, openChar, openLen = &fences[len(fences)-1], c, n
			}
		} else if fenceCloser(line, openChar, openLen) {
			open.closeStart = start
			open = nil
		}
		start = next
	}
	if open != nil {
		open.closeStart = len(text)
	}
	return fences
}

// fenceIndent strips up to three leading spaces; ok is false when the line
// is indented more (an indented code block, not a fence).
func fenceIndent(line string) (string, bool) {
	for i := 0; i < 3 && strings.HasPrefix(line, " "); i++ {
		line = line[1:]
	}
	return line, !strings.HasPrefix(line, " ")
}

func fenceOpener(line string) (c byte, n int, ok bool) {
	line, ok = fenceIndent(line)
	if !ok || line == "" || (line[0] != '`' && line[0] != '~') {
		return 0, 0, false
	}
	c = line[0]
	for n < len(line) && line[n] == c {
		n++
	}
	if n < 3 || (c == '`' && strings.IndexByte(line[n:], '`') >= 0) {
		return 0, 0, false
	}
	return c, n, true
}

func fenceCloser(line string, c byte, n int) bool {
	line, ok := fenceIndent(line)
	if !ok {
		return false
	}
	k := 0
	for k < len(line) && line[k] == c {
		k++
	}
	return k >= n && strings.Trim(line[k:], " \t") == ""
}
