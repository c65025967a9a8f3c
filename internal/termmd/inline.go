package termmd

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/rivo/uniseg"
)

// inline is a paragraph's text as a sequence of styled fragments, spaces
// and line breaks, to be wrapped.
type inline struct {
	toks []tok
}

type tokKind uint8

const (
	fragment tokKind = iota
	space
	lineBreak
)

type tok struct {
	kind       tokKind
	text, sgr  string
	link       string // hyperlink target, "" for none
	unbreaking bool   // a fragment that holds spaces but is one word
}

// add appends text in a style; spaces in it are places to break a line
// unless whole is set.
func (in *inline) add(text, sgr, link string, whole bool) {
	if text == "" {
		return
	}
	if whole {
		in.toks = append(in.toks, tok{kind: fragment, text: text, sgr: sgr, link: link, unbreaking: true})
		return
	}
	for text != "" {
		i := strings.IndexAny(text, " \n\t")
		switch {
		case i < 0:
			in.toks = append(in.toks, tok{kind: fragment, text: text, sgr: sgr, link: link})
			return
		case i > 0:
			in.toks = append(in.toks, tok{kind: fragment, text: text[:i], sgr: sgr, link: link})
			text = text[i:]
			continue
		}
		j := 0
		for j < len(text) && (text[j] == ' ' || text[j] == '\n' || text[j] == '\t') {
			j++
		}
		if n := len(in.toks); n == 0 || in.toks[n-1].kind != space {
			in.toks = append(in.toks, tok{kind: space, sgr: sgr})
		}
		text = text[j:]
	}
}

func (in *inline) lineBreak() { in.toks = append(in.toks, tok{kind: lineBreak}) }

// wrap lays the text out in rows of at most width columns: greedily, a
// word wider than a row cut by grapheme. Spaces at the start or end of a
// row are dropped.
func (in *inline) wrap(width int) []string {
	width = max(width, 1)
	var rows []string
	var row runs
	rowW := 0
	var gap *tok // the space before the next word, if any
	flush := func() {
		rows = append(rows, row.String())
		row = runs{}
		rowW, gap = 0, nil
	}
	toks := in.toks
	for i := 0; i < len(toks); {
		switch toks[i].kind {
		case lineBreak:
			flush()
			i++
			continue
		case space:
			if rowW > 0 {
				gap = &toks[i]
			}
			i++
			continue
		}
		// A word: the fragments up to the next space or break.
		j := i
		w := 0
		for j < len(toks) && toks[j].kind == fragment {
			w += ansi.StringWidth(toks[j].text)
			j++
		}
		if rowW > 0 && rowW+1+w > width {
			flush()
		}
		if gap != nil && rowW > 0 {
			row.write(" ", gap.sgr, "")
			rowW++
		}
		gap = nil
		for _, f := range toks[i:j] {
			fw := ansi.StringWidth(f.text)
			if rowW+fw <= width {
				row.write(f.text, f.sgr, f.link)
				rowW += fw
				continue
			}
			// Wider than what is left of the row: cut it.
			for rest := f.text; rest != ""; {
				var piece strings.Builder
				for rest != "" {
					g, r, gw, _ := uniseg.FirstGraphemeClusterInString(rest, -1)
					if rowW > 0 && rowW+gw > width {
						break
					}
					piece.WriteString(g)
					rowW += gw
					rest = r
				}
				if piece.Len() > 0 {
					row.write(piece.String(), f.sgr, f.link)
				}
				if rest != "" {
					flush()
				}
			}
		}
		i = j
	}
	if row.b.Len() > 0 || row.run.Len() > 0 || len(rows) == 0 {
		rows = append(rows, row.String())
	}
	return rows
}

// runs builds a row, painting each run of text in one style and link
// once rather than each word.
type runs struct {
	b         strings.Builder
	run       strings.Builder
	sgr, link string
}

func (r *runs) write(text, sgr, link string) {
	if r.run.Len() > 0 && (sgr != r.sgr || link != r.link) {
		r.end()
	}
	r.sgr, r.link = sgr, link
	r.run.WriteString(text)
}

func (r *runs) end() {
	s := paint(r.sgr, r.run.String())
	if r.link != "" {
		s = ansi.SetHyperlink(r.link) + s + ansi.ResetHyperlink()
	}
	r.b.WriteString(s)
	r.run.Reset()
}

func (r *runs) String() string {
	if r.run.Len() > 0 {
		r.end()
	}
	return r.b.String()
}

// wrapText wraps plain text in one style.
func wrapText(s, sgr string, width int) []string {
	var in inline
	in.add(s, sgr, "", false)
	return in.wrap(width)
}
