package agent

import (
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
// which the session could not be written to its store: a full disk, a
// store that went away. The session goes on in memory.
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

	mu      sync.Mutex // guards the fields below; taken after bus.mu
	pending []journalEntry
	merger  protocol.Merger // merges into the tail event of pending
	err     error           // the first write failure since takeErr

	kick chan struct{} // capacity 1: "pending is not empty"
	stop chan struct{}
	done chan struct{}
}

// journalEntry is an event or a record, exactly one set.
type journalEntry struct {
	ev  protocol.Event
	rec *record
}

func newJournal(log store.Log) *journal {
	j := &journal{log: log, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go j.flusher()
	return j
}

// journaled reports whether an event changes the display in a way that
// must survive a crash before its round ends. User messages, compactions,
// rewinds and clears are written as records when they happen.
func journaled(ev protocol.Event) bool {
	switch ev.(type) {
	case protocol.AssistantMessageAdded, protocol.AssistantContentUpdated, protocol.AssistantReasoningUpdated,
		protocol.ToolBlockUpdated, protocol.ErrorBlockAdded, protocol.AssistantMessageDiscarded, protocol.TurnEnded:
		return true
	}
	return false
}

// addEvent queues a published event. Called with bus.mu held.
func (j *journal) addEvent(ev protocol.Event) {
	j.mu.Lock()
	if n := len(j.pending); n > 0 && j.pending[n-1].ev != nil {
		if m, ok := j.merger.Merge(j.pending[n-1].ev, ev); ok {
			j.pending[n-1].ev = m
			j.mu.Unlock()
			return
		}
	}
	j.merger.Reset()
	j.pending = append(j.pending, journalEntry{ev: ev})
	j.mu.Unlock()
	select {
	case j.kick <- struct{}{}:
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

// flush writes everything queued, in order, with one append.
func (j *journal) flush() error {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	j.mu.Lock()
	batch := j.pending
	j.pending = nil
	j.merger.Reset()
	j.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	raw := make([]json.RawMessage, 0, len(batch))
	for _, e := range batch {
		r := e.rec
		if e.ev != nil {
			r = eventRecord(e.ev)
		}
		b, err := encodeRecord(*r)
		if err != nil {
			return j.fail(err)
		}
		raw = append(raw, b)
	}
	if err := j.log.Append(context.Background(), raw...); err != nil {
		return j.fail(err)
	}
	return nil
}

func (j *journal) fail(err error) error {
	err = fmt.Errorf("%w: %w", ErrNotSaved, err)
	j.mu.Lock()
	if j.err == nil {
		j.err = err
	}
	j.mu.Unlock()
	return err
}

// takeErr returns the first write failure since the last call, if any.
func (j *journal) takeErr() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	err := j.err
	j.err = nil
	return err
}

// flusher writes queued events journalDelay after the first of a batch.
func (j *journal) flusher() {
	defer close(j.done)
	t := time.NewTimer(journalDelay)
	t.Stop()
	for {
		select {
		case <-j.kick:
		case <-j.stop:
			return
		}
		t.Reset(journalDelay)
		select {
		case <-t.C:
		case <-j.stop:
			t.Stop()
			return
		}
		_ = j.flush() // a failure is kept for takeErr
	}
}

// close writes what is queued, stops the flusher and closes the log.
func (j *journal) close() error {
	close(j.stop)
	<-j.done
	ferr := j.flush()
	return errors.Join(ferr, j.log.Close())
}

// eventRecord is the record of a streamed event. The header is dropped:
// seq numbers a run of the process, and a restored session starts again.
// A child session's event keeps the tool block it belongs under.
func eventRecord(ev protocol.Event) *record {
	ev = protocol.WithHeader(ev, protocol.Header{ParentToolID: ev.Head().ParentToolID})
	params, err := json.Marshal(ev)
	if err != nil {
		// Events are plain data; failing to encode one is a bug.
		panic(fmt.Sprintf("agent: encode %s: %v", ev.Method(), err))
	}
	return &record{Type: recEvent, Method: ev.Method(), Event: params}
}
