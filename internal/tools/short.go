package tools

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ShortResult is the short view of a tool's output that running and end tool
// events carry: its last maxLines non-blank lines, joined by "\n", at most
// maxBytes bytes. It is always valid UTF-8 (invalid bytes become U+FFFD) and
// never splits a character; when the lines exceed maxBytes, the front is cut.
// A line rewritten with carriage returns (a progress bar) shows what a
// terminal would: the text after its last "\r".
//
// Its cost is bounded by maxBytes, not by len(output): only the tail of the
// output is looked at, so it can be called on every chunk of a growing
// output. (A tail of more than 4×maxBytes of blank lines hides the lines
// before it.)
func ShortResult(output string, maxLines, maxBytes int) string {
	if maxLines <= 0 || maxBytes <= 0 {
		return ""
	}
	if maxBytes < len(output)/4 {
		start := len(output) - 4*maxBytes
		for i := 0; i < utf8.UTFMax && !utf8.RuneStart(output[start]); i++ {
			start++
		}
		output = output[start:]
	}
	var lines []string
	size := 0
	for end := len(output); end > 0 && len(lines) < maxLines && size < maxBytes; {
		start := strings.LastIndexByte(output[:end], '\n') + 1
		line := visibleLine(output[start:end])
		end = max(start-1, 0)
		if line != "" {
			lines = append(lines, line)
			size += len(line) + 1
		}
	}
	slices.Reverse(lines)
	s := strings.Join(lines, "\n")
	if len(s) > maxBytes {
		cut := len(s) - maxBytes
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		// The cut may land on a separator: drop it rather than show a
		// blank first line.
		s = strings.TrimPrefix(s[cut:], "\n")
	}
	return s
}

// visibleLine is what a terminal shows of one line: the text after its last
// carriage return, valid UTF-8, without trailing space ("" when blank).
func visibleLine(line string) string {
	line = strings.TrimRight(line, "\r")
	if i := strings.LastIndexByte(line, '\r'); i >= 0 {
		line = line[i+1:]
	}
	return strings.TrimRightFunc(strings.ToValidUTF8(line, "\uFFFD"), unicode.IsSpace)
}

// headTail keeps the first and last parts of a stream whose total may exceed
// limit bytes, so a command's output stays bounded in memory however much it
// prints. It is not safe for concurrent use.
type headTail struct {
	limit int
	head  []byte
	tail  []byte // Trimmed to the last tailCap bytes whenever it doubles.
	total int64
}

func newHeadTail(limit int) *headTail { return &headTail{limit: limit} }

func (h *headTail) tailCap() int { return h.limit - h.limit/2 }

func (h *headTail) Write(p []byte) {
	h.total += int64(len(p))
	if n := h.limit/2 - len(h.head); n > 0 {
		k := min(n, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	h.tail = append(h.tail, p...)
	if c := h.tailCap(); len(h.tail) > 2*c {
		h.tail = append(h.tail[:0], h.tail[len(h.tail)-c:]...)
	}
}

// String returns everything written when it fits in limit; otherwise the
// head and the tail, each cut at a character boundary, around a marker that
// says how many bytes were left out.
func (h *headTail) String() string {
	if h.total <= int64(h.limit) {
		return string(h.head) + string(h.tail)
	}
	head := h.head[:completeRunes(h.head)]
	tail := h.tail[len(h.tail)-min(h.tailCap(), len(h.tail)):]
	for i := 0; i < utf8.UTFMax && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	elided := h.total - int64(len(head)) - int64(len(tail))
	return fmt.Sprintf("%s\n\n... [%d bytes of output elided] ...\n\n%s", head, elided, tail)
}

// completeRunes returns the length of the longest prefix of p that does not
// end inside a UTF-8 character that more bytes could still complete. Invalid
// bytes count as complete: holding them back would not make them valid.
func completeRunes(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if utf8.FullRune(p[i:]) {
				return len(p)
			}
			return i
		}
	}
	return len(p)
}
