package termmd

import (
	"strings"

	"github.com/alecthomas/chroma/v2"
)

// highlighter colours code with a theme's chroma entries in xterm-256
// colours, as chroma's terminal256 formatter does.
type highlighter struct {
	style *chroma.Style
	sgr   map[chroma.TokenType]string
}

func newHighlighter(entries chroma.StyleEntries) *highlighter {
	st, err := chroma.NewStyle("sluice", entries)
	if err != nil {
		// The entries are this package's own; a failure is a bug here.
		panic(err)
	}
	return &highlighter{style: st, sgr: map[chroma.TokenType]string{}}
}

func (h *highlighter) sgrOf(t chroma.TokenType) string {
	if s, ok := h.sgr[t]; ok {
		return s
	}
	e := h.style.Get(t)
	var st style
	if e.Colour.IsSet() {
		st.fg = xterm256(e.Colour)
	}
	st.bold = e.Bold == chroma.Yes
	st.italic = e.Italic == chroma.Yes
	st.underline = e.Underline == chroma.Yes
	s := st.sgr()
	h.sgr[t] = s
	return s
}

// lines returns code (without its final newline) as coloured lines; a
// language without a lexer gets the text colour throughout.
func (h *highlighter) lines(code, lang string) []string {
	code = strings.TrimSuffix(code, "\n")
	lexer := lexerFor(lang)
	var it chroma.Iterator
	if lexer != nil {
		var err error
		it, err = chroma.Coalesce(lexer).Tokenise(nil, code)
		if err != nil {
			lexer = nil
		}
	}
	if lexer == nil {
		text := h.sgrOf(chroma.Text)
		var out []string
		for _, l := range strings.Split(code, "\n") {
			out = append(out, paint(text, l))
		}
		return out
	}
	var out []string
	var cur strings.Builder
	for tok := it(); tok != chroma.EOF; tok = it() {
		sgr := h.sgrOf(tok.Type)
		parts := strings.Split(tok.Value, "\n")
		for i, p := range parts {
			if i > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
			cur.WriteString(paint(sgr, p))
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	// Lexers that ensure a final newline leave an empty last line.
	for len(out) > 0 && out[len(out)-1] == "" && len(out) > strings.Count(code, "\n")+1 {
		out = out[:len(out)-1]
	}
	return out
}
