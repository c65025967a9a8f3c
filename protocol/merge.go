package protocol

// Merge combines two adjacent events of one session into one when both are
// deltas of the same block in the same stage: chunks are concatenated in
// order, never replaced. The result covers prev's first seq to next's seq
// (Header.FirstSeq). It reports false when the events cannot be merged.
//
// Every buffering stage (a slow subscriber's queue, a host's window) uses
// Merge, so that a backlog costs memory in proportion to the content, not
// to the number of events.
func Merge(prev, next Event) (Event, bool) {
	ph, nh := prev.Head(), next.Head()
	if ph.SessionID != nh.SessionID || nh.From() != ph.Seq+1 {
		return nil, false
	}
	h := Header{SessionID: ph.SessionID, Seq: nh.Seq, FirstSeq: ph.From()}
	switch p := prev.(type) {
	case AssistantContentUpdated:
		n, ok := next.(AssistantContentUpdated)
		if !ok || p.MessageID != n.MessageID || p.BlockIndex != n.BlockIndex ||
			p.Stage != StageStreaming || n.Stage != StageStreaming {
			return nil, false
		}
		p.Header, p.Chunk = h, p.Chunk+n.Chunk
		return p, true
	case AssistantReasoningUpdated:
		n, ok := next.(AssistantReasoningUpdated)
		if !ok || p.MessageID != n.MessageID || p.BlockIndex != n.BlockIndex ||
			p.Stage != StageStreaming || n.Stage != StageStreaming {
			return nil, false
		}
		p.Header, p.Chunk = h, p.Chunk+n.Chunk
		if p.StartedAt == 0 {
			p.StartedAt = n.StartedAt
		}
		return p, true
	case ToolBlockUpdated:
		n, ok := next.(ToolBlockUpdated)
		if !ok || p.MessageID != n.MessageID || p.BlockIndex != n.BlockIndex || p.Stage != n.Stage {
			return nil, false
		}
		switch p.Stage {
		case StageStreaming:
			p.Header, p.ParametersChunk = h, p.ParametersChunk+n.ParametersChunk
			return p, true
		case StageRunning:
			// The stable fields are repeated on every running event; the
			// later values are the current ones.
			n.Header, n.ResultChunk = h, p.ResultChunk+n.ResultChunk
			if n.ShortResult == "" {
				n.ShortResult = p.ShortResult
			}
			return n, true
		}
	}
	return nil, false
}
