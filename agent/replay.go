package agent

import (
	"sort"
	"strings"

	"github.com/sluicehq/sluice/protocol"
)

// replayBuffer holds a session's most recent events in seq order, for
// SubscribeFrom. Most of what a session publishes is text deltas of a few
// bytes each; a run of them (one block, consecutive seqs, each a single
// delta) is kept as one entry holding the deltas' chunks — 16 bytes per
// delta besides the chunk, which the published event shares, instead of a
// boxed event (~180 bytes). after hands the events back merged as a
// subscriber's queue merges them, so a subscriber cannot tell the
// difference.
type replayBuffer struct {
	entries []replayEntry
	events  int // events held, each delta of a run counted
	bytes   int // eventSize of the events held
}

// replayEntry is one event, or (run set) a run of text deltas.
type replayEntry struct {
	ev  protocol.Event
	run *textRun
}

// textRun is a run of streaming text deltas of one block: delta i has seq
// first+i and chunk chunks[i]; the first skip deltas are gone from the
// buffer.
type textRun struct {
	tmpl   protocol.AssistantContentUpdated // the deltas' common fields
	first  int64
	skip   int
	chunks []string
}

// newTextRun is the run of the one delta e.
func newTextRun(e protocol.AssistantContentUpdated) *textRun {
	r := &textRun{tmpl: protocol.Plain(e).(protocol.AssistantContentUpdated), first: e.Seq, chunks: []string{e.Chunk}}
	r.tmpl.Chunk = ""
	return r
}

func (r *textRun) from() int64 { return r.first + int64(r.skip) }
func (r *textRun) last() int64 { return r.first + int64(len(r.chunks)) - 1 }

// extends reports whether e is the run's next delta: what
// protocol.Merger would merge into it.
func (r *textRun) extends(e protocol.AssistantContentUpdated) bool {
	return e.Seq == r.last()+1 && e.SessionID == r.tmpl.SessionID && e.ParentToolID == r.tmpl.ParentToolID &&
		e.MessageID == r.tmpl.MessageID && e.BlockIndex == r.tmpl.BlockIndex
}

// since returns deltas i.. merged into one event, as a queue merges them.
func (r *textRun) since(i int) protocol.Event {
	ev := r.tmpl
	ev.Seq = r.last()
	if seq := r.first + int64(i); seq != ev.Seq {
		ev.FirstSeq = seq
	}
	ev.Chunk = strings.Join(r.chunks[i:], "")
	return ev
}

// dropFirst forgets the oldest delta and returns the size of its chunk.
// The slots of dropped deltas go once they are most of the run.
func (r *textRun) dropFirst() int {
	n := len(r.chunks[r.skip])
	r.chunks[r.skip] = ""
	r.skip++
	if r.skip > 1<<10 && 2*r.skip > len(r.chunks) {
		r.chunks = append([]string(nil), r.chunks[r.skip:]...)
		r.first += int64(r.skip)
		r.skip = 0
	}
	return n
}

// textDelta reports whether ev is a single streaming text delta, which a
// run holds.
func textDelta(ev protocol.Event) (protocol.AssistantContentUpdated, bool) {
	e, ok := ev.(protocol.AssistantContentUpdated)
	return e, ok && e.Stage == protocol.StageStreaming && e.FirstSeq == 0
}

// add appends ev, the event after the last one held. What it keeps is
// plain (protocol.Plain): it never pins the publisher's buffers.
func (b *replayBuffer) add(ev protocol.Event) {
	b.events++
	b.bytes += eventSize(ev)
	if e, ok := textDelta(ev); ok {
		if n := len(b.entries); n > 0 && b.entries[n-1].run != nil && b.entries[n-1].run.extends(e) {
			r := b.entries[n-1].run
			r.chunks = append(r.chunks, e.Chunk)
		} else {
			b.entries = append(b.entries, replayEntry{run: newTextRun(e)})
		}
	} else {
		b.entries = append(b.entries, replayEntry{ev: protocol.Plain(ev)})
	}
	b.trim()
}

// prepend adds evs, contiguous events that end where the buffer begins,
// before what it holds.
func (b *replayBuffer) prepend(evs []protocol.Event) {
	entries := make([]replayEntry, 0, len(evs)+len(b.entries))
	for _, ev := range evs {
		entries = append(entries, replayEntry{ev: ev})
		b.events++
		b.bytes += eventSize(ev)
	}
	b.entries = append(entries, b.entries...)
	b.trim()
}

// trim drops the oldest events while the buffer is over its bounds.
func (b *replayBuffer) trim() {
	for b.events > replayMaxEvents || (b.bytes > replayMaxBytes && b.events > 1) {
		e := &b.entries[0]
		if r := e.run; r != nil {
			b.bytes -= eventOverhead + r.dropFirst()
			if r.skip < len(r.chunks) {
				b.events--
				continue
			}
		} else {
			b.bytes -= eventSize(e.ev)
		}
		b.events--
		b.entries[0] = replayEntry{}
		b.entries = b.entries[1:]
	}
}

// reset empties the buffer.
func (b *replayBuffer) reset() {
	clear(b.entries)
	*b = replayBuffer{}
}

// from is the first seq the buffer holds; false when it is empty.
func (b *replayBuffer) from() (int64, bool) {
	if len(b.entries) == 0 {
		return 0, false
	}
	if r := b.entries[0].run; r != nil {
		return r.from(), true
	}
	return b.entries[0].ev.Head().From(), true
}

// after returns the events after seq, or false when the buffer does not
// hold the one right after it (gone, or inside an event merged elsewhere).
func (b *replayBuffer) after(seq int64) ([]protocol.Event, bool) {
	i := sort.Search(len(b.entries), func(i int) bool { return b.entries[i].last() > seq })
	if i == len(b.entries) {
		return nil, false
	}
	var out []protocol.Event
	if r := b.entries[i].run; r != nil {
		if seq+1 < r.from() {
			return nil, false
		}
		out = append(out, r.since(int(seq+1-r.first)))
	} else if b.entries[i].ev.Head().From() != seq+1 {
		return nil, false
	} else {
		out = append(out, b.entries[i].ev)
	}
	for _, e := range b.entries[i+1:] {
		if e.run != nil {
			out = append(out, e.run.since(e.run.skip))
		} else {
			out = append(out, e.ev)
		}
	}
	return out, true
}

// last is the entry's last seq.
func (e replayEntry) last() int64 {
	if e.run != nil {
		return e.run.last()
	}
	return e.ev.Head().Seq
}
