package cclines

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/streamjson"
)

// written returns what write wrote through a new writer.
func written(write func(w *Writer)) string {
	var out bytes.Buffer
	w := &Writer{out: bufio.NewWriter(&out)}
	write(w)
	w.Flush()
	return out.String()
}

// A line written with its long field in pieces is byte for byte the line
// marshalled whole, whatever sits where a piece ends: a character split
// there, an invalid or stray byte, U+2028, what JSON escapes.
func TestLineWithIsLine(t *testing.T) {
	t.Parallel()
	at := func(s string) string { return strings.Repeat("a", longText-1) + s + strings.Repeat("b", longText) }
	long := map[string]string{
		"short":                   "a <b> & \"c\"\n",
		"ascii":                   strings.Repeat("lorem ipsum ", 3*longText/12),
		"two-byte at the cut":     at("é"),
		"four-byte at the cut":    at("😀"),
		"U+2028 at the cut":       at("\u2028"),
		"split U+2029 at the cut": at("\xe2\x80") + "x" + at("\xa9"),
		"lead byte at the cut":    at("\xf0") + at("\xf0\x9f"),
		"continuation bytes":      strings.Repeat("\x80", 3*longText+5),
		"escapes":                 strings.Repeat("\"\\\n\r\t\b\f\x00\x1f<>&\u2029", longText/8),
		"exactly a piece":         strings.Repeat("x", longText),
	}
	for name, text := range long {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			line := streamjson.ResultLine{Type: "result", Subtype: "success", Result: &text, SessionID: "s"}
			want := written(func(w *Writer) { w.Line(line) })
			got := written(func(w *Writer) { w.LineWith(&line, line.Result) })
			if got != want {
				t.Errorf("lineWith wrote %d bytes, line %d; first difference at %d", len(got), len(want), firstByteDiff(got, want))
			}
			if *line.Result != text {
				t.Error("lineWith left the field changed")
			}
			// A text block in an assistant line, and a field that is not
			// the line's own (written whole).
			block := &textBlockLine{Type: "text", Text: text}
			a := streamjson.AssistantLine{Type: "assistant", Message: streamjson.AssistantMessage{}, SessionID: "s"}
			a.Message.Content = []any{block}
			want = written(func(w *Writer) { w.Line(a) })
			if got := written(func(w *Writer) { w.LineWith(&a, &block.Text) }); got != want {
				t.Errorf("assistant line: first difference at %d", firstByteDiff(got, want))
			}
			other := text
			if got := written(func(w *Writer) { w.LineWith(&a, &other) }); got != want {
				t.Errorf("a field outside the line: first difference at %d", firstByteDiff(got, want))
			}
		})
	}
}

// textBlockLine is api.TextBlock's shape, for the test's lines.
type textBlockLine struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func firstByteDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// FuzzWriteString: a string written in pieces of any size is the string
// as encoding/json writes it whole.
func FuzzWriteString(f *testing.F) {
	for _, s := range []string{"", "plain", "é😀\u2028\u2029", "\xe2\x80\xa8\xe2\x80", "\x80\x80\x80\x80\x80", "\"\\\n\x00<>&\xff", "日本語のテキスト"} {
		f.Add(s, uint8(0))
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, s string, size uint8) {
		max := 4 + int(size)%60
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		got := written(func(w *Writer) { w.writeString(s, max) })
		if got != strings.TrimSuffix(want.String(), "\n") {
			t.Errorf("%q in pieces of %d: %q, want %q", s, max, got, want.String())
		}
	})
}
