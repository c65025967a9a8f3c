package tui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sluicehq/sluice/protocol"
)

// expandedView is the Ctrl+O view: the last messages with whole
// parameters, results, reasoning and summaries, on the alternate screen.
// It is a still snapshot taken when it opened: events keep being applied to
// the list (and what becomes final waits to be printed), but nothing here
// changes, not even a reasoning timer, until the user goes back to the
// live view, which resumes from the current state.
type expandedView struct {
	msgs    []protocol.Message // the snapshot
	omitted int                // earlier messages left out
	at      time.Time          // when it was taken: the time its timers show
	width   int                // lines were laid out for this width
	lines   []string
	off     int // first line shown
}

func (m *ui) expand() {
	snap := m.list.Snapshot()
	e := &expandedView{msgs: snap.Messages, at: m.clock.Now()}
	if n := len(e.msgs); n > expandedTail {
		e.omitted = n - expandedTail
		e.msgs = e.msgs[e.omitted:]
	}
	e.layout(m)
	e.off = max(len(e.lines)-e.rows(m), 0)
	m.expanded = e
}

// rows is how many transcript lines fit above the footer.
func (e *expandedView) rows(m *ui) int { return max(m.height-1, 1) }

// layout renders the snapshot for the terminal's width. Only a resize
// renders it again, from the same snapshot and time.
func (e *expandedView) layout(m *ui) {
	if e.lines != nil && e.width == m.width {
		return
	}
	e.width = m.width
	lines := []string{stAccent.Render(fmt.Sprintf("Expanded view · snapshot taken at %s · %d messages", e.at.Format("15:04:05"), len(e.msgs)+e.omitted))}
	if e.omitted > 0 {
		lines = append(lines, stDim.Render(fmt.Sprintf("… %d earlier messages not shown", e.omitted)))
	}
	for _, msg := range e.msgs {
		for bi := range msg.Blocks {
			bl := m.expandedBlock(msg, bi, e.at)
			if len(bl) == 0 {
				continue
			}
			lines = append(lines, "")
			lines = append(lines, bl...)
		}
	}
	e.lines = lines
	e.off = min(e.off, max(len(e.lines)-e.rows(m), 0))
}

func (m *ui) expandedBlock(msg protocol.Message, bi int, at time.Time) []string {
	b := msg.Blocks[bi]
	w := m.width
	switch b.Type {
	case protocol.BlockText:
		if msg.Role == protocol.RoleUser {
			return userLines(b.Content, w)
		}
		if strings.TrimSpace(b.Content) == "" {
			return nil
		}
		return textPart(m.md.render(b.Content)).all()
	case protocol.BlockReasoning:
		return reasoningPart(thinkingHeader(b, at), wrapPlain(strings.TrimRight(b.Content, "\n"), w-2)).all()
	case protocol.BlockTool:
		return toolLinesExpanded(b, w)
	case protocol.BlockError:
		return errorLines(b.Content, w)
	case protocol.BlockCompact:
		lines := []string{stAccent.Render("※ ") + stBold.Render("Conversation compacted. Summary:")}
		return append(lines, hang(indent, indent, m.md.render(b.Content))...)
	}
	return nil
}

func (e *expandedView) view(m *ui) tea.View {
	rows := e.rows(m)
	end := min(e.off+rows, len(e.lines))
	shown := append([]string(nil), e.lines[e.off:end]...)
	for len(shown) < rows {
		shown = append(shown, "")
	}
	footer := stDim.Render(truncate(fmt.Sprintf("ctrl+o/esc back to the live view · ↑/↓ pgup/pgdn home/end scroll · lines %d–%d of %d", e.off+1, end, len(e.lines)), m.width))
	v := tea.NewView(strings.Join(append(shown, footer), "\n"))
	v.AltScreen = true
	return v
}

func (m *ui) expandedKey(s string) tea.Cmd {
	e := m.expanded
	rows := e.rows(m)
	last := max(len(e.lines)-rows, 0)
	switch s {
	case "ctrl+o", "esc", "q":
		m.expanded = nil
		return m.hold(frameHold)
	case "ctrl+c":
		m.expanded = nil
		if m.busy() {
			m.interrupt()
		}
		return m.hold(frameHold)
	case "up", "k":
		e.off--
	case "down", "j":
		e.off++
	case "pgup", "b":
		e.off -= rows
	case "pgdown", "space", "f":
		e.off += rows
	case "home", "g":
		e.off = 0
	case "end", "G":
		e.off = last
	}
	e.off = min(max(e.off, 0), last)
	return nil
}
