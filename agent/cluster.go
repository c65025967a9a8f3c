package agent

import (
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
)

// Continue restores a stored session, as Open does, for a node that takes
// it over from another: its model context comes from the store's records,
// but its view state is snap — the state the cluster's event log reached,
// which every client already holds — and its events continue after
// snap.Seq. What the previous node left unfinished, because it died, is
// ended with events published before any other: blocks still streaming
// end, tools end with success false, the cut answer gets an error block,
// permission requests are denied, queued work and background tasks are
// dropped, and a running session becomes idle. cause says why the previous
// node stopped; it is the cut answer's error block ("" for a crash).
func Continue(opts Options, id string, snap protocol.Snapshot, cause string) (*Session, error) {
	// The display list the records rebuild is dropped: snap is what was
	// published. The context, the title and the rewind marks are kept.
	return restore(opts, id, "Continue", func([]protocol.Message) protocol.Snapshot { return snap }, Interrupted(snap, cause), &snap)
}

// cutAnswer reports whether snap's last message is an answer that
// Interrupted ends as cut.
func cutAnswer(snap protocol.Snapshot) bool {
	n := len(snap.Messages)
	if n == 0 || snap.Messages[n-1].Role != protocol.RoleAssistant {
		return false
	}
	if snap.Running {
		return true
	}
	for _, b := range snap.Messages[n-1].Blocks {
		switch {
		case (b.Type == protocol.BlockText || b.Type == protocol.BlockReasoning) && b.Stage == protocol.StageStreaming,
			b.Type == protocol.BlockTool && b.Stage != protocol.StageEnd:
			return true
		}
	}
	return false
}

// reconcile makes the model's context say what the clients were shown.
// The records (the store's copy) and the event log (what was shown) are
// written apart, so a fault leaves one ahead of the other at the end: the
// records behind when the store was down or the process died before its
// last write, ahead when the log was down or the process died before it
// published what it had written. shown is the truth — the next owner's
// clients hold it — so from the first message where they part, the
// context is dropped and rebuilt from shown: user messages, the text of
// answers and their tool calls with the results shown (messageContext), the
// cut answer as its clients were shown it ended, then the note that it was
// interrupted. A parting before the last compaction, rewind or clear (base)
// is left as the records have it: the context was rebuilt there.
func (s *Session) reconcile(display []protocol.Message, recorded map[string]bool, ctxAt map[string]int, base int, shown protocol.Snapshot) {
	cut := cutAnswer(shown)
	k := 0
	for ; k < len(shown.Messages) && k < len(display); k++ {
		sm, dm := shown.Messages[k], display[k]
		sCut := cut && k == len(shown.Messages)-1
		dCut := dm.Role == protocol.RoleAssistant && !recorded[dm.ID]
		if !sameShown(sm, dm) || sCut != dCut {
			break
		}
	}
	if k == len(shown.Messages) && k == len(display) {
		return
	}
	if k < base {
		s.opts.Logger.Warn("the stored session parts from its event log before its last compaction; its context is kept", "session", s.id)
		return
	}
	for _, dm := range display[k:] {
		if n, ok := ctxAt[dm.ID]; ok {
			s.ctxMsgs = s.ctxMsgs[:n]
			break
		}
	}
	for i, m := range shown.Messages[k:] {
		last := cut && k+i == len(shown.Messages)-1
		s.ctxMsgs = append(s.ctxMsgs, messageContext(m, last)...)
		if last {
			s.ctxMsgs = append(s.ctxMsgs, model.Message{Role: model.RoleUser, Content: []model.Content{{Type: model.ContentText, Text: crashPrompt}}})
		}
	}
}

// sameShown reports whether the stored display message d says what the
// shown message sm said: the same text, and the same tool calls with the
// same results (a call whose result the store missed parts them).
func sameShown(sm, d protocol.Message) bool {
	if sm.ID != d.ID || sm.Text() != d.Text() {
		return false
	}
	return slices.EqualFunc(toolCalls(sm), toolCalls(d), func(a, b protocol.Block) bool {
		return a.ToolID == b.ToolID && a.Name == b.Name && a.Parameters == b.Parameters && a.Stage == b.Stage &&
			a.Result == b.Result && (a.Success != nil && *a.Success) == (b.Success != nil && *b.Success)
	})
}

func toolCalls(m protocol.Message) []protocol.Block {
	var out []protocol.Block
	for _, b := range m.Blocks {
		if b.Type == protocol.BlockTool {
			out = append(out, b)
		}
	}
	return out
}

// StopInterrupted is the stop reason of a turn that the process running it
// stopped before the model ended it: the run ends visibly, as a turn.
const StopInterrupted = "interrupted"

// Interrupted returns the events that end what snap left unfinished when
// the process running the session stopped (cause, or a crash if ""): see
// Continue. They carry no seq.
func Interrupted(snap protocol.Snapshot, cause string) []protocol.Event {
	var evs []protocol.Event
	if n := len(snap.Messages); n > 0 {
		m := snap.Messages[n-1]
		cut := false
		for i, b := range m.Blocks {
			switch b.Type {
			case protocol.BlockText, protocol.BlockReasoning:
				if b.Stage != protocol.StageStreaming {
					continue
				}
				cut = true
				if b.Type == protocol.BlockText {
					evs = append(evs, protocol.AssistantContentUpdated{MessageID: m.ID, BlockIndex: i, Stage: protocol.StageEnd})
				} else {
					evs = append(evs, protocol.AssistantReasoningUpdated{MessageID: m.ID, BlockIndex: i, Stage: protocol.StageEnd})
				}
			case protocol.BlockTool:
				if b.Stage == protocol.StageEnd {
					continue
				}
				cut = true
				no, result := false, b.Result
				evs = append(evs, protocol.ToolBlockUpdated{
					MessageID: m.ID, BlockIndex: i, ToolID: b.ToolID, Name: b.Name, Stage: protocol.StageEnd,
					Parameters: b.Parameters, CompactParams: b.CompactParams, ShortResult: b.ShortResult,
					Result: &result, Success: &no, Error: interruptedTool,
				})
			}
		}
		if m.Role == protocol.RoleAssistant && (cut || snap.Running) {
			note := crashNote
			if cause != "" {
				note = "Interrupted: " + cause
			}
			evs = append(evs, protocol.ErrorBlockAdded{MessageID: m.ID, BlockIndex: len(m.Blocks), Error: note})
			// A turn the model had not ended yet ends here; one it ended
			// (a tool call that was then running) keeps its reason.
			if m.StopReason == "" {
				evs = append(evs, protocol.TurnEnded{MessageID: m.ID, StopReason: StopInterrupted})
			}
		}
	}
	for _, p := range snap.PendingPermissions {
		evs = append(evs, protocol.PermissionResolved{RequestID: p.RequestID, Decision: protocol.DecisionDeny})
	}
	if len(snap.Queued) > 0 {
		evs = append(evs, protocol.QueueChanged{})
	}
	if snap.Compaction != nil {
		evs = append(evs, protocol.CompactionUpdated{Stage: protocol.StageEnd})
	}
	for _, t := range snap.Tasks {
		evs = append(evs, protocol.TaskUpdated{Task: t, State: protocol.TaskEnded, Status: "interrupted: sluice stopped"})
	}
	if snap.Running {
		evs = append(evs, protocol.RunStateChanged{State: protocol.RunIdle})
	}
	return evs
}

// Mirror holds the view state of a session that runs elsewhere (on another
// node of a cluster), fed with its events as they were published there:
// faces subscribe to it and pull snapshots from it as they do from a
// Session, with the same guarantees (adjacent deltas merge in a slow
// subscriber's queue, SubscribeFrom replays what is buffered). It is safe
// for concurrent use.
type Mirror struct {
	bus *bus
}

// NewMirror returns a mirror of session id holding snap.
func NewMirror(id string, snap protocol.Snapshot) *Mirror {
	return &Mirror{bus: newBus(id, snap)}
}

// ID is the session's id.
func (m *Mirror) ID() string { return m.bus.sessionID }

// Apply applies an event the session published (already numbered; a
// merged one covers several seqs) and queues it to every subscriber. It
// returns the error of protocol.List.Apply: ErrStale for an event already
// held (dropped), ErrGap or ErrInconsistent when the mirror cannot take
// it (Reset it from a snapshot).
func (m *Mirror) Apply(ev protocol.Event) error {
	b := m.bus
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.list.Apply(ev); err != nil {
		return err
	}
	b.remember(ev)
	for _, s := range b.subs {
		s.push(Item{Event: ev})
	}
	return nil
}

// Reset replaces the mirror's state with snap, a later state of the
// session than the mirror holds (taken after a gap). Subscriptions are
// closed, since their events would not continue: subscribers take a new
// snapshot.
func (m *Mirror) Reset(snap protocol.Snapshot) {
	b := m.bus
	b.mu.Lock()
	defer b.mu.Unlock()
	b.list.Reset(snap)
	b.replay.reset()
	for _, s := range b.subs {
		s.closeLocked()
	}
	b.subs = nil
}

// Backfill adds events that precede the mirror's state to its replay
// buffer, so that SubscribeFrom can serve a subscriber that holds an older
// seq (the mirror started from a checkpoint, the log still had events
// before it). evs are contiguous and end where the buffer begins (at the
// mirror's seq when the buffer is empty); the buffer's bounds still apply.
func (m *Mirror) Backfill(evs []protocol.Event) error {
	if len(evs) == 0 {
		return nil
	}
	b := m.bus
	b.mu.Lock()
	defer b.mu.Unlock()
	end := b.list.Seq()
	if first, ok := b.replay.from(); ok {
		end = first - 1
	}
	for i, ev := range evs {
		next := end + 1
		if i+1 < len(evs) {
			next = evs[i+1].Head().From()
		}
		if ev.Head().Seq+1 != next {
			return fmt.Errorf("agent: backfill of %s: event covering %d..%d does not precede %d", b.sessionID, ev.Head().From(), ev.Head().Seq, next)
		}
	}
	b.replay.prepend(evs)
	return nil
}

// Close closes every subscription; queued events stay readable.
func (m *Mirror) Close() { m.bus.closeAll() }

// Messages returns a deep copy of the view state and its seq.
func (m *Mirror) Messages() protocol.Snapshot {
	m.bus.mu.Lock()
	defer m.bus.mu.Unlock()
	return m.bus.list.Snapshot()
}

// Seq returns the seq of the last event applied.
func (m *Mirror) Seq() int64 {
	m.bus.mu.Lock()
	defer m.bus.mu.Unlock()
	return m.bus.list.Seq()
}

// Running reports whether the session is running, as its last
// runStateChanged said.
func (m *Mirror) Running() bool {
	m.bus.mu.Lock()
	defer m.bus.mu.Unlock()
	return m.bus.list.Running()
}

// SnapshotAndSubscribe is Session.SnapshotAndSubscribe.
func (m *Mirror) SnapshotAndSubscribe(opts SubscribeOptions) (protocol.Snapshot, *Subscription) {
	m.bus.mu.Lock()
	defer m.bus.mu.Unlock()
	return m.bus.list.Snapshot(), m.bus.subscribeLocked(opts)
}

// SubscribeFrom is Session.SubscribeFrom.
func (m *Mirror) SubscribeFrom(seq int64, opts SubscribeOptions) (*Subscription, error) {
	return m.bus.subscribeFrom(seq, opts)
}
