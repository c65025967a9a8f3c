package tui

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/protocol"
)

// apply applies one event the moment it arrives: to the list with the one
// reducer, then to what the UI shows. Anything that became final is
// printed to the scrollback at once (advance).
func (m *ui) apply(ev protocol.Event) {
	// Where a removal starts must be known before the reducer removes it.
	removedAt := -1
	var removedText string
	child := ev.Head().ParentToolID != "" // a subagent's: it changes its call's block only
	switch e := ev.(type) {
	case protocol.MessagesRewound:
		removedAt = m.list.Index(e.AnchorMessageID)
		if removedAt >= 0 {
			removedText = m.list.At(removedAt).Text()
		}
	case protocol.AssistantMessageDiscarded:
		removedAt = m.list.Index(e.MessageID)
	case protocol.MessagesCleared:
		removedAt = 0
	}
	if child {
		removedAt = -1
	}
	prompt := m.prompt()

	switch err := m.list.Apply(ev); {
	case err == nil:
	case errors.Is(err, protocol.ErrStale):
		return
	default:
		m.resync()
		return
	}

	switch e := ev.(type) {
	case protocol.RunStateChanged:
		if !m.list.Running() {
			m.notice = ""
		}
	case protocol.StreamNotice:
		m.notice = noticeText(e)
	case protocol.AssistantMessageAdded, protocol.AssistantContentUpdated,
		protocol.AssistantReasoningUpdated, protocol.ToolBlockUpdated:
		// The stream is flowing again.
		m.notice = ""
	case protocol.TurnEnded:
		if e.Usage != nil {
			m.usage = m.usage.Add(*e.Usage)
		}
	case protocol.PermissionResolved:
		delete(m.answered, e.RequestID)
		if prompt != nil && prompt.RequestID == e.RequestID {
			m.permSel = 0 // the next prompt starts at its first choice
		}
	case protocol.MessagesRewound:
		m.removed(removedAt, "rewound to before: "+firstLine(removedText))
	case protocol.MessagesCleared:
		m.removed(removedAt, "conversation cleared")
		if !child {
			m.notice = ""
		}
	case protocol.AssistantMessageDiscarded:
		// What of the attempt was printed while it streamed stays; the
		// retry starts again below it.
		m.removed(removedAt, discardedDivider(e.Reason))
	}
	m.advance()
}

// removed moves the print cursor after messages from index i on left the
// list. When printed content went with them, a divider says so in the
// scrollback (which cannot be unprinted).
func (m *ui) removed(i int, divider string) {
	if i < 0 {
		return
	}
	if i < m.pm || (i == m.pm && (m.pb > 0 || m.pl > 0)) {
		m.pm, m.pb, m.pl = i, 0, 0
		m.closeStreamed()
		if divider != "" {
			m.emit([]string{stDim.Render("── " + divider + " ──")})
		}
	}
	m.pm = min(m.pm, m.list.Len())
	for k := range m.caches {
		if m.list.Index(k.msg) < 0 {
			delete(m.caches, k)
		}
	}
}

// resync replaces the list with a snapshot after an event that did not fit
// (a gap in seq or an unknown message): messages, run state and permission
// prompts alike. The print cursor stays on the message it was on when that
// message is still there.
func (m *ui) resync() {
	var cur string
	if m.pm < m.list.Len() {
		cur = m.list.At(m.pm).ID
	}
	snap, sub := m.sess.SnapshotAndSubscribe()
	m.sub.Close()
	m.sub = sub
	m.gen++
	m.list.Reset(snap)
	clear(m.caches)
	if i := m.list.Index(cur); cur != "" && i >= 0 {
		m.pm = i
	} else {
		m.pm, m.pb, m.pl = min(m.pm, m.list.Len()), 0, 0
		m.closeStreamed()
	}
	m.forgetAnswered()
}

// advance prints everything that became final, in order.
//
// A message is printed block by block, in order: a block prints when it
// has ended, and an answer's text as it streams, line by line as its lines
// become final (emitStable), so that a long answer can be read from its
// start while it streams. A message is left (the cursor moves past it) when
// it is closed: a later message exists or the session is idle. A failed
// attempt's message is discarded before its retry: what of it was printed
// stays in the scrollback, under a divider (removed).
func (m *ui) advance() {
	if !m.ready {
		return
	}
	for m.pm < m.list.Len() {
		msg := m.list.At(m.pm)
		closed := m.pm < m.list.Len()-1 || !m.list.Running()
		for m.pb < len(msg.Blocks) {
			if !closed && !blockFinal(msg.Blocks[m.pb]) {
				m.emitStable(msg, m.pb)
				return
			}
			m.emitBlock(msg, m.pb)
			delete(m.caches, blockKey{msg.ID, m.pb})
			m.pb, m.pl = m.pb+1, 0
		}
		if !closed {
			return
		}
		m.pm, m.pb, m.pl = m.pm+1, 0, 0
	}
}

// blockFinal reports whether a block will not change any more.
func blockFinal(b protocol.Block) bool {
	switch b.Type {
	case protocol.BlockText, protocol.BlockReasoning, protocol.BlockTool:
		return b.Stage == "" || b.Stage == protocol.StageEnd
	}
	return true
}

// discardedDivider is the divider under what was printed of an attempt
// that is discarded before its retry.
func discardedDivider(reason string) string {
	if reason = firstLine(reason); reason != "" {
		return "the answer above was cut off (" + reason + "); it starts again below"
	}
	return "the answer above was cut off; it starts again below"
}

func noticeText(e protocol.StreamNotice) string {
	switch e.Kind {
	case protocol.NoticeStalled:
		return fmt.Sprintf("⚠ The stream has stalled: nothing received for %ds…", e.IdleMs/1000)
	case protocol.NoticeRetrying:
		s := fmt.Sprintf("↻ Retrying (attempt %d", e.Attempt)
		if e.DelayMs > 0 {
			s += fmt.Sprintf(", in %.1fs", float64(e.DelayMs)/1000)
		}
		s += ")"
		if e.Cause != "" {
			s += ": " + firstLine(e.Cause)
		}
		return s
	}
	return "⚠ " + string(e.Kind)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + "…"
	}
	return s
}
