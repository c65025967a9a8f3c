package termmd

import (
	"bytes"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// The GitHub extensions to CommonMark that answers use — tables,
// strikethrough, task list items and bare links (GFM spec 0.29, sections
// 4.10, 6.5, 5.3 and 6.9) — parsed into the nodes of goldmark's
// extension/ast, as goldmark/extension would. That package is not
// imported: its package-level values (the bare-link regular expressions
// above all) are built by every command of the binary at start, 264 KB
// and 2,000 allocations that `sluice -p` never uses; the parsers here are
// values made when a Renderer is.

// gfm is the goldmark option adding the extensions.
func gfm() goldmark.Option {
	return goldmark.WithParserOptions(
		parser.WithParagraphTransformers(util.Prioritized(tableParser{}, 200)),
		parser.WithInlineParsers(
			// Before the link parser (200), which would take "[ ]".
			util.Prioritized(taskParser{}, 0),
			util.Prioritized(strikeParser{}, 500),
			util.Prioritized(bareLinkParser{}, 999),
		),
	)
}

// tableParser turns a paragraph holding a header row, a delimiter row
// and body rows into a table; lines before the header row stay a
// paragraph. As in goldmark/extension (what answers looked like before),
// the first line that reads as a delimiter row decides, and a header with
// fewer cells than the delimiter row is padded (GFM wants them equal).
type tableParser struct{}

func (tableParser) Transform(p *ast.Paragraph, reader text.Reader, pc parser.Context) {
	lines := p.Lines()
	src := reader.Source()
	for i := 1; i < lines.Len(); i++ {
		delim := lines.At(i)
		aligns := delimiterRow(delim.Value(src))
		if aligns == nil {
			continue
		}
		header := lines.At(i - 1)
		if len(cells(src, header)) > len(aligns) {
			return
		}
		t := east.NewTable()
		t.Alignments = aligns
		t.AppendChild(t, east.NewTableHeader(row(src, header, aligns)))
		for j := i + 1; j < lines.Len(); j++ {
			t.AppendChild(t, row(src, lines.At(j), aligns))
		}
		parent := p.Parent()
		if i == 1 {
			parent.ReplaceChild(parent, p, t)
			return
		}
		parent.InsertAfter(parent, p, t)
		kept := text.NewSegments()
		for j := 0; j < i-1; j++ {
			kept.Append(lines.At(j))
		}
		// The paragraph now ends before the header's line: without its
		// line ending, it does not end in a soft break.
		last := kept.At(i - 2)
		if last.Stop > last.Start && src[last.Stop-1] == '\n' {
			last.Stop--
			kept.Set(i-2, last)
		}
		p.SetLines(kept)
		return
	}
}

// row makes a table row of a line, with as many cells as the table has
// columns: cells past them are dropped, missing ones are empty.
func row(src []byte, line text.Segment, aligns []east.Alignment) *east.TableRow {
	r := east.NewTableRow(aligns)
	cs := cells(src, line)
	for i, a := range aligns {
		c := east.NewTableCell()
		c.Alignment = a
		if i < len(cs) && cs[i].Len() > 0 {
			c.Lines().Append(cs[i])
		}
		r.AppendChild(r, c)
	}
	return r
}

// cells splits a row's line at its pipes (not at escaped ones: "\|" is
// left for the inline parser, which makes it a "|"), without the leading
// and the trailing pipe (escaped or not, as goldmark has it) and the
// spaces around each cell; nothing after the last pipe is no cell.
func cells(src []byte, line text.Segment) []text.Segment {
	start, stop := line.Start, line.Stop
	for start < stop && util.IsSpace(src[start]) {
		start++
	}
	for stop > start && util.IsSpace(src[stop-1]) {
		stop--
	}
	if start < stop && src[start] == '|' {
		start++
	}
	if stop > start && src[stop-1] == '|' {
		stop--
	}
	var out []text.Segment
	for from := start; from < stop; {
		i := from
		for i < stop && (src[i] != '|' || i > line.Start && src[i-1] == '\\') {
			i++
		}
		s, e := from, i
		for s < e && util.IsSpace(src[s]) {
			s++
		}
		for e > s && util.IsSpace(src[e-1]) {
			e--
		}
		out = append(out, text.NewSegment(s, e))
		from = i + 1
	}
	return out
}

// delimiterRow returns the column alignments a delimiter row such as
// "| :--- | ---: |" gives, or nil if line is not one: indented less than
// four columns, nothing but dashes, colons, pipes and spaces, and not
// dashes only (a heading's underline or a rule); each cell between pipes
// (a blank one before the first and after the last aside) is dashes with
// an optional colon at either end.
func delimiterRow(line []byte) []east.Alignment {
	if w, _ := util.IndentWidth(line, 0); w > 3 {
		return nil
	}
	dashesOnly := true
	for _, b := range line {
		if b != '-' {
			dashesOnly = false
		}
		if !util.IsSpace(b) && b != '-' && b != '|' && b != ':' {
			return nil
		}
	}
	if dashesOnly {
		return nil
	}
	cols := bytes.Split(line, []byte("|"))
	if util.IsBlank(cols[0]) {
		cols = cols[1:]
	}
	if len(cols) > 0 && util.IsBlank(cols[len(cols)-1]) {
		cols = cols[:len(cols)-1]
	}
	var aligns []east.Alignment
	for _, c := range cols {
		c = bytes.TrimSpace(c)
		left, right := bytes.HasPrefix(c, []byte(":")), bytes.HasSuffix(c, []byte(":"))
		dashes := bytes.TrimSuffix(bytes.TrimPrefix(c, []byte(":")), []byte(":"))
		if len(dashes) == 0 || len(bytes.Trim(dashes, "-")) != 0 {
			return nil
		}
		switch {
		case left && right:
			aligns = append(aligns, east.AlignCenter)
		case left:
			aligns = append(aligns, east.AlignLeft)
		case right:
			aligns = append(aligns, east.AlignRight)
		default:
			aligns = append(aligns, east.AlignNone)
		}
	}
	return aligns
}

// strikeParser reads runs of one or two "~" as delimiters (a run closes
// any open one, as goldmark/extension has it); longer runs are text.
type strikeParser struct{}

func (strikeParser) Trigger() []byte { return []byte{'~'} }

func (s strikeParser) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	before := block.PrecendingCharacter()
	line, segment := block.PeekLine()
	d := parser.ScanDelimiter(line, before, 1, s)
	if d == nil {
		return nil
	}
	run := segment.WithStop(segment.Start + d.OriginalLength)
	block.Advance(d.OriginalLength)
	if d.OriginalLength > 2 {
		return ast.NewTextSegment(run)
	}
	d.Segment = run
	pc.PushDelimiter(d)
	return d
}

func (strikeParser) IsDelimiter(b byte) bool { return b == '~' }

func (strikeParser) CanOpenCloser(opener, closer *parser.Delimiter) bool {
	return opener.Char == closer.Char
}

func (strikeParser) OnMatch(consumes int) ast.Node { return east.NewStrikethrough() }

// taskParser reads the "[ ]" or "[x]" that starts a list item's first
// paragraph, and the white space after it. As in goldmark/extension, none
// needs to follow (GFM wants some).
type taskParser struct{}

func (taskParser) Trigger() []byte { return []byte{'['} }

func (taskParser) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	item, ok := parent.Parent().(*ast.ListItem)
	if !ok || item.FirstChild() != parent || parent.HasChildren() {
		return nil
	}
	line, _ := block.PeekLine()
	if len(line) < 3 || line[0] != '[' || line[2] != ']' || !blank(line[1]) && line[1] != 'x' && line[1] != 'X' {
		return nil
	}
	n := 3
	for n < len(line) && blank(line[n]) {
		n++
	}
	block.Advance(n)
	return east.NewTaskCheckBox(line[1] == 'x' || line[1] == 'X')
}

// blank reports whether b is white space as regular expressions' \s has
// it.
func blank(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\f' || b == '\r'
}

// bareLinkParser links "http://", "https://", "ftp://" and "www."
// addresses and e-mail addresses written without angle brackets, by the
// rules of goldmark/extension's linkify (what answers looked like before:
// its regular expressions, spelled out as scans). It is triggered at the
// start of a line and after a space, "*", "_", "~" or "(".
type bareLinkParser struct{}

func (bareLinkParser) Trigger() []byte { return []byte{' ', '*', '_', '~', '('} }

func (bareLinkParser) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	if pc.IsInLinkLabel() {
		return nil
	}
	line, segment := block.PeekLine()
	lead := 0
	if c := line[0]; c == ' ' || c == '*' || c == '_' || c == '~' || c == '(' {
		lead = 1
	}
	s := line[lead:]
	typ := ast.AutoLinkURL
	var protocol []byte
	n := 0
	for _, scheme := range []string{"http://", "https://", "ftp://"} {
		if bytes.HasPrefix(s, []byte(scheme)) {
			if h := hostLength(s[len(scheme):], true); h > 0 {
				n = len(scheme) + h
			}
			break
		}
	}
	if n == 0 && bytes.HasPrefix(s, []byte("www.")) {
		if h := hostLength(s[len("www."):], false); h > 0 {
			n, protocol = len("www.")+h, []byte("http")
		}
	}
	if n > 0 {
		n = trimLink(s, n)
	} else {
		if n = emailLength(s); n == 0 {
			return nil
		}
		typ = ast.AutoLinkEmail
	}
	// Trailing punctuation is the sentence's, not the link's.
	for n > 1 && bytes.IndexByte([]byte("?!.,:*_~"), s[n-1]) >= 0 {
		n--
	}
	if lead != 0 {
		ast.MergeOrAppendTextSegment(parent, segment.WithStop(segment.Start+1))
	}
	block.Advance(lead + n)
	start := segment.Start + lead
	link := ast.NewAutoLink(typ, ast.NewTextSegment(text.NewSegment(start, start+n)))
	link.Protocol = protocol
	return link
}

// hostLength returns the length of the host, the port and the path at
// the start of s, or 0 if s does not start with a host: 1 to 256
// characters of [-a-zA-Z0-9@:%._+~#=], the longest such run followed by
// "." and lower-case letters; then (for a scheme's address, not a "www."
// one) ":" and digits; then "/", "#" or "?" and URL characters ("$" not
// among them after "www.").
func hostLength(s []byte, scheme bool) int {
	path := "-@:%_+.~#!?&/=();,'\">^{}[]`"
	if scheme {
		path += "$"
	}
	run := 0
	for run < len(s) && in(s[run], "-@:%._+~#=") {
		run++
	}
	k := min(run, 256)
	for ; k >= 1; k-- {
		if k+1 < len(s) && s[k] == '.' && 'a' <= s[k+1] && s[k+1] <= 'z' {
			break
		}
	}
	if k < 1 {
		return 0
	}
	j := k + 1
	for j < len(s) && 'a' <= s[j] && s[j] <= 'z' {
		j++
	}
	if scheme && j+1 < len(s) && s[j] == ':' && util.IsNumeric(s[j+1]) {
		for j += 2; j < len(s) && util.IsNumeric(s[j]); j++ {
		}
	}
	if j < len(s) && (s[j] == '/' || s[j] == '#' || s[j] == '?') {
		for j++; j < len(s) && in(s[j], path); j++ {
		}
	}
	return j
}

// in reports whether b is an ASCII letter or digit or one of chars.
func in(b byte, chars string) bool {
	return util.IsAlphaNumeric(b) || strings.IndexByte(chars, b) >= 0
}

// trimLink shortens a link of n bytes at the start of s: by a final ".",
// by closing parentheses that have no opening one, and by an entity
// reference ("&amp;") that ends it.
func trimLink(s []byte, n int) int {
	switch s[n-1] {
	case '.':
		return n - 1
	case ')':
		if unbalanced := bytes.Count(s[:n], []byte(")")) - bytes.Count(s[:n], []byte("(")); unbalanced > 0 {
			return n - unbalanced
		}
	case ';':
		i := n - 2
		for i >= 0 && util.IsAlphaNumeric(s[i]) {
			i--
		}
		if i >= 0 && i != n-2 && s[i] == '&' {
			return i
		}
	}
	return n
}

// emailLength returns the length of the e-mail address at the start of
// s, or 0: goldmark's address scan, a "." in the domain, a final "."
// left out, and no "-" or "_" right after it.
func emailLength(s []byte) int {
	if len(s) == 0 || util.IsPunct(s[0]) {
		return 0
	}
	stop := util.FindEmailIndex(s)
	if stop < 0 {
		return 0
	}
	at := bytes.IndexByte(s, '@')
	if bytes.IndexByte(s[at:stop-1], '.') < 0 {
		return 0
	}
	if s[stop-1] == '.' {
		stop--
	}
	if stop < len(s) && (s[stop] == '-' || s[stop] == '_') {
		return 0
	}
	return stop
}
