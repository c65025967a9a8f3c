// Package termmd renders markdown for a terminal: styled, word-wrapped
// lines with highlighted code, in the look of Glamour's dark and light
// styles, but for headings, which show without the source's "##".
//
// It exists so that the binary does not link Glamour: Glamour imports
// chroma's lexer and style registries and bluemonday, whose package
// initialisation (~4.5 MB of allocations, 20–30 ms of CPU) every command
// paid at start, `sluice --version` and `sluice -p` included. Nothing here
// is built before a Renderer is: package-level state would be initialised
// by every command too.
package termmd

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Renderer renders markdown at one width. It is not safe for concurrent
// use (the highlighter caches styles).
type Renderer struct {
	width int
	th    theme
	md    goldmark.Markdown
	hl    *highlighter
}

// New returns a renderer wrapping at width columns in the named style:
// "light", or "dark" for any other name.
func New(style string, width int) *Renderer {
	th := themeNamed(style)
	return &Renderer{
		width: max(width, 1),
		th:    th,
		md:    goldmark.New(gfm()),
		hl:    newHighlighter(th.chroma),
	}
}

// Width is the number of columns lines are wrapped at.
func (r *Renderer) Width() int { return r.width }

// Render returns src as lines, none wider than the width (but for code
// lines cut at it), without trailing spaces and without leading or
// trailing blank lines.
func (r *Renderer) Render(src string) []string {
	// Invalid UTF-8 would be measured one way and cut another.
	source := []byte(strings.ToValidUTF8(src, "\uFFFD"))
	root := r.md.Parser().Parse(text.NewReader(source))
	d := &doc{r: r, src: source}
	return d.blocks(root, r.width)
}

// doc renders one parsed document.
type doc struct {
	r   *Renderer
	src []byte
}

func (d *doc) text() style { return style{fg: d.r.th.text} }

// blocks renders n's children one after the other, a blank line between
// two blocks but inside a tight list's items.
func (d *doc) blocks(n ast.Node, width int) []string {
	tight := false
	if li, ok := n.(*ast.ListItem); ok {
		if l, ok := li.Parent().(*ast.List); ok {
			tight = l.IsTight
		}
	}
	var out []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		ls := d.block(c, width)
		if len(ls) == 0 {
			continue
		}
		if len(out) > 0 && !tight {
			out = append(out, "")
		}
		out = append(out, ls...)
	}
	return out
}

func (d *doc) block(n ast.Node, width int) []string {
	th := d.r.th
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		var in inline
		d.inlines(n, d.text(), "", &in)
		return in.wrap(width)
	case *ast.Heading:
		var in inline
		st := style{fg: th.heading, bold: true}
		switch n.Level {
		case 1:
			st = style{fg: th.h1fg, bg: th.h1bg, bold: true}
			// Glamour's badge, less the trailing space the TUI trimmed.
			in.add(" ", st.sgr(), "", true)
			d.inlines(n, st, "", &in)
			return in.wrap(width)
		case 6:
			st = style{fg: th.h6}
		}
		// Glamour writes the "##" of the source before the heading; an
		// answer reads as rendered without it: the colour and weight mark
		// the heading.
		d.inlines(n, st, "", &in)
		return in.wrap(width)
	case *ast.ThematicBreak:
		return []string{paint(style{fg: th.hr}.sgr(), "--------")}
	case *ast.FencedCodeBlock:
		return d.code(n, string(n.Language(d.src)), width)
	case *ast.CodeBlock:
		return d.code(n, "", width)
	case *ast.Blockquote:
		bar := paint(d.text().sgr(), "│")
		inner := d.blocks(n, width-2)
		for i, l := range inner {
			if l == "" {
				inner[i] = bar
			} else {
				inner[i] = bar + " " + l
			}
		}
		return inner
	case *ast.List:
		return d.list(n, width)
	case *ast.HTMLBlock:
		var b strings.Builder
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			b.Write(seg.Value(d.src))
		}
		var out []string
		for _, l := range strings.Split(stripTags(b.String()), "\n") {
			if strings.TrimSpace(l) != "" {
				out = append(out, wrapText(l, d.text().sgr(), width)...)
			}
		}
		return out
	case *east.Table:
		return d.table(n, width)
	}
	if n.Type() == ast.TypeBlock && n.HasChildren() {
		return d.blocks(n, width)
	}
	return nil
}

// code renders a code block two columns in, highlighted when its language
// is known.
func (d *doc) code(n ast.Node, lang string, width int) []string {
	var b strings.Builder
	lines := n.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		b.Write(seg.Value(d.src))
	}
	if f := strings.Fields(lang); len(f) > 0 {
		lang = f[0]
	}
	var out []string
	w := max(width-2, 1)
	for _, l := range d.r.hl.lines(b.String(), lang) {
		for _, row := range strings.Split(ansi.Hardwrap(l, w, true), "\n") {
			out = append(out, strings.TrimRight("  "+row, " "))
		}
	}
	return out
}

func (d *doc) list(l *ast.List, width int) []string {
	var out []string
	i := 0
	for item := l.FirstChild(); item != nil; item = item.NextSibling() {
		marker := "• "
		if l.IsOrdered() {
			marker = fmt.Sprintf("%d. ", l.Start+i)
		}
		if cb := checkBox(item); cb != nil {
			marker = "[ ] "
			if cb.IsChecked {
				marker = "[✓] "
			}
		}
		i++
		mw := ansi.StringWidth(marker)
		content := d.blocks(item, width-mw)
		if len(out) > 0 && !l.IsTight {
			out = append(out, "")
		}
		if len(content) == 0 {
			out = append(out, paint(d.text().sgr(), strings.TrimRight(marker, " ")))
			continue
		}
		out = append(out, paint(d.text().sgr(), marker)+content[0])
		pad := strings.Repeat(" ", mw)
		for _, c := range content[1:] {
			if c == "" {
				out = append(out, "")
			} else {
				out = append(out, pad+c)
			}
		}
	}
	return out
}

// checkBox returns the task check box that starts a list item, if any.
func checkBox(item ast.Node) *east.TaskCheckBox {
	first := item.FirstChild()
	if first == nil {
		return nil
	}
	cb, _ := first.FirstChild().(*east.TaskCheckBox)
	return cb
}

// inlines adds n's inline children to in, in style st, linking to link
// when it is set.
func (d *doc) inlines(n ast.Node, st style, link string, in *inline) {
	th := d.r.th
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			in.add(d.value(c.Segment.Value(d.src)), st.sgr(), link, false)
			switch {
			case c.HardLineBreak():
				in.lineBreak()
			case c.SoftLineBreak():
				in.add(" ", st.sgr(), link, false)
			}
		case *ast.String:
			in.add(d.value(c.Value), st.sgr(), link, false)
		case *ast.CodeSpan:
			code := style{fg: th.codeFg, bg: th.codeBg}
			in.add("\u00a0"+d.plain(c)+"\u00a0", code.sgr(), link, false)
		case *ast.Emphasis:
			s := st
			if c.Level >= 2 {
				s.bold = true
			} else {
				s.italic = true
			}
			d.inlines(c, s, link, in)
		case *east.Strikethrough:
			s := st
			s.crossed = true
			d.inlines(c, s, link, in)
		case *ast.Link:
			url := string(c.Destination)
			d.inlines(c, style{fg: th.linkText, bold: true}, url, in)
			if url != "" && url != d.plain(c) {
				in.add(" ", st.sgr(), "", false)
				in.add(url, style{fg: th.link, underline: true}.sgr(), url, true)
			}
		case *ast.AutoLink:
			url, label := string(c.URL(d.src)), string(c.Label(d.src))
			in.add(label, style{fg: th.link, underline: true}.sgr(), url, true)
		case *ast.Image:
			url := string(c.Destination)
			in.add("Image: "+d.plain(c)+" →", style{fg: th.imageText}.sgr(), "", false)
			in.add(" ", st.sgr(), "", false)
			in.add(url, style{fg: th.image, underline: true}.sgr(), url, true)
		case *east.TaskCheckBox, *ast.RawHTML:
			// The box is the item's marker; raw HTML tags are not shown.
		default:
			d.inlines(c, st, link, in)
		}
	}
}

// value resolves a text segment's backslash escapes and character
// references.
func (d *doc) value(b []byte) string {
	return string(util.UnescapePunctuations(util.ResolveEntityNames(util.ResolveNumericReferences(b))))
}

// plain returns the text of n's inline children without styles.
func (d *doc) plain(n ast.Node) string {
	var b strings.Builder
	var walk func(ast.Node)
	walk = func(n ast.Node) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch c := c.(type) {
			case *ast.Text:
				b.WriteString(d.value(c.Segment.Value(d.src)))
				if c.SoftLineBreak() || c.HardLineBreak() {
					b.WriteByte(' ')
				}
			case *ast.String:
				b.WriteString(d.value(c.Value))
			default:
				walk(c)
			}
		}
	}
	walk(n)
	return b.String()
}

// stripTags removes HTML tags and comments from s, as Glamour's strict
// sanitiser did with HTML in answers.
func stripTags(s string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		end := ">"
		if strings.HasPrefix(s[i:], "<!--") {
			end = "-->"
		}
		j := strings.Index(s[i:], end)
		if j < 0 {
			return b.String()
		}
		s = s[i+j+len(end):]
	}
}
