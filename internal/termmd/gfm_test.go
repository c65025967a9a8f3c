package termmd

import (
	"slices"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// gfmSources are GFM sources with tables, strikethrough, task items and
// bare links: the GFM spec's examples and answer-like cases.
var gfmSources = []string{
	// Tables (spec examples 198-205 and more).
	"| foo | bar |\n| --- | --- |\n| baz | bim |",
	"| abc | defghi |\n:-: | -----------:\nbar | baz",
	"| f\\|oo  |\n| ------ |\n| b `\\|` az |\n| b **\\|** im |",
	"| abc | def |\n| --- | --- |\n| bar | baz |\n> bar",
	"| abc | def |\n| --- | --- |\n| bar | baz |\nbar\n\nbar",
	"| abc | def |\n| --- |\n| bar |",
	"| abc | def |\n| --- | --- |\n| bar |\n| bar | baz | boo |",
	"| abc | def |\n| --- | --- |",
	"intro line\n| a | b |\n|---|---|\n| 1 | 2 |",
	"a | b\n--|--\n1 | 2",
	"| a |\n|:-|\n| x |",
	"| a | b |\n|---|---|\n| `code | pipe` | *em* |",
	"| a | b |\n| - | - |\n|  | y |\n| x |  |",
	"- item\n\n  | a | b |\n  |---|---|\n  | 1 | 2 |",
	"> | q | r |\n> |---|---|\n> | 1 | 2 |",
	"not | a table\njust text",
	"| a |\n| -x- |",
	"a\n---",
	"| a \\| b |\n|---|---|\n| c \\| d |",
	"0\n-|-",
	"a\n:--\nb",
	"| a | b | c |\n|---|---|\nx | y | z",
	"| a |\n|---|\n\n| b | c |\n| - |\n| d |",
	"p\n| h |\n| - |\n| - |\nq",
	"    | a |\n    | - |",
	"| a |\n    | - |",
	// Strikethrough.
	"~~Hi~~ Hello, ~there~ world!",
	"This ~~has a\n\nnew paragraph~~.",
	"This will ~~~not~~~ strike.",
	"~~one~ two~",
	"a ~~**bold** in strike~~ b",
	"~~unclosed",
	// Task list items.
	"- [ ] foo\n- [x] bar",
	"- [x] foo\n  - [ ] bar\n  - [X] baz\n- [ ] bim",
	"1. [x] done\n2. [ ] open",
	"- [ ]\n- [x]",
	"- [y] no box\n- text [ ] later",
	"[ ] not in a list",
	"* [X]00\n* [\t] tab\n* [x]",
	"- [ ] loose\n\n- [x] items",
	// Bare links.
	"www.commonmark.org",
	"Visit www.commonmark.org/help for more information.",
	"Visit www.commonmark.org.\n\nVisit www.commonmark.org/a.b.",
	"www.google.com/search?q=Markup+(business)\n\nwww.google.com/search?q=Markup+(business)))\n\n(www.google.com/search?q=Markup+(business))",
	"www.google.com/search?q=(business))+ok",
	"www.google.com/search?q=commonmark&hl=en\n\nwww.google.com/search?q=commonmark&hl;",
	"www.commonmark.org/he<lp",
	"http://commonmark.org\n\n(Visit https://encrypted.google.com/search?q=Markup+(business))",
	"see https://x.io/d, and *https://y.io/e* or _http://z.io_.",
	"a https://example.com/path?x=1! b",
	"[text https://in.link](https://dest.io)",
	"`https://in.code` https://after.code",
	"http://localhost:8080/x and https://a-b.c_d.io/p",
	"www.x and www. and http://",
	"https://.a https://a.b-c http://x.io:80/p ftp://f.io/x www.a.io:80 https://a.io/x*y|z",
	"www.0.aaa?00$0000 https://0.aaa?00$0000",
	"mail me@example.com, or a.b+c@d.co. or x@y or _u@v.io_ or -a@b.io",
	"(https://x.io) [https://y.io] https://x.io/a)b https://x.io/a_b_ https://x.io/~u/",
	"https://x.io/&amp; https://x.io/a&b; www.a.io/x?y=\"z\"",
	"https://EXAMPLE.com https://x.IO http://1.2.3.4/x",
	"~~https://x.io~~ *www.y.io* __https://z.io__",
	"   | a | b |\n   |---|---|\n   | 1 | 2 |",
	"|a|b|\n|-|-|\n|`x y z`|**bold text**|",
	"| 漢字 | 👍🏽 |\n|:--:|--|\n| ~~s~~ | [x](y) |",
}

// renderedByGoldmark renders src as a Renderer does with goldmark's own
// GFM extensions (linked by this test only) instead of gfm.go's.
func renderedByGoldmark(src string) []string {
	r := New("dark", 40)
	r.md = goldmark.New(goldmark.WithExtensions(extension.GFM))
	return r.Render(src)
}

// TestGFMAsGoldmarkExtension wants gfm.go's parsers to render each source
// as goldmark/extension's did, styles included.
func TestGFMAsGoldmarkExtension(t *testing.T) {
	t.Parallel()
	for _, src := range gfmSources {
		if got, want := New("dark", 40).Render(src), renderedByGoldmark(src); !slices.Equal(got, want) {
			t.Errorf("%q:\ngot  %q\nwant %q", src, got, want)
		}
	}
}

func FuzzGFMAsGoldmarkExtension(f *testing.F) {
	for _, src := range gfmSources {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if got, want := New("dark", 40).Render(src), renderedByGoldmark(src); !slices.Equal(got, want) {
			t.Errorf("%q:\ngot  %q\nwant %q", src, got, want)
		}
	})
}
