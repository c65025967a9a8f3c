package termmd

import (
	"bytes"

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
// paragraph.
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
		if len(cells(src, header)) != len(aligns) {
			continue
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
// and trailing pipe and the spaces around each cell.
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
	if stop > start && src[stop-1] == '|' && (stop-2 < start || src[stop-2] != '\\') {
		stop--
	}
	var out []text.Segment
	from := start
	for i := start; i <= stop; i++ {
		if i < stop && (src[i] != '|' || i > line.Start && src[i-1] == '\\') {
			continue
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
// "| :--- | ---: |" gives, or nil if line is not one. Without a pipe a
// line of dashes is not a delimiter row (it is a heading's underline or a
// list item).
func delimiterRow(line []byte) []east.Alignment {
	line = bytes.TrimSpace(line)
	if bytes.IndexByte(line, '|') < 0 {
		return nil
	}
	line = bytes.TrimPrefix(line, []byte("|"))
	line = bytes.TrimSuffix(line, []byte("|"))
	var aligns []east.Alignment
	for _, c := range bytes.Split(line, []byte("|")) {
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
// paragraph, followed by a space or the line's end.
type taskParser struct{}

func (taskParser) Trigger() []byte { return []byte{'['} }

func (taskParser) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	item, ok := parent.Parent().(*ast.ListItem)
	if !ok || item.FirstChild() != parent || parent.HasChildren() {
		return nil
	}
	line, _ := block.PeekLine()
	if len(line) < 3 || line[0] != '[' || line[2] != ']' || len(line) > 3 && !util.IsSpace(line[3]) {
		return nil
	}
	switch line[1] {
	case ' ':
		block.Advance(3)
		return east.NewTaskCheckBox(false)
	case 'x', 'X':
		block.Advance(3)
		return east.NewTaskCheckBox(true)
	}
	return nil
}

// bareLinkParser links "http://", "https://" and "www." addresses written
// without angle brackets (GFM's extended autolinks; e-mail addresses are
// left as text). It is triggered at the start of a line and after a
// space, "*", "_", "~" or "(".
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
	rest := line[lead:]
	var protocol []byte
	var host int // where the domain starts
	switch {
	case bytes.HasPrefix(rest, []byte("https://")):
		host = len("https://")
	case bytes.HasPrefix(rest, []byte("http://")):
		host = len("http://")
	case bytes.HasPrefix(rest, []byte("www.")):
		host, protocol = len("www."), []byte("http")
	default:
		return nil
	}
	n := linkLength(rest, host)
	if n == 0 {
		return nil
	}
	if lead != 0 {
		ast.MergeOrAppendTextSegment(parent, segment.WithStop(segment.Start+1))
	}
	block.Advance(lead + n)
	start := segment.Start + lead
	link := ast.NewAutoLink(ast.AutoLinkURL, ast.NewTextSegment(text.NewSegment(start, start+n)))
	link.Protocol = protocol
	return link
}

// linkLength returns how much of s, whose domain starts at host, is a
// bare link, or 0 if it is none: the domain (letters, digits, "-", "_"
// and "."; a "." followed by a letter in it), then everything up to a
// space or "<", less trailing punctuation, closing parentheses that are
// not balanced and a trailing entity reference such as "&amp;".
func linkLength(s []byte, host int) int {
	i, tld := host, false
	for ; i < len(s); i++ {
		c := s[i]
		if c == '.' && i+1 < len(s) && 'a' <= s[i+1] && s[i+1] <= 'z' {
			tld = true
		} else if c != '.' && !util.IsAlphaNumeric(c) && c != '-' && c != '_' {
			break
		}
	}
	if !tld {
		return 0
	}
	for i < len(s) && !util.IsSpace(s[i]) && s[i] != '<' {
		i++
	}
	for i > host {
		switch s[i-1] {
		case '?', '!', '.', ',', ':', '*', '_', '~':
			i--
			continue
		case ')':
			if bytes.Count(s[:i], []byte(")")) > bytes.Count(s[:i], []byte("(")) {
				i--
				continue
			}
		case ';':
			j := i - 2
			for j > host && util.IsAlphaNumeric(s[j]) {
				j--
			}
			if j < i-2 && s[j] == '&' {
				i = j
				continue
			}
		}
		break
	}
	return i
}
