package protocol

// Merge combines two adjacent events of one session into one when both are
// deltas of the same block in the same stage: chunks are concatenated in
// order, never replaced. The result covers prev's first seq to next's seq
// (Header.FirstSeq). It reports false when the events cannot be merged.
//
// Every buffering stage (a slow subscriber's queue, a host's window) merges
// this way, so that a backlog costs memory in proportion to the content,
// not to the number of events. Merge copies prev's chunk; a stage that
// merges many events into one uses a Merger, which does not.
func Merge(prev, next Event) (Event, bool) {
	var m Merger
	return m.merge(prev, next)
}

// Merger merges runs of adjacent deltas in amortised O(len(chunk)) per
// event, however long the run grows. The zero value is ready. It remembers
// the buffer behind the last event it returned: call Merge with that event
// as prev (typically the tail of a queue) and Reset when the tail changes
// otherwise. A Merger is not safe for concurrent use.
type Merger struct {
	buf []byte // backs the growing chunk of the last merged event
}

// Reset forgets the last merged event.
func (m *Merger) Reset() { m.buf = nil }

// Merge is the package-level Merge without the copy.
func (m *Merger) Merge(prev, next Event) (Event, bool) {
	ev, ok := m.merge(prev, next)
	if !ok {
		m.buf = nil
	}
	return ev, ok
}

func (m *Merger) merge(prev, next Event) (Event, bool) {
	ph, nh := prev.Head(), next.Head()
	if ph.SessionID != nh.SessionID || ph.ParentToolID != nh.ParentToolID || nh.From() != ph.Seq+1 {
		return nil, false
	}
	h := Header{SessionID: ph.SessionID, Seq: nh.Seq, FirstSeq: ph.From(), ParentToolID: ph.ParentToolID}
	switch p := prev.(type) {
	case AssistantContentUpdated:
		n, ok := next.(AssistantContentUpdated)
		if !ok || p.MessageID != n.MessageID || p.BlockIndex != n.BlockIndex ||
			p.Stage != StageStreaming || n.Stage != StageStreaming {
			return nil, false
		}
		p.Header = h
		p.grown = m.concat(&p.Chunk, n.Chunk, p.grown, n.grown)
		return p, true
	case AssistantReasoningUpdated:
		n, ok := next.(AssistantReasoningUpdated)
		if !ok || p.MessageID != n.MessageID || p.BlockIndex != n.BlockIndex ||
			p.Stage != StageStreaming || n.Stage != StageStreaming {
			return nil, false
		}
		p.Header = h
		p.grown = m.concat(&p.Chunk, n.Chunk, p.grown, n.grown)
		later(&p.StartedAt, n.StartedAt)
		later(&p.EndedAt, n.EndedAt)
		return p, true
	case ToolBlockUpdated:
		n, ok := next.(ToolBlockUpdated)
		if !ok || p.MessageID != n.MessageID || p.BlockIndex != n.BlockIndex || p.Stage != n.Stage {
			return nil, false
		}
		// As the reducer applies them: a value an event carries replaces
		// the one before it, an empty one leaves it.
		switch p.Stage {
		case StageStreaming:
			p.Header = h
			appendString(&p.ParametersChunk, &m.buf, n.ParametersChunk)
			later(&p.ToolID, n.ToolID)
			later(&p.Name, n.Name)
			return p, true
		case StageRunning:
			// The final values (result, success, error) belong to end; a
			// running event that carries one is not merged, so that what
			// it replaces and what is appended after it keep their order.
			if p.Result != nil || n.Result != nil || p.Success != nil || n.Success != nil || p.Error != "" || n.Error != "" {
				return nil, false
			}
			p.Header = h
			appendString(&p.ResultChunk, &m.buf, n.ResultChunk)
			later(&p.ToolID, n.ToolID)
			later(&p.Name, n.Name)
			later(&p.Parameters, n.Parameters)
			later(&p.CompactParams, n.CompactParams)
			later(&p.ShortResult, n.ShortResult)
			later(&p.OldText, n.OldText)
			return p, true
		}
	}
	return nil, false
}

// concat appends next to *chunk, the chunks of two adjacent events of one
// block whose publisher's content they grew as pg and ng say (see grown),
// and returns what the merged event grew. When the two follow each other
// in the publisher's list, the merged chunk is a substring of its content
// rather than a copy — unless it is the smaller part of that content, so
// that a short merged chunk never keeps a large old buffer alive.
func (m *Merger) concat(chunk *string, next string, pg, ng grown) grown {
	if pg.after == "" || ng.after == "" || !sameString(pg.after, ng.before) {
		appendString(chunk, &m.buf, next)
		return grown{}
	}
	g := grown{before: pg.before, after: ng.after}
	if whole := ng.after[len(pg.before):]; 2*len(whole) >= len(ng.after) && len(whole) == len(*chunk)+len(next) {
		*chunk, m.buf = whole, nil
		return g
	}
	appendString(chunk, &m.buf, next)
	return g
}

// later sets *v to next unless next is the zero value: what the reducer
// does with a field that a later event may carry again.
func later[T comparable](v *T, next T) {
	var zero T
	if next != zero {
		*v = next
	}
}
