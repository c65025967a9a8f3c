package termmd

import (
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/chroma/v2"
	"github.com/charmbracelet/x/ansi"
)

func stripped(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = ansi.Strip(l)
	}
	return out
}

func TestRender(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		src   string
		width int
		want  []string
	}{
		{"paragraphs", "one\ntwo\n\nthree", 40, []string{"one two", "", "three"}},
		{"wrap", "the quick brown fox jumps over the lazy dog", 16,
			[]string{"the quick brown", "fox jumps over", "the lazy dog"}},
		{"long word cut", "abcdefghijklmnop qr", 6, []string{"abcdef", "ghijkl", "mnop", "qr"}},
		{"hard break", "a  \nb", 40, []string{"a", "b"}},
		{"headings", "# Title\n\n## Sub\n\n###### Six", 40, []string{" Title", "", "Sub", "", "Six"}},
		{"emphasis and code", "**b** *i* ~~s~~ `c d`", 40, []string{"b i s \u00a0c d\u00a0"}},
		{"escapes and entities", `\*not\* &amp; &#65;`, 40, []string{"*not* & A"}},
		{"link", "see [docs](https://x.io/d) now", 40, []string{"see docs https://x.io/d now"}},
		{"autolink once", "at <https://x.io> and https://y.io", 40, []string{"at https://x.io and https://y.io"}},
		{"image", "![alt](https://x.io/i.png)", 40, []string{"Image: alt → https://x.io/i.png"}},
		{"bullets", "- one\n- two\n  - three", 40, []string{"• one", "• two", "  • three"}},
		{"hanging indent", "- a list item that wraps", 12, []string{"• a list", "  item that", "  wraps"}},
		{"ordered from 3", "3. c\n4. d", 40, []string{"3. c", "4. d"}},
		{"loose list", "- a\n\n- b", 40, []string{"• a", "", "• b"}},
		{"tasks", "- [ ] todo\n- [x] done", 40, []string{"[ ] todo", "[✓] done"}},
		{"quote", "> a quote that wraps", 12, []string{"│ a quote", "│ that wraps"}},
		{"quote paragraphs", "> a\n>\n> b", 40, []string{"│ a", "│", "│ b"}},
		{"rule", "a\n\n---\n\nb", 40, []string{"a", "", "--------", "", "b"}},
		{"fenced code", "```go\nx := 1\n```", 40, []string{"  x := 1"}},
		{"indented code", "    plain\n    code", 40, []string{"  plain", "  code"}},
		{"code cut at width", "```\n0123456789\n```", 8, []string{"  012345", "  6789"}},
		{"table", "| a | bb |\n|---|---:|\n| 1 | 2 |", 40, []string{"a │ bb", "──┼───", "1 │  2"}},
		{"table narrowed", "| aaaa aaaa | b |\n|---|---|\n| x | y |", 10, []string{"aaaa   │ b", "aaaa   │", "───────┼──", "x      │ y"}},
		{"html stripped", "<div>\nkept <b>text</b>\n</div>", 40, []string{"kept text"}},
		{"inline html dropped", "a <kbd>k</kbd> b", 40, []string{"a k b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := stripped(New("dark", tc.width).Render(tc.src))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestCodeKeepsGlamourColours pins the xterm-256 colours Glamour's dark
// style gave a Go line, so that replacing it changed nothing users see.
func TestCodeKeepsGlamourColours(t *testing.T) {
	t.Parallel()
	got := New("dark", 60).Render("```go\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n```")
	want := []string{
		"  \x1b[38;5;39mfunc\x1b[m\x1b[38;5;251m \x1b[m\x1b[38;5;42mmain\x1b[m\x1b[38;5;187m()\x1b[m\x1b[38;5;251m \x1b[m\x1b[38;5;187m{\x1b[m",
		"  \x1b[38;5;251m\t\x1b[m\x1b[38;5;251mfmt\x1b[m\x1b[38;5;187m.\x1b[m\x1b[38;5;42mPrintln\x1b[m\x1b[38;5;187m(\x1b[m\x1b[38;5;173m\"hi\"\x1b[m\x1b[38;5;187m)\x1b[m",
		"  \x1b[38;5;187m}\x1b[m",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
	// Text and inline styles as Glamour's dark and light styles had them.
	for _, tc := range []struct{ style, src, want string }{
		{"dark", "a **b** `c`", "\x1b[38;5;252ma \x1b[m\x1b[38;5;252;1mb\x1b[m\x1b[38;5;252m \x1b[m\x1b[38;5;203;48;5;236m\u00a0c\u00a0\x1b[m"},
		{"light", "a **b** `c`", "\x1b[38;5;234ma \x1b[m\x1b[38;5;234;1mb\x1b[m\x1b[38;5;234m \x1b[m\x1b[38;5;203;48;5;254m\u00a0c\u00a0\x1b[m"},
		{"dark", "## h", "\x1b[38;5;39;1mh\x1b[m"},
		{"light", "## h", "\x1b[38;5;27;1mh\x1b[m"},
	} {
		if got := New(tc.style, 40).Render(tc.src); len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s %q: got %q, want %q", tc.style, tc.src, got, tc.want)
		}
	}
}

// TestLexers checks that each language's rules compile and colour a
// token of the kind they are written for.
func TestLexers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lang, code, word string
		want             chroma.TokenType
	}{
		{"go", "package main\nfunc f() {}", "func", chroma.KeywordDeclaration},
		{"js", "const x = require('y') // c", "// c", chroma.CommentSingle},
		{"ts", "let n: number = 1", "number", chroma.KeywordType},
		{"rust", "fn main() { println!(\"x\"); }", "\"x\"", chroma.LiteralString},
		{"c", "#include <stdio.h>\nint main(void) { return 0; }", "#include <stdio.h>", chroma.CommentPreproc},
		{"cpp", "std::vector<int> v; // x", "// x", chroma.CommentSingle},
		{"java", "public class A { }", "class", chroma.KeywordDeclaration},
		{"python", "def f(x):\n    return 'a'", "f", chroma.NameFunction},
		{"python", "@cache\ndef g(): pass", "@cache", chroma.NameDecorator},
		{"bash", "echo \"$HOME\" && ls -la # list", "# list", chroma.CommentSingle},
		{"sh", "FOO=1 make", "FOO", chroma.NameVariable},
		{"json", "{\"k\": [1, true]}", "\"k\"", chroma.NameTag},
		{"yaml", "key: value # c\nlist:\n  - a", "key", chroma.NameTag},
		{"toml", "[server]\nport = 8080", "[server]", chroma.Keyword},
		{"diff", "--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new", "+new", chroma.GenericInserted},
		{"sql", "SELECT id FROM t WHERE x = 'a';", "SELECT", chroma.Keyword},
		{"html", "<a href=\"x\">t</a>", "href", chroma.NameAttribute},
	} {
		h := newHighlighter(themeNamed("dark").chroma)
		lines := h.lines(tc.code, tc.lang)
		if got := strings.Join(stripped(lines), "\n"); got != tc.code {
			t.Errorf("%s: text changed: %q, want %q", tc.lang, got, tc.code)
			continue
		}
		want := paint(h.sgrOf(tc.want), tc.word)
		if !strings.Contains(strings.Join(lines, "\n"), want) {
			t.Errorf("%s: %q is not coloured as %s (%q) in\n%q", tc.lang, tc.word, tc.want, want, lines)
		}
	}
	// Every alias's lexer compiles and tokenises.
	for alias, l := range lexerSet() {
		it, err := l.Tokenise(nil, "x = \"1\" // y\n")
		if err != nil {
			t.Errorf("%s: %v", alias, err)
			continue
		}
		var b strings.Builder
		for tok := it(); tok != chroma.EOF; tok = it() {
			b.WriteString(tok.Value)
		}
		if b.String() != "x = \"1\" // y\n" {
			t.Errorf("%s: tokens %q do not cover the text", alias, b.String())
		}
	}
	// Unknown languages keep their text in the code colour.
	h := newHighlighter(themeNamed("dark").chroma)
	if got := h.lines("a b\nc", "klingon"); !slices.Equal(got, []string{"\x1b[38;5;251ma b\x1b[m", "\x1b[38;5;251mc\x1b[m"}) {
		t.Errorf("unknown language: %q", got)
	}
}

const corpus = "# Plan for the release of the new version\n\nFirst **bold** step, then `code spans that are long`, *emph* and ~~gone~~. A [link](http://example.com/a/very/long/path/that/does/not/fit) and <http://auto.io>.\n\n" +
	"```go\nfunc main() {\n\tfmt.Println(\"a very long line of code that will not fit in a narrow terminal\")\n}\n```\n\n" +
	"- one\n- two\n  - nested item that is long enough to wrap around the width\n- [ ] task\n\n1. first\n2. second\n\n" +
	"> quoted text that is quite long and goes on\n\n---\n\n| column a | column bb | c |\n|---|:---:|---:|\n| 1 | 2 | 3333333333333 |\n\n" +
	"![img](http://i.png) 漢字漢字漢字漢字 emoji 👍🏽👍🏽👍🏽 supercalifragilisticexpialidocious"

func TestLinesFitTheWidth(t *testing.T) {
	t.Parallel()
	for w := 10; w <= 80; w++ {
		for i, l := range New("dark", w).Render(corpus) {
			if got := ansi.StringWidth(l); got > w {
				t.Fatalf("width %d, line %d is %d wide: %q", w, i, got, ansi.Strip(l))
			}
		}
	}
}

func FuzzRender(f *testing.F) {
	f.Add(corpus, 20)
	f.Add("- a\n  - b\n    > c\n    > ```py\n    > x\n", 11)
	f.Add("|a|b|\n|-|-|\n|`x y z`|**bold text**|", 12)
	f.Fuzz(func(t *testing.T, src string, w int) {
		w = 10 + abs(w)%70
		for i, l := range New("dark", w).Render(src) {
			if got := ansi.StringWidth(l); got > w && !strings.ContainsAny(src, "\t\r\x00") {
				t.Fatalf("width %d, line %d is %d wide: %q", w, i, got, l)
			}
		}
	})
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
