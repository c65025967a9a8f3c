package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/store"
)

// ErrNotSaved is returned (wrapped, with the store's error) by a run during
// which the session could not be written to its store (a full disk, a
// store that went away) and the store had not taken what it refused by the
// run's end. The session goes on in memory, and the journal keeps writing
// what the store refused, in order, until it takes it.
var ErrNotSaved = errors.New("the session could not be saved")

// journalDelay is how long a streamed event may wait before it is written:
// streamed content reaches the store in batches at most this old (plus the
// time a sync takes), so a kill -9 loses at most the last fraction of a
// second of what a face showed, while a fast stream costs one write and
// one sync per batch, not per delta.
const journalDelay = 50 * time.Millisecond

// journal writes a session's records to its log in the order their changes
// happened. Streamed events (the deltas of the message being answered) are
// queued, merged per block, and written by a background flusher at most
// journalDelay after they were published; any other record is written at
// once, after everything queued before it.
//
// Events are queued under bus.mu (the order of the queue is the order of
// seq), records that copy a message are built and queued under bus.mu too,
// so a message record never precedes an event it already contains.
type journal struct {
	log store.Log

	wmu sync.Mutex // serialises writes to log; taken before mu

	mu           sync.Mutex // guards the fields below; taken after bus.mu
	pending      []journalEntry
	pendingBytes int             // eventSize of the events queued in pending
	merger       protocol.Merger // merges into the tail event of pending
	err          error           // the first write failure since takeErr

	// Guarded by wmu: what the log holds, as the flushes wrote it.
	// inLog holds the messages whose state the log can rebuild: added by
	// a journaled event or a message record, every later change journaled.
	// lost says that a write failed: the events of its batch are not in
	// the log, so no message may be committed by reference any more.
	inLog map[string]bool
	lost  bool
	// unsent is a batch the log refused (the store was down), written
	// before the next one: the store catches up by itself once it is
	// back, in order, rather than missing the batch for good. Its bytes
	// are bounded by journalUnsentMax.
	unsent      []json.RawMessage
	unsentBytes int

	kick chan struct{} // capacity 1: "pending is not empty"
	// urgent (capacity 1) says that more than journalBatchMax is queued:
	// the flusher writes it without waiting for journalDelay, so that a
	// fast stream is never held in memory (and encoded) a large batch at
	// a time.
	urgent chan struct{}
	stop   chan struct{}
	done   chan struct{}
}

// journalEntry is an event, a run of text deltas or a record, exactly one
// set. A record with commit set is a message's state at the end of a
// round: written as a commit record naming the message when the log holds
// every change of it (its events are already there, so the text is not
// written twice), else as the whole message.
//
// A run holds the streaming deltas of one text block, merged as
// protocol.Merger would merge them but kept as their chunks, joined once
// when the run is written: a text delta, the most frequent event by far,
// costs the journal no boxed event of its own, neither a plain copy nor a
// merged one. runBytes is the size of the run's chunks.
type journalEntry struct {
	ev       protocol.Event
	run      *textRun
	runBytes int
	rec      *record
	commit   bool
}

// journalMergeMax bounds the chunk of a queued merged event: a fast stream
// is written as events of this size rather than one event holding a whole
// batch, so that encoding one costs a bounded buffer.
const journalMergeMax = 64 << 10

// journalBatchMax is the queued size past which the flusher writes at
// once rather than journalDelay after the batch's first event.
const journalBatchMax = 1 << 20

// journalUnsentMax bounds what a journal holds for a store that is down;
// past it the oldest unsent batch is dropped for good (the session then
// goes on in memory, as ErrNotSaved says).
const journalUnsentMax = 64 << 20

// journalRetry is how soon a journal writes again after the store refused
// a batch: a retry's pace while the store is down, not a correctness
// bound.
const journalRetry = 250 * time.Millisecond

func newJournal(log store.Log) *journal {
	j := &journal{log: log, kick: make(chan struct{}, 1), urgent: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), inLog: map[string]bool{}}
	go j.flusher()
	return j
}

// journaled reports whether an event changes the display in a way that
// must survive a crash before its round ends. User messages, compactions,
// rewinds and clears are written as records when they happen, except a
// subagent's: it has no session file, so its events are its record.
func journaled(ev protocol.Event) bool {
	if ev.Head().ParentToolID != "" {
		switch ev.(type) {
		case protocol.UserMessageAdded, protocol.CompactBlockAdded, protocol.MessagesRewound, protocol.MessagesCleared:
			return true
		}
	}
	switch ev.(type) {
	case protocol.AssistantMessageAdded, protocol.AssistantContentUpdated, protocol.AssistantReasoningUpdated,
		protocol.ToolBlockUpdated, protocol.ErrorBlockAdded, protocol.AssistantMessageDiscarded, protocol.TurnEnded:
		return true
	}
	return false
}

// addEvent queues a published event; what it keeps is plain
// (protocol.Plain), never pinning the publisher's buffers. Called with
// bus.mu held.
func (j *journal) addEvent(ev protocol.Event) {
	j.mu.Lock()
	j.pendingBytes += eventSize(ev)
	urgent := j.pendingBytes > journalBatchMax
	n := len(j.pending)
	if e, ok := textDelta(ev); ok {
		if n > 0 && j.pending[n-1].run != nil && j.pending[n-1].run.extends(e) && eventOverhead+j.pending[n-1].runBytes < journalMergeMax {
			tail := &j.pending[n-1]
			tail.run.chunks = append(tail.run.chunks, e.Chunk)
			tail.runBytes += len(e.Chunk)
			j.mu.Unlock()
			if urgent {
				signal(j.urgent)
			}
			return
		}
		j.merger.Reset()
		j.pending = append(j.pending, journalEntry{run: newTextRun(e), runBytes: len(e.Chunk)})
		j.mu.Unlock()
		signal(j.kick)
		if urgent {
			signal(j.urgent)
		}
		return
	}
	if e, ok := ev.(protocol.ToolBlockUpdated); ok && e.File != nil {
		// The file data is for the live faces, not the block: it is not
		// kept.
		e.File = nil
		ev = e
	}
	ev = protocol.Plain(ev)
	if n > 0 && j.pending[n-1].ev != nil && eventSize(j.pending[n-1].ev) < journalMergeMax {
		if m, ok := j.merger.Merge(j.pending[n-1].ev, ev); ok {
			j.pending[n-1].ev = m
			j.mu.Unlock()
			if urgent {
				signal(j.urgent)
			}
			return
		}
	}
	j.merger.Reset()
	j.pending = append(j.pending, journalEntry{ev: ev})
	j.mu.Unlock()
	signal(j.kick)
	if urgent {
		signal(j.urgent)
	}
}

// signal sends on a channel of capacity 1 without waiting.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// addRecords queues records after everything queued so far.
func (j *journal) addRecords(recs []record) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.merger.Reset()
	for i := range recs {
		j.pending = append(j.pending, journalEntry{rec: &recs[i]})
	}
}

// addMessage queues the message record rec (a message's state at the end
// of a round), to be written as a commit when the log can rebuild it.
func (j *journal) addMessage(rec record) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.merger.Reset()
	j.pending = append(j.pending, journalEntry{rec: &rec, commit: true})
}

// flush writes everything queued, in order, with one append.
func (j *journal) flush() error {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	j.mu.Lock()
	batch := j.pending
	j.pending, j.pendingBytes = nil, 0
	j.merger.Reset()
	j.mu.Unlock()
	if len(batch) == 0 && len(j.unsent) == 0 {
		return nil
	}
	raw := j.unsent
	var encErr error
	for _, e := range batch {
		b, err := j.encode(e)
		if err != nil {
			j.lost = true // this entry is missing from the log for good
			encErr = errors.Join(encErr, j.fail(err))
			continue
		}
		raw = append(raw, b)
		j.unsentBytes += len(b)
	}
	j.unsent = nil
	if err := j.log.Append(context.Background(), raw...); err != nil {
		j.keepUnsent(raw)
		signal(j.kick) // the flusher tries again, once the store may be back
		return errors.Join(encErr, j.fail(err))
	}
	j.unsentBytes = 0
	return encErr
}

// keepUnsent keeps a batch the log refused for the next write, dropping
// the oldest records past journalUnsentMax: those the store then misses
// for good. Called with wmu held.
func (j *journal) keepUnsent(raw []json.RawMessage) {
	for len(raw) > 0 && j.unsentBytes > journalUnsentMax {
		j.unsentBytes -= len(raw[0])
		raw = raw[1:]
		j.lost = true
	}
	j.unsent = raw
}

// behind reports whether a batch waits for the store to come back.
func (j *journal) behind() bool {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	return len(j.unsent) > 0
}

// encode is the line of e. Called with wmu held, in the order of the log.
func (j *journal) encode(e journalEntry) (json.RawMessage, error) {
	if e.run != nil {
		return eventLine(e.run.since(0)), nil
	}
	if e.ev != nil {
		if a, ok := e.ev.(protocol.AssistantMessageAdded); ok {
			j.inLog[a.Message.ID] = true
		}
		return eventLine(e.ev), nil
	}
	r := *e.rec
	if r.refOf != "" && j.inLog[r.refOf] && !j.lost {
		r = r.withRefs()
	}
	if r.Type == recMessage && r.Message != nil {
		id := r.Message.ID
		if e.commit && j.inLog[id] && !j.lost {
			r = record{Type: recCommit, Time: r.Time, ID: id, Mark: r.Mark}
		}
		j.inLog[id] = true
	}
	return encodeRecord(r)
}

// fail keeps err for takeErr. Called with wmu held.
func (j *journal) fail(err error) error {
	err = fmt.Errorf("%w: %w", ErrNotSaved, err)
	j.mu.Lock()
	if j.err == nil {
		j.err = err
	}
	j.mu.Unlock()
	return err
}

// takeErr returns the first write failure since the last call, if any,
// unless it was made good since: the batches the store refused were all
// written once it came back.
func (j *journal) takeErr() error {
	j.wmu.Lock()
	good := len(j.unsent) == 0 && !j.lost
	j.wmu.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	err := j.err
	j.err = nil
	if good {
		return nil
	}
	return err
}

// flusher writes queued events journalDelay after the first of a batch.
func (j *journal) flusher() {
	defer close(j.done)
	t := time.NewTimer(journalDelay)
	t.Stop()
	for {
		delay := journalDelay
		select {
		case <-j.kick:
		case <-j.stop:
			return
		}
		if j.behind() {
			delay = journalRetry
		}
		t.Reset(delay)
		select {
		case <-t.C:
		case <-j.urgent:
			t.Stop()
		case <-j.stop:
			t.Stop()
			return
		}
		_ = j.flush() // a failure is kept for takeErr, and tried again
	}
}

// close writes what is queued, stops the flusher and closes the log.
func (j *journal) close() error {
	close(j.stop)
	<-j.done
	ferr := j.flush()
	return errors.Join(ferr, j.log.Close())
}

// eventLine is the record of a streamed event, as encodeRecord would write
// record{Type: recEvent, Method, Event}, framed by hand so that the event's
// text is encoded once rather than encoded, then compacted and copied into
// the record. The header is dropped: seq numbers a run of the process, and
// a restored session starts again. A child session's event keeps the tool
// block it belongs under.
func eventLine(ev protocol.Event) json.RawMessage {
	ev = protocol.WithHeader(ev, protocol.Header{ParentToolID: ev.Head().ParentToolID})
	method, _ := json.Marshal(ev.Method())
	var buf bytes.Buffer
	buf.Grow(len(eventLineHead) + len(method) + len(eventLineMid) + eventSize(ev) + 256)
	buf.WriteString(eventLineHead)
	buf.Write(method)
	buf.WriteString(eventLineMid)
	// json.Encoder escapes as json.Marshal does and writes the event into
	// buf directly; its newline becomes the record's closing brace.
	if err := json.NewEncoder(&buf).Encode(ev); err != nil {
		// Events are plain data; failing to encode one is a bug.
		panic(fmt.Sprintf("agent: encode %s: %v", ev.Method(), err))
	}
	line := buf.Bytes()
	line[len(line)-1] = '}'
	return line
}

const (
	eventLineHead = `{"type":"` + recEvent + `","time":0,"method":`
	eventLineMid  = `,"event":`
)
