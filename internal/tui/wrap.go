package tui

import (
	"strings"
	"unicode"

	"github.com/charmbracelet/x/ansi"
	"github.com/rivo/uniseg"
)

// sanitize makes text from the model or a tool safe to lay out: escape
// sequences are removed (a tool's output must not move the cursor or
// change the terminal's modes), tabs become spaces and other control
// characters are dropped.
func sanitize(text string) string {
	if strings.IndexFunc(text, func(r rune) bool { return r != '\n' && unicode.IsControl(r) }) < 0 {
		return text
	}
	text = ansi.Strip(text)
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n':
			return r
		case r == '\t':
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, text)
}

// wrapPlain word-wraps text to width columns, breaking words longer than a
// row.
func wrapPlain(text string, width int) []string {
	text = sanitize(text)
	var out []string
	for {
		line, rest, more := strings.Cut(text, "\n")
		rows, _ := wrapLine(line, width)
		out = append(out, rows...)
		if !more {
			return out
		}
		text = rest
	}
}

// wrapLine wraps one line greedily: a word goes on the current row when it
// fits, else it starts the next one, and a word wider than a row is cut.
// The spaces where a row breaks are dropped. It also returns the byte
// offset in line where the last row starts. Greedy wrapping never changes
// a row but the last when text is appended to the line, which is what lets
// a streaming line be wrapped in pieces (plainStream).
func wrapLine(line string, width int) (rows []string, lastStart int) {
	width = max(width, 1)
	var row strings.Builder
	rowW, start, pending := 0, 0, ""
	newRow := func(at int) {
		rows = append(rows, row.String())
		row.Reset()
		rowW, start = 0, at
	}
	for i := 0; i < len(line); {
		j := i
		if line[i] == ' ' {
			for j < len(line) && line[j] == ' ' {
				j++
			}
			switch {
			case rowW == 0 && len(rows) == 0:
				// The line's own indentation is kept.
				row.WriteString(line[i:j])
				rowW += j - i
			case rowW > 0:
				pending = line[i:j]
			}
			// Spaces that would start a continuation row are dropped.
			i = j
			continue
		}
		for j < len(line) && line[j] != ' ' {
			j++
		}
		word := line[i:j]
		w := ansi.StringWidth(word)
		if rowW > 0 && rowW+len(pending)+w > width {
			newRow(i)
		} else {
			row.WriteString(pending)
			rowW += len(pending)
		}
		pending = ""
		if rowW+w <= width {
			row.WriteString(word)
			rowW += w
		} else {
			// A word wider than a row is cut, by grapheme.
			rest, at := word, i
			for rest != "" {
				g, r, gw, _ := uniseg.FirstGraphemeClusterInString(rest, -1)
				if rowW+gw > width && rowW > 0 {
					newRow(at)
				}
				row.WriteString(g)
				rowW += gw
				at += len(g)
				rest = r
			}
		}
		i = j
	}
	rows = append(rows, row.String())
	return rows, start
}
