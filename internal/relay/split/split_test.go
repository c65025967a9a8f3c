package split

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

func TestUnits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"中文。", 3},
		{"🚀", 2},
		{"👨\u200d👩\u200d👧\u200d👦", 11},
		{"🇯🇵", 4},
		{"\xff", 1},
	}
	for _, tt := range tests {
		if got := Units(tt.in); got != tt.want {
			t.Errorf("Units(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestSplit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		text  string
		limit int
		want  []string
	}{
		{"fits", "hello\n\nworld", 100, []string{"hello\n\nworld"}},
		{"empty", "", 10, nil},
		{
			"paragraphs packed greedily",
			"aaaa\n\nbbbb\n\ncccc\n\ndddd", 10,
			[]string{"aaaa\n\nbbbb", "cccc\n\ndddd"},
		},
		{
			"blank-line runs kept inside a message",
			"aa\n\n\n\nbb\n\n\ncc", 11,
			[]string{"aa\n\n\n\nbb", "cc"},
		},
		{
			"long paragraph at a line",
			"line one\nline two\nline three", 18,
			[]string{"line one\nline two", "line three"},
		},
		{
			"paragraph preferred to a later line when it costs no message",
			"p1\n\nline a\nline b", 13,
			[]string{"p1", "line a\nline b"},
		},
		{
			"a later line when the paragraph would cost a message",
			"p1\n\nline a\nline b\nline c", 16,
			[]string{"p1\n\nline a", "line b\nline c"},
		},
		{
			"a sentence end when the line would cost a message",
			"One.\nTwo. Three. Four.", 13,
			[]string{"One.\nTwo.", "Three. Four."},
		},
		{
			"CJK sentence end",
			"第一句话。第二句话！第三句话？第四", 10,
			[]string{"第一句话。第二句话！", "第三句话？第四"},
		},
		{
			"ASCII sentence end before a space",
			"Pi is 3.14 exactly. Then more words here", 25,
			[]string{"Pi is 3.14 exactly.", "Then more words here"},
		},
		{
			"space",
			"alpha beta gamma delta", 12,
			[]string{"alpha beta", "gamma delta"},
		},
		{
			"anywhere",
			"abcdefghij", 4,
			[]string{"abcd", "efgh", "ij"},
		},
		{
			"never inside a surrogate pair",
			"🚀🚀🚀", 3,
			[]string{"🚀", "🚀", "🚀"},
		},
		{
			"never inside a ZWJ family",
			"ab👨\u200d👩\u200d👧\u200d👦", 12,
			[]string{"ab", "👨\u200d👩\u200d👧\u200d👦"},
		},
		{
			"never inside a flag",
			"x🇯🇵🇯🇵", 5,
			[]string{"x🇯🇵", "🇯🇵"},
		},
		{
			"never inside a combining sequence",
			"abce\u0301f", 4,
			[]string{"abc", "e\u0301f"},
		},
		{
			"a cluster longer than a message is cut between code points",
			"👨\u200d👩\u200d👧\u200d👦", 6,
			[]string{"👨\u200d👩\u200d", "👧\u200d👦"},
		},
		{
			"fence closed and reopened with its info string",
			"intro\n\n```python\nline1\nline2\nline3\n```\nafter", 30,
			[]string{"intro", "```python\nline1\nline2\n```", "```python\nline3\n```\nafter"},
		},
		{
			"tilde fence with a longer marker",
			"~~~~ sh\necho 1\necho 2\n~~~~", 20,
			[]string{"~~~~ sh\necho 1\n~~~~", "~~~~ sh\necho 2\n~~~~"},
		},
		{
			"CRLF line ends",
			"one\r\ntwo\r\nthree", 8,
			[]string{"one\r\ntwo", "three"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Messages(tt.text, tt.limit)
			if !equal(got, tt.want) {
				t.Errorf("Messages(%q, %d)\n got %q\nwant %q", tt.text, tt.limit, got, tt.want)
			}
			checkParts(t, tt.text, tt.limit, Split(tt.text, tt.limit))
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSplitLongAnswer is the seed's Trace D: a 9,121-character answer in
// paragraphs goes out in three messages on both platforms.
func TestSplitLongAnswer(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	para := strings.Repeat("这是最终答案的一段内容，", 25) // 300 units
	for Units(b.String()) < 9121-302 {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(para)
	}
	for Units(b.String()) < 9121 {
		b.WriteString("尾")
	}
	text := b.String()
	if Units(text) != 9121 {
		t.Fatalf("built %d units", Units(text))
	}
	for _, limit := range []int{WeChatLimit, TelegramLimit} {
		parts := Split(text, limit)
		checkParts(t, text, limit, parts)
		if len(parts) != 3 {
			t.Errorf("limit %d: %d parts, want 3", limit, len(parts))
		}
		for i, p := range parts {
			if strings.HasPrefix(p.Body, "\n") || strings.HasSuffix(p.Body, "\n") {
				t.Errorf("limit %d part %d is not cut at a paragraph: %q...", limit, i, p.Body[:30])
			}
		}
	}
}

// paragraphs builds an answer of English paragraphs of about the given
// sizes (in units), each a run of whole sentences.
func paragraphs(sizes ...int) string {
	var b strings.Builder
	n := 0
	for i, size := range sizes {
		if i > 0 {
			b.WriteString("\n\n")
		}
		var p strings.Builder
		for Units(p.String()) < size {
			if p.Len() > 0 {
				p.WriteString(" ")
			}
			n++
			fmt.Fprintf(&p, "Sentence %d says one more thing about the design.", n)
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// TestSplitPacks: the seed's answers go out in as few messages as the limit
// allows, every cut at a sentence end or better. The 11.5K answer of six
// 1,800-unit paragraphs and a short one went out as four WeChat messages
// when every cut had to be a paragraph end (two paragraphs a message);
// three hold it.
func TestSplitPacks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		text  string
		limit int
		want  int
	}{
		{"trace A: 1,485 characters", paragraphs(500, 500, 480), WeChatLimit, 1},
		{"trace D: 9,121 characters", paragraphs(3000, 3000, 3000), WeChatLimit, 3},
		{"11.5K in 1,800-unit paragraphs, WeChat", paragraphs(1800, 1800, 1800, 1800, 1800, 1800, 700), WeChatLimit, 3},
		{"11.5K in 1,800-unit paragraphs, Telegram", paragraphs(1800, 1800, 1800, 1800, 1800, 1800, 700), TelegramLimit, 3},
		{"paragraphs a little over half the limit", paragraphs(2100, 2100, 2100, 2100, 2100), WeChatLimit, 3},
		{"code between paragraphs", paragraphs(1500, 1500) + "\n\n```go\n" + strings.Repeat("fmt.Println(\"a line of the example\")\n", 100) + "```\n\n" + paragraphs(1500), WeChatLimit, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			parts := Split(tt.text, tt.limit)
			checkParts(t, tt.text, tt.limit, parts)
			checkFences(t, tt.text, parts)
			fewest := (Units(tt.text) + tt.limit - 1) / tt.limit
			if len(parts) != tt.want || len(parts) < fewest {
				t.Errorf("%d units at limit %d: %d messages, want %d", Units(tt.text), tt.limit, len(parts), tt.want)
			}
			for i, p := range parts[:len(parts)-1] {
				if !strings.HasSuffix(p.Body, ".") && !strings.HasSuffix(p.Body, ")") && !strings.Contains(p.Sep, "\n") {
					t.Errorf("part %d is not cut at a sentence end or a line: ...%q", i, p.Body[max(0, len(p.Body)-30):])
				}
			}
		})
	}
}

// checkParts asserts what holds for every split: the bodies and separators
// give back the input, every message fits, cuts fall between code points
// and, unless one cluster is longer than a message, between grapheme
// clusters; every body makes progress.
func checkParts(t *testing.T, text string, limit int, parts []Part) {
	t.Helper()
	var rebuilt strings.Builder
	for _, p := range parts {
		rebuilt.WriteString(p.Body)
		rebuilt.WriteString(p.Sep)
	}
	if rebuilt.String() != text {
		t.Fatalf("parts do not rebuild the input:\n got %q\nwant %q", rebuilt.String(), text)
	}
	bounds := clusterStarts(text)
	off := 0
	for i, p := range parts {
		if p.Body == "" {
			t.Fatalf("part %d has an empty body", i)
		}
		if u := Units(p.Text()); u > limit {
			t.Errorf("part %d is %d units, limit %d: %q", i, u, limit, p.Text())
		}
		if strings.Trim(p.Sep, " \t\r\n") != "" {
			t.Errorf("part %d separator is not white space: %q", i, p.Sep)
		}
		start, end := off, off+len(p.Body)
		for _, cut := range []int{end, end + len(p.Sep)} {
			if cut < len(text) && !utf8.RuneStart(text[cut]) && utf8.ValidString(text) {
				t.Errorf("part %d: cut at %d inside a code point", i, cut)
			}
		}
		if !bounds[end] {
			// Allowed only when the body holds no whole cluster: one
			// cluster was longer than the message.
			for k := start + 1; k < end; k++ {
				if bounds[k] {
					t.Errorf("part %d: cut at %d inside a grapheme cluster, though one ends at %d", i, end, k)
					break
				}
			}
		}
		off = end + len(p.Sep)
	}
}

func clusterStarts(text string) map[int]bool {
	b := map[int]bool{len(text): true}
	g := uniseg.NewGraphemes(text)
	for g.Next() {
		from, _ := g.Positions()
		b[from] = true
	}
	return b
}

// checkFences asserts that every message but the last closes every fence
// it opens, and that a reopened fence repeats its opener.
func checkFences(t *testing.T, text string, parts []Part) {
	t.Helper()
	fences := scanFences(text)
	for i, p := range parts {
		if p.Reopen != "" {
			found := false
			for _, f := range fences {
				if f.opener+"\n" == p.Reopen {
					found = true
				}
			}
			if !found {
				t.Errorf("part %d reopens %q, not an opener of the input", i, p.Reopen)
			}
		}
		if i == len(parts)-1 {
			continue
		}
		msg := p.Text()
		for _, f := range scanFences(msg) {
			if f.closeStart == len(msg) {
				t.Errorf("part %d leaves fence %q open: %q", i, f.opener, msg)
			}
		}
	}
}

// TestSplitProperties splits generated markdown — paragraphs, blank-line
// runs, CJK, emoji, combining marks, long words, code fences — at many
// limits.
func TestSplitProperties(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 11))
	for i := 0; i < 400; i++ {
		text := genMarkdown(rng)
		limit := 60 + rng.IntN(400)
		parts := Split(text, limit)
		checkParts(t, text, limit, parts)
		checkFences(t, text, parts)
		if t.Failed() {
			t.Fatalf("case %d, limit %d, text %q", i, limit, text)
		}
	}
}

var atoms = []string{
	"word", "streaming", "中文", "流式传输", "🚀", "👍🏽", "👨\u200d💻", "🇯🇵", "e\u0301",
	"3.14", "a.b", "x", "日本語", "Ελληνικά", "`code`", "ok!", "真的？", "结束。",
}

func genMarkdown(rng *rand.Rand) string {
	var b strings.Builder
	for p := rng.IntN(12); p >= 0; p-- {
		switch rng.IntN(6) {
		case 0:
			fenceChar := []string{"```", "~~~", "````"}[rng.IntN(3)]
			b.WriteString(fenceChar + []string{"", "go", "python extra"}[rng.IntN(3)] + "\n")
			for l := rng.IntN(15); l >= 0; l-- {
				b.WriteString(strings.Repeat(" ", rng.IntN(5)))
				genLine(rng, &b)
				b.WriteString("\n")
			}
			b.WriteString(fenceChar)
		case 1:
			b.WriteString(strings.Repeat("长", rng.IntN(300)))
		default:
			for l := rng.IntN(5); l >= 0; l-- {
				genLine(rng, &b)
				if l > 0 {
					b.WriteString("\n")
				}
			}
		}
		b.WriteString(strings.Repeat("\n", 2+rng.IntN(3)))
	}
	return b.String()
}

func genLine(rng *rand.Rand, b *strings.Builder) {
	for w := rng.IntN(30); w >= 0; w-- {
		b.WriteString(atoms[rng.IntN(len(atoms))])
		b.WriteString([]string{" ", " ", "", ". ", "。", "  "}[rng.IntN(6)])
	}
}

func FuzzSplit(f *testing.F) {
	f.Add("hello\n\nworld", uint16(5))
	f.Add("```go\nx := 1\ny := 2\n```\n\ntext", uint16(10))
	f.Add("👨\u200d👩\u200d👧\u200d👦 🇯🇵 e\u0301", uint16(1))
	f.Add("第一句。第二句！\n\n\n\n第三", uint16(4))
	f.Add("~~~\n\n\n~~~", uint16(3))
	f.Fuzz(func(t *testing.T, text string, l uint16) {
		limit := MinLimit + int(l%300)
		parts := Split(text, limit)
		checkParts(t, text, limit, parts)
	})
}

func BenchmarkSplit(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	for sb.Len() < 64<<10 {
		sb.WriteString(genMarkdown(rng))
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Split(text, WeChatLimit)
	}
}
