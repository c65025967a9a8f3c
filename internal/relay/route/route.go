// Package route decides which chat messages one agent run produces, turn
// by turn, from the run's session events (seed 004 §5).
//
// The text of each model turn (the text blocks of one assistant message) is
// buffered until the turn ends. A turn whose stop reason is tool_use is an
// interstitial — a short remark between tool calls — and goes out at once.
// Any other stop reason (end_turn, max_tokens, stop_sequence, pause_turn,
// refusal and reasons not invented yet) makes the turn part of the final
// answer, joined to earlier final turns by a blank line (a turn that
// continues one cut by max_tokens is joined directly); the final answer
// goes out when the run ends, in as few messages as the channel's limit
// allows. Then goes whatever was buffered for turns that never ended (an
// abort, a crash), then — if nothing at all was sent — the run's result
// text, then the run's errors. The text of a discarded attempt is dropped;
// nothing else produced is ever lost.
package route

import (
	"slices"
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
type Router struct {
	limit   int
	turns   map[string]*turn
	order   []string // ids of the buffered turns, in order of first text
	final   []string // texts of the final turns so far
	cut     bool     // the last final turn hit max_tokens: the next one continues it
	errors  []string
	sent    bool
	stopped bool
}

// turn buffers the text blocks of one assistant message.
type turn struct {
	blocks map[int]*strings.Builder
}

func (t *turn) text() string {
	idx := make([]int, 0, len(t.blocks))
	for i := range t.blocks {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	var b strings.Builder
	for _, i := range idx {
		b.WriteString(t.blocks[i].String())
	}
	return b.String()
}

// New returns a router for a channel whose messages hold at most limit
// UTF-16 code units (at least split.MinLimit).
func New(limit int) *Router {
	return &Router{limit: limit, turns: map[string]*turn{}}
}

// Apply takes the run's next event and returns the messages to send now.
func (r *Router) Apply(ev protocol.Event) []Message {
	switch ev := ev.(type) {
	case protocol.AssistantContentUpdated:
		if ev.Chunk == "" {
			return nil
		}
		t := r.turns[ev.MessageID]
		if t == nil {
			t = &turn{blocks: map[int]*strings.Builder{}}
			r.turns[ev.MessageID] = t
			r.order = append(r.order, ev.MessageID)
		}
		b := t.blocks[ev.BlockIndex]
		if b == nil {
			b = &strings.Builder{}
			t.blocks[ev.BlockIndex] = b
		}
		b.WriteString(ev.Chunk)
	case protocol.AssistantMessageDiscarded:
		// A failed attempt that will be retried: its text comes again.
		r.drop(ev.MessageID)
	case protocol.TurnEnded:
		text := r.take(ev.MessageID)
		if ev.StopReason == "tool_use" {
			r.cut = false
			return r.out(Interstitial, text)
		}
		switch {
		case text == "":
		case r.cut && len(r.final) > 0:
			// The agent continued a response cut by the output limit:
			// the text goes on mid-sentence, with no blank line.
			r.final[len(r.final)-1] += text
		default:
			r.final = append(r.final, text)
		}
		r.cut = ev.StopReason == "max_tokens"
	case protocol.ErrorBlockAdded:
		if ev.Error != "" {
			r.errors = append(r.errors, ev.Error)
		}
	}
	return nil
}

// Finish ends the run and returns the messages still to send: the final
// answer, the text of turns that never ended, the result text when nothing
// was sent, and the errors. result may be empty.
func (r *Router) Finish(result string) []Message {
	if r.stopped {
		return nil
	}
	r.stopped = true
	out := r.out(Final, strings.Join(r.final, "\n\n"))
	for len(r.order) > 0 {
		out = append(out, r.out(Partial, r.take(r.order[0]))...)
	}
	if !r.sent {
		out = append(out, r.out(Result, trim(result))...)
	}
	for _, e := range r.errors {
		out = append(out, r.out(Error, "⚠️ "+e)...)
	}
	return out
}

// take removes a turn's buffer and returns its text, trimmed.
func (r *Router) take(id string) string {
	t := r.turns[id]
	r.drop(id)
	if t == nil {
		return ""
	}
	return trim(t.text())
}

func (r *Router) drop(id string) {
	delete(r.turns, id)
	if i := slices.Index(r.order, id); i >= 0 {
		r.order = slices.Delete(r.order, i, i+1)
	}
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
