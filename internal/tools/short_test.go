package tools

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestShortResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		output          string
		lines, maxBytes int
		want            string
	}{
		{"empty", "", 3, 100, ""},
		{"last lines", "1\n2\n3\n4\n5\n", 3, 100, "3\n4\n5"},
		{"fewer lines than asked", "a\nb", 5, 100, "a\nb"},
		{"blank lines skipped", "a\n\n  \nb\n\n\t\n", 2, 100, "a\nb"},
		{"trailing space trimmed", "a  \nb\t\n", 2, 100, "a\nb"},
		{"CRLF", "a\r\nb\r\n", 2, 100, "a\nb"},
		{"progress bar shows its last state", "load 10%\rload 50%\rload 100%\ndone\n", 2, 100, "load 100%\ndone"},
		{"byte bound cuts the front", "first line\nsecond line\n", 2, 7, "nd line"},
		{"byte bound drops a separator", "abc\ndefgh", 2, 5, "defgh"},
		{"never splits a character", "€€€", 1, 4, "€"},
		{"invalid UTF-8 replaced", "a\xffb\n", 1, 100, "a\uFFFDb"},
		{"zero lines", "abc", 0, 100, ""},
		{"zero bytes", "abc", 3, 0, ""},
		{"long output, short tail", strings.Repeat("x\n", 100000) + "end\n", 2, 10, "x\nend"},
		{"one huge line", strings.Repeat("ab", 100000), 3, 6, "ababab"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ShortResult(tt.output, tt.lines, tt.maxBytes); got != tt.want {
				t.Errorf("ShortResult(%.40q, %d, %d) = %q; want %q", tt.output, tt.lines, tt.maxBytes, got, tt.want)
			}
		})
	}
}

func FuzzShortResult(f *testing.F) {
	f.Add("a\nb\nc\n", 2, 10)
	f.Add("€€\r\n\xff\xfe\n  \n", 1, 4)
	f.Add("progress 1\rprogress 2\n", 3, 100)
	f.Fuzz(func(t *testing.T, output string, lines, maxBytes int) {
		lines, maxBytes = lines%20, maxBytes%2000
		got := ShortResult(output, lines, maxBytes)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8: %q", got)
		}
		if len(got) > max(maxBytes, 0) {
			t.Fatalf("%d bytes > %d", len(got), maxBytes)
		}
		if got == "" {
			return
		}
		parts := strings.Split(got, "\n")
		if len(parts) > lines {
			t.Fatalf("%d lines > %d: %q", len(parts), lines, got)
		}
		for _, p := range parts {
			if strings.TrimSpace(p) == "" {
				t.Fatalf("blank line in %q", got)
			}
		}
	})
}

func TestHeadTail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		limit  int
		writes []string
		want   string
	}{
		{"under the limit", 10, []string{"abc", "def"}, "abcdef"},
		{"at the limit", 6, []string{"abc", "def"}, "abcdef"},
		{"over the limit", 6, []string{"abcd", "efgh", "ij"}, "abc\n\n... [4 bytes of output elided] ...\n\nhij"},
		{"many small writes", 4, strings.Split("0123456789", ""), "01\n\n... [6 bytes of output elided] ...\n\n89"},
		{"one huge write", 4, []string{strings.Repeat("x", 1000) + "yz"}, "xx\n\n... [998 bytes of output elided] ...\n\nyz"},
		{"keeps whole characters", 8, []string{"a€€€€b"}, "a€\n\n... [6 bytes of output elided] ...\n\n€b"},
		{"cuts the tail at characters", 6, []string{"a€€€€b"}, "a\n\n... [12 bytes of output elided] ...\n\nb"},
		{"cuts at characters", 7, []string{"a€€€€b"}, "a\n\n... [9 bytes of output elided] ...\n\n€b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHeadTail(tt.limit)
			for _, w := range tt.writes {
				h.Write([]byte(w))
			}
			if got := h.String(); got != tt.want {
				t.Errorf("got %q; want %q", got, tt.want)
			}
		})
	}
}

func FuzzHeadTail(f *testing.F) {
	f.Add([]byte("hello, world"), 5, uint8(3))
	f.Add([]byte("€€€€€€"), 7, uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, limit int, chunk uint8) {
		limit = 2 + abs(limit)%100
		h := newHeadTail(limit)
		for rest := data; len(rest) > 0; {
			n := min(len(rest), int(chunk)+1)
			h.Write(rest[:n])
			rest = rest[n:]
		}
		got := h.String()
		if len(data) <= limit {
			if got != string(data) {
				t.Fatalf("under the limit: got %q; want %q", got, data)
			}
			return
		}
		head, tail, ok := strings.Cut(got, "\n\n... [")
		if !ok {
			t.Fatalf("no elision marker in %q", got)
		}
		_, tail, _ = strings.Cut(tail, "] ...\n\n")
		if len(head)+len(tail) > limit {
			t.Fatalf("kept %d bytes > %d", len(head)+len(tail), limit)
		}
		if !bytes.HasPrefix(data, []byte(head)) || !bytes.HasSuffix(data, []byte(tail)) {
			t.Fatalf("%q ... %q is not the head and tail of %q", head, tail, data)
		}
		if utf8.Valid(data) && (!utf8.ValidString(head) || !utf8.ValidString(tail)) {
			t.Fatalf("a character was split: %q ... %q", head, tail)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func TestCompleteRunes(t *testing.T) {
	t.Parallel()
	euro := "€" // e2 82 ac
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"a" + euro, 4},
		{"a" + euro[:1], 1},
		{"a" + euro[:2], 1},
		{"a\xff", 2},          // Invalid: nothing to wait for.
		{"\x82\xac", 2},       // Stray continuation bytes.
		{"ab\xf0\x9f\x98", 2}, // Three bytes of a four-byte emoji.
	}
	for _, tt := range tests {
		if got := completeRunes([]byte(tt.in)); got != tt.want {
			t.Errorf("completeRunes(%q) = %d; want %d", tt.in, got, tt.want)
		}
	}
}
