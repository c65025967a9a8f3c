package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
)

// Accumulator builds a Response from the parts of a stream. The zero value
// is ready to use; it is not safe for concurrent use.
//
// A block's content comes only from its deltas. A PartRetry discards what
// was accumulated (the failed attempt's output); PartStalled changes
// nothing.
type Accumulator struct {
	// TextFrom, when set, supplies the text of text and reasoning blocks
	// (by part index, as accumulated so far) instead of the accumulator
	// keeping its own copy of their deltas: a consumer that holds that
	// text already (the agent's display list) then keeps one copy of a
	// streamed answer, not two. Reset keeps it.
	TextFrom func(index int) string

	resp   Response
	blocks []*accBlock
	pos    map[int]int // part index → position in blocks
	last   *accBlock   // the block looked up last: deltas come in runs
}

type accBlock struct {
	index     int
	typ       BlockType
	id, name  string
	raw       json.RawMessage
	caller    json.RawMessage
	text      strings.Builder // text, reasoning, redacted data
	signature strings.Builder
	input     strings.Builder // tool use or raw block input JSON
	citations []json.RawMessage
	fields    map[string]json.RawMessage // raw block fields set by unknown deltas
}

// Reset empties the accumulator.
func (a *Accumulator) Reset() { *a = Accumulator{TextFrom: a.TextFrom} }

// Add applies p. It fails on a part that does not fit what came before (a
// delta for a block that was never started, or of the wrong kind), wrapping
// ErrMalformedEvent.
func (a *Accumulator) Add(p Part) error {
	switch p.Type {
	case PartRetry:
		a.Reset()
	case PartMessageStart:
		a.Reset()
		a.resp.ID, a.resp.Model, a.resp.Usage = p.ID, p.Model, p.Usage
	case PartBlockStart:
		if a.block(p.Index) != nil {
			return fmt.Errorf("%w: block %d started twice", ErrMalformedEvent, p.Index)
		}
		if a.pos == nil {
			a.pos = make(map[int]int)
		}
		a.pos[p.Index] = len(a.blocks)
		a.last = &accBlock{index: p.Index, typ: p.Block, id: p.ID, name: p.Name, raw: p.Raw, caller: p.Caller}
		a.blocks = append(a.blocks, a.last)
	case PartBlockDelta:
		b := a.block(p.Index)
		if b == nil {
			return fmt.Errorf("%w: %s delta for block %d, which was not started", ErrMalformedEvent, p.Delta, p.Index)
		}
		return b.add(p, a.TextFrom == nil)
	case PartBlockStop:
		if a.block(p.Index) == nil {
			return fmt.Errorf("%w: stop of block %d, which was not started", ErrMalformedEvent, p.Index)
		}
	case PartMessageDelta:
		a.resp.StopReason, a.resp.StopSequence, a.resp.Usage = p.StopReason, p.StopSequence, p.Usage
	}
	return nil
}

func (a *Accumulator) block(index int) *accBlock {
	if a.last != nil && a.last.index == index {
		return a.last
	}
	i, ok := a.pos[index]
	if !ok {
		return nil
	}
	a.last = a.blocks[i]
	return a.last
}

// add applies a delta; keepText says whether text and reasoning deltas
// are kept (not when Accumulator.TextFrom supplies them).
func (b *accBlock) add(p Part, keepText bool) error {
	ok := false
	switch p.Delta {
	case DeltaText:
		ok = b.typ == BlockText
		if keepText {
			b.text.WriteString(p.Text)
		}
	case DeltaCitation:
		ok = b.typ == BlockText && json.Valid([]byte(p.Text))
		b.citations = append(b.citations, json.RawMessage(p.Text))
	case DeltaReasoning:
		ok = b.typ == BlockReasoning
		if keepText {
			b.text.WriteString(p.Text)
		}
	case DeltaSignature:
		ok = b.typ == BlockReasoning || b.typ == BlockText || b.typ == BlockToolUse
		b.signature.WriteString(p.Text)
	case DeltaRedacted:
		ok = b.typ == BlockRedactedReasoning
		b.text.WriteString(p.Text)
	case DeltaInputJSON:
		ok = b.typ == BlockToolUse || b.typ == BlockRaw
		b.input.WriteString(p.Text)
	case DeltaRaw:
		var fields map[string]json.RawMessage
		ok = b.typ == BlockRaw && json.Unmarshal([]byte(p.Text), &fields) == nil
		delete(fields, "type")
		if b.fields == nil {
			b.fields = fields
		}
		for k, v := range fields {
			b.fields[k] = v
		}
	}
	if !ok {
		return fmt.Errorf("%w: %s delta %q for %s block %d", ErrMalformedEvent, p.Delta, truncate(p.Text, 40), b.typ, p.Index)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Response returns what has been accumulated, as a new value. A tool use
// (or raw block) whose streamed input is not valid JSON, because the stream
// stopped at max_tokens in the middle of it, is left out: it cannot be run
// nor sent back. Unknown deltas of a raw block set its top-level fields;
// its streamed input replaces its "input".
func (a *Accumulator) Response() *Response {
	r := a.resp
	r.Content = make([]Content, 0, len(a.blocks))
	for _, b := range a.blocks {
		c, ok := a.content(b)
		if ok {
			r.Content = append(r.Content, c)
		}
	}
	return &r
}

// Block returns the content of the block with the part index as
// accumulated so far, as Response would hold it; false when there is no
// such block or it cannot be sent back (a tool use's input that is not
// valid JSON). A face that writes each block as it finishes calls it at
// the block's stop.
func (a *Accumulator) Block(index int) (Content, bool) {
	b := a.block(index)
	if b == nil {
		return Content{}, false
	}
	return a.content(b)
}

// text is a text or reasoning block's text so far.
func (a *Accumulator) text(b *accBlock) string {
	if a.TextFrom != nil {
		return a.TextFrom(b.index)
	}
	return b.text.String()
}

func (a *Accumulator) content(b *accBlock) (Content, bool) {
	switch b.typ {
	case BlockText:
		c := Content{Type: ContentText, Text: a.text(b), Signature: b.signature.String()}
		if len(b.citations) > 0 {
			c.Citations = joinArray(b.citations)
		}
		return c, true
	case BlockReasoning:
		return Content{Type: ContentReasoning, Text: a.text(b), Signature: b.signature.String()}, true
	case BlockRedactedReasoning:
		return Content{Type: ContentRedactedReasoning, Data: b.text.String()}, true
	case BlockToolUse:
		input := json.RawMessage(b.input.String())
		if len(bytes.TrimSpace(input)) == 0 {
			input = json.RawMessage("{}")
		}
		if !json.Valid(input) {
			return Content{}, false
		}
		return Content{Type: ContentToolUse, ID: b.id, Name: b.name, Input: input, Caller: b.caller, Signature: b.signature.String()}, true
	case BlockRaw:
		raw := b.raw
		if b.input.Len() > 0 || len(b.fields) > 0 {
			var fields map[string]json.RawMessage
			if json.Unmarshal(raw, &fields) != nil || fields == nil {
				fields = map[string]json.RawMessage{"type": mustJSON(b.name)}
			}
			for k, v := range b.fields {
				fields[k] = v
			}
			if b.input.Len() > 0 {
				input := json.RawMessage(b.input.String())
				if !json.Valid(input) {
					return Content{}, false
				}
				fields["input"] = input
			}
			raw = mustJSON(fields)
		}
		return Content{Type: ContentRaw, Name: b.name, Raw: raw}, true
	}
	return Content{}, false
}

func joinArray(items []json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(it)
	}
	buf.WriteByte(']')
	return buf.Bytes()
}

// mustJSON marshals a value that cannot fail to marshal (strings and maps
// of valid raw JSON).
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Parts returns r as the parts a stream of it would be made of, so that a
// response obtained without streaming reaches consumers the same way.
func (r *Response) Parts() iter.Seq[Part] {
	return func(yield func(Part) bool) {
		if !yield(Part{Type: PartMessageStart, ID: r.ID, Model: r.Model, Usage: r.Usage}) {
			return
		}
		index := 0
		for _, c := range r.Content {
			switch c.Type {
			case ContentText, ContentReasoning, ContentRedactedReasoning, ContentToolUse, ContentRaw:
				if !contentParts(index, c, yield) {
					return
				}
				index++
			}
		}
		if yield(Part{Type: PartMessageDelta, StopReason: r.StopReason, StopSequence: r.StopSequence, Usage: r.Usage}) {
			yield(Part{Type: PartMessageStop})
		}
	}
}

// contentParts yields c as block index's parts.
func contentParts(index int, c Content, yield func(Part) bool) bool {
	start := Part{Type: PartBlockStart, Index: index}
	var deltas []Part
	delta := func(t DeltaType, s string) {
		if s != "" {
			deltas = append(deltas, Part{Type: PartBlockDelta, Index: index, Delta: t, Text: s})
		}
	}
	switch c.Type {
	case ContentText:
		start.Block = BlockText
		delta(DeltaText, c.Text)
		var citations []json.RawMessage
		if json.Unmarshal(c.Citations, &citations) == nil {
			for _, ci := range citations {
				delta(DeltaCitation, string(ci))
			}
		}
		delta(DeltaSignature, c.Signature)
	case ContentReasoning:
		start.Block = BlockReasoning
		delta(DeltaReasoning, c.Text)
		delta(DeltaSignature, c.Signature)
	case ContentRedactedReasoning:
		start.Block = BlockRedactedReasoning
		delta(DeltaRedacted, c.Data)
	case ContentToolUse:
		start.Block, start.ID, start.Name, start.Caller = BlockToolUse, c.ID, c.Name, c.Caller
		input := string(c.Input)
		if input == "" {
			input = "{}"
		}
		delta(DeltaInputJSON, input)
		delta(DeltaSignature, c.Signature)
	case ContentRaw:
		start.Block, start.Name, start.Raw = BlockRaw, c.Name, c.Raw
		if start.Name == "" {
			var head struct{ Type string }
			_ = json.Unmarshal(c.Raw, &head) // a raw block without a type keeps an empty name
			start.Name = head.Type
		}
	}
	if !yield(start) {
		return false
	}
	for _, d := range deltas {
		if !yield(d) {
			return false
		}
	}
	return yield(Part{Type: PartBlockStop, Index: index})
}
