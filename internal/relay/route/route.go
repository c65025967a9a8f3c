// Package route decides which chat messages one agent run produces, turn
// by turn, from the run's session events (seed 004 §5).
//
// The run's events are reduced into a protocol.List (the one reducer); the
// text of each model turn (the text blocks of one assistant message) is
// read from it when the turn ends. A turn whose stop reason is tool_use is an
// interstitial — a short remark between tool calls — and goes out at once.
// Any other stop reason (end_turn, max_tokens, stop_sequence, pause_turn,
// refusal and reasons not invented yet) makes the turn part of the final
// answer, joined to earlier final turns by a blank line (a turn that
// continues one cut by max_tokens is joined directly); the final answer
// goes out when the run ends, in as few messages as the channel's limit
// allows, led by the remark the caller held back, if any (Lead). Then goes whatever was buffered for turns that never ended (an
// abort, a crash), then — if nothing at all was sent — the run's result
// text, then the run's errors. The text of a discarded attempt is dropped;
// nothing else produced is ever lost.
package route

import (
	"strings"

	"github.com/sluicehq/sluice/internal/relay/split"
	"github.com/sluicehq/sluice/protocol"
)

// Kind says why a message is sent.
type Kind string

const (
	// Interstitial is the text of a turn that ended in tool use.
	Interstitial Kind = "interstitial"
	// Final is the final answer.
	Final Kind = "final"
	// Partial is the text of a turn that never ended (an abort).
	Partial Kind = "partial"
	// Result is the run's result text, sent when nothing else was.
	Result Kind = "result"
	// Error reports why a run failed or stopped.
	Error Kind = "error"
)

// Message is one chat message to send.
type Message struct {
	Kind Kind
	Text string
}

// Router follows one run. It is not safe for concurrent use.
//
// It keeps no text of its own: the run's messages are a protocol.List —
// the reducer every face uses, which also drops discarded attempts — and a
// turn's text is read from it when the turn ends.
type Router struct {
	limit   int
	list    protocol.List
	routed  map[string]bool // messages whose turn ended: sent or part of the final answer
	final   []string        // texts of the final turns so far
	cut     bool            // the last final turn hit max_tokens: the next one continues it
	loose   []string        // errors that name no message of the run
	lead    string          // a remark to send before the final answer (Lead)
	sent    bool
	stopped bool
}

// New returns a router for a channel whose messages hold at most limit
// UTF-16 code units (at least split.MinLimit).
func New(limit int) *Router {
	return &Router{limit: limit, routed: map[string]bool{}}
}

// Apply takes the run's next event and returns the messages to send now.
func (r *Router) Apply(ev protocol.Event) []Message {
	// The list holds this run only, from an empty start: events are
	// numbered in arrival order, whatever the backend numbered them
	// (Claude Code's stream has no seq; the agent's starts mid-session).
	h := ev.Head()
	ev = protocol.WithHeader(ev, protocol.Header{SessionID: h.SessionID, Seq: r.list.Seq() + 1, ParentToolID: h.ParentToolID})
	if err := r.list.Apply(ev); err != nil {
		// An event that fits no message of the run; of those only an
		// error (a backend's own failure) says something.
		if e, ok := ev.(protocol.ErrorBlockAdded); ok && e.Error != "" {
			r.loose = append(r.loose, e.Error)
		}
		return nil
	}
	e, ok := ev.(protocol.TurnEnded)
	if !ok || e.ParentToolID != "" {
		// A subagent's turns are its work, not the answer: the parent's
		// turn that called it says what reaches the chat.
		return nil
	}
	text := r.text(e.MessageID)
	r.routed[e.MessageID] = true
	if e.StopReason == "tool_use" {
		r.cut = false
		return r.out(Interstitial, text)
	}
	switch {
	case text == "":
	case r.cut && len(r.final) > 0:
		// The agent continued a response cut by the output limit: the
		// text goes on mid-sentence, with no blank line.
		r.final[len(r.final)-1] += text
	default:
		r.final = append(r.final, text)
	}
	r.cut = e.StopReason == "max_tokens"
	return nil
}

// PendingPermissions returns the run's approval requests not yet
// resolved, oldest first, as the list holds them.
func (r *Router) PendingPermissions() []protocol.PermissionRequest {
	return r.list.PendingPermissions()
}

// Lead gives Finish a remark that Apply returned and the caller held back
// (a short interstitial waiting for company): it goes first, packed with
// the final answer, separated by a blank line — or alone when there is no
// final answer.
func (r *Router) Lead(text string) {
	r.lead = text
}

// Finish ends the run and returns the messages still to send: the final
// answer, the text of turns that never ended, the result text when nothing
// was sent, and the errors. result may be empty.
func (r *Router) Finish(result string) []Message {
	if r.stopped {
		return nil
	}
	r.stopped = true
	var out []Message
	switch {
	case r.lead != "" && len(r.final) > 0:
		out = r.out(Final, r.lead+"\n\n"+strings.Join(r.final, "\n\n"))
	case r.lead != "":
		out = r.out(Interstitial, r.lead)
		out = append(out, r.out(Final, strings.Join(r.final, "\n\n"))...)
	default:
		out = r.out(Final, strings.Join(r.final, "\n\n"))
	}
	var errs []string
	for i := range r.list.Len() {
		m := r.list.At(i)
		if m.Role == protocol.RoleAssistant && !r.routed[m.ID] {
			out = append(out, r.out(Partial, joinText(m))...)
		}
		for _, b := range m.Blocks {
			if b.Type == protocol.BlockError && b.Content != "" {
				errs = append(errs, b.Content)
			}
		}
	}
	if !r.sent {
		out = append(out, r.out(Result, trim(result))...)
	}
	for _, e := range append(errs, r.loose...) {
		out = append(out, r.out(Error, "⚠️ "+e)...)
	}
	return out
}

// text is the text of message id in the list, trimmed.
func (r *Router) text(id string) string {
	i := r.list.Index(id)
	if i < 0 {
		return ""
	}
	return joinText(r.list.At(i))
}

// joinText joins the text blocks of m, as the reducer holds them, trimmed.
func joinText(m protocol.Message) string {
	var b strings.Builder
	for _, blk := range m.Blocks {
		if blk.Type == protocol.BlockText {
			b.WriteString(blk.Content)
		}
	}
	return trim(b.String())
}

// out splits text into messages of kind k.
func (r *Router) out(k Kind, text string) []Message {
	var ms []Message
	for _, t := range split.Messages(text, r.limit) {
		ms = append(ms, Message{Kind: k, Text: t})
	}
	if len(ms) > 0 {
		r.sent = true
	}
	return ms
}

// trim drops the blank lines around a text and the white space at its end,
// which no chat shows; the indentation of its first line stays.
func trim(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 || strings.Trim(s[:i], " \t\r") != "" {
			return s
		}
		s = s[i+1:]
	}
}
