package termmd

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
	east "github.com/yuin/goldmark/extension/ast"
)

// table renders a table with columns as wide as their cells, narrowed (the
// widest first) and their cells wrapped when the table would not fit.
func (d *doc) table(t *east.Table, width int) []string {
	type cell struct {
		in    inline
		align east.Alignment
	}
	var rows [][]cell
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		var row []cell
		for c := r.FirstChild(); c != nil; c = c.NextSibling() {
			tc, ok := c.(*east.TableCell)
			if !ok {
				continue
			}
			var in inline
			d.inlines(tc, d.text(), "", &in)
			row = append(row, cell{in: in, align: tc.Alignment})
		}
		rows = append(rows, row)
	}
	cols := 0
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	if cols == 0 {
		return nil
	}
	widths := make([]int, cols)
	for _, r := range rows {
		for i, c := range r {
			for _, l := range c.in.wrap(1 << 20) {
				widths[i] = max(widths[i], ansi.StringWidth(l))
			}
		}
	}
	// The separator's last space is left unstyled so that a row whose last
	// cells are empty can be trimmed.
	sep := paint(d.text().sgr(), " │") + " "
	avail := width - 3*(cols-1)
	for sum(widths) > avail {
		i := widest(widths)
		if widths[i] <= 1 {
			break
		}
		widths[i]--
	}
	var out []string
	for ri, r := range rows {
		cells := make([][]string, cols)
		height := 1
		for i := range cols {
			if i < len(r) {
				cells[i] = r[i].in.wrap(widths[i])
			}
			height = max(height, len(cells[i]))
		}
		for h := range height {
			parts := make([]string, cols)
			for i := range cols {
				l := ""
				if h < len(cells[i]) {
					l = cells[i][h]
				}
				align := east.AlignNone
				if i < len(r) {
					align = r[i].align
				}
				parts[i] = pad(l, widths[i], align)
			}
			line := strings.TrimRight(strings.Join(parts, sep), " ")
			// Narrower than one column per cell: cut.
			out = append(out, strings.Split(ansi.Hardwrap(line, width, false), "\n")...)
		}
		if _, header := t.FirstChild().(*east.TableHeader); ri == 0 && header {
			rule := make([]string, cols)
			for i, w := range widths {
				rule[i] = strings.Repeat("─", w)
			}
			out = append(out, strings.Split(ansi.Hardwrap(paint(d.text().sgr(), strings.Join(rule, "─┼─")), width, false), "\n")...)
		}
	}
	return out
}

func pad(s string, w int, align east.Alignment) string {
	n := w - ansi.StringWidth(s)
	if n <= 0 {
		return s
	}
	switch align {
	case east.AlignRight:
		return strings.Repeat(" ", n) + s
	case east.AlignCenter:
		return strings.Repeat(" ", n/2) + s + strings.Repeat(" ", n-n/2)
	}
	return s + strings.Repeat(" ", n)
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

func widest(xs []int) int {
	best := 0
	for i, x := range xs {
		if x > xs[best] {
			best = i
		}
	}
	return best
}
