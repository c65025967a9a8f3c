package agent

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/protocol"
)

// The delivery guarantees of a session's events are in the package
// documentation (doc.go), where go doc shows them.

// ErrClosed is returned by Subscription.Next after Close, and by Session
// methods after the session is closed.
var ErrClosed = errors.New("agent: closed")

// ErrTooFarBehind is returned by SubscribeFrom when the events after the
// given seq are no longer in the replay buffer: pull a snapshot instead.
var ErrTooFarBehind = errors.New("agent: events no longer buffered, pull a snapshot")

// Item is one thing a subscription delivers: a session event, or, only for
// subscriptions that asked for them, a model part as it arrived (print mode
// mirrors the provider's stream with them). Exactly one of Event and Part
// is set.
type Item struct {
	Event protocol.Event
	Part  *model.Part
	// ParentToolID is set on a part of a subagent's stream: the id of the
	// Agent call that runs it (as its events' protocol.Header.ParentToolID).
	ParentToolID string
}

// SubscribeOptions tune a subscription.
type SubscribeOptions struct {
	// ModelParts asks for the model's parts too, interleaved in order with
	// the events. They carry no seq and are never merged.
	ModelParts bool
	// MaxPendingBytes, when positive, makes the subscriber hold the model's
	// stream back: while more than this many bytes of events (about their
	// text) wait in its queue, the session reads no further model output
	// until the subscriber catches up, the run is aborted, or the
	// subscription is closed. Nothing is dropped. For a consumer that is the
	// session's only audience, such as a host on stdio that stops reading
	// its output; without it a backlog is bounded by the content streamed.
	MaxPendingBytes int
}

// Subscription receives a session's events in order. Next may be called
// from one goroutine at a time; Close may be called from any goroutine and
// unblocks Next.
type Subscription struct {
	bus    *bus
	opts   SubscribeOptions
	notify chan struct{} // capacity 1: "the queue is not empty or closed"

	// room is signalled (capacity 1) when a subscription with
	// MaxPendingBytes has room again or is closed.
	room chan struct{}

	// Guarded by bus.mu.
	queue   []Item
	head    int
	merger  protocol.Merger // merges into the queue's tail
	closed  bool
	pending int // itemSize of the queued items
}

// Next returns the next event, skipping model parts. It blocks until one
// is available, ctx is done, or the subscription or session is closed
// (ErrClosed; events queued before the close are still returned first).
func (s *Subscription) Next(ctx context.Context) (protocol.Event, error) {
	for {
		it, err := s.NextItem(ctx)
		if err != nil {
			return nil, err
		}
		if it.Event != nil {
			return it.Event, nil
		}
	}
}

// NextItem is Next including model parts.
func (s *Subscription) NextItem(ctx context.Context) (Item, error) {
	for {
		s.bus.mu.Lock()
		if s.head < len(s.queue) {
			it := s.queue[s.head]
			s.queue[s.head] = Item{}
			s.head++
			s.pending -= itemSize(it)
			if s.head == len(s.queue) {
				s.queue, s.head = s.queue[:0], 0
				s.merger.Reset() // the tail it grew has been handed out
			}
			if !s.full() {
				s.signalRoom()
			}
			s.bus.mu.Unlock()
			return it, nil
		}
		closed := s.closed
		s.bus.mu.Unlock()
		if closed {
			return Item{}, ErrClosed
		}
		select {
		case <-s.notify:
		case <-ctx.Done():
			return Item{}, ctx.Err()
		}
	}
}

// Pending reports how many items are queued.
func (s *Subscription) Pending() int {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	return len(s.queue) - s.head
}

// Close ends the subscription and frees its queue.
func (s *Subscription) Close() {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	s.closeLocked()
	s.queue, s.head = nil, 0
	s.bus.subs = slices.DeleteFunc(s.bus.subs, func(t *Subscription) bool { return t == s })
}

func (s *Subscription) closeLocked() {
	if !s.closed {
		s.closed = true
		s.wake()
		s.signalRoom()
	}
}

// full reports whether the subscription holds the model's stream back.
// Called with bus.mu held.
func (s *Subscription) full() bool {
	return !s.closed && s.opts.MaxPendingBytes > 0 && s.pending > s.opts.MaxPendingBytes
}

func (s *Subscription) signalRoom() {
	if s.room == nil {
		return
	}
	select {
	case s.room <- struct{}{}:
	default:
	}
}

// itemSize approximates what a queued item holds.
func itemSize(it Item) int {
	if it.Part != nil {
		return 64 + len(it.Part.Text)
	}
	return eventSize(it.Event)
}

func (s *Subscription) wake() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// push queues it, merging adjacent deltas. Called with bus.mu held.
func (s *Subscription) push(it Item) {
	if s.closed {
		return
	}
	if it.Event != nil && len(s.queue) > s.head {
		if last := s.queue[len(s.queue)-1].Event; last != nil {
			if m, ok := s.merger.Merge(last, it.Event); ok {
				s.queue[len(s.queue)-1].Event = m
				s.pending += eventSize(m) - eventSize(last)
				return
			}
		}
	}
	s.merger.Reset()
	s.queue = append(s.queue, it)
	s.pending += itemSize(it)
	s.wake()
}

// waitRoom blocks while a subscription with MaxPendingBytes holds more
// than that, or until ctx is done: the stream it holds back waits for its
// reader. Called without bus.mu.
func (b *bus) waitRoom(ctx context.Context) {
	for {
		var full *Subscription
		b.mu.Lock()
		for _, s := range b.subs {
			if s.full() {
				full = s
				break
			}
		}
		b.mu.Unlock()
		if full == nil {
			return
		}
		select {
		case <-full.room:
		case <-ctx.Done():
			return
		}
	}
}

// Replay buffer bounds: whichever is reached first. A run of text deltas
// counts each delta.
const (
	replayMaxEvents = 8192
	replayMaxBytes  = 8 << 20
)

// bus publishes one session's events. Its mutex also guards the session's
// display list, so that state and events never disagree.
type bus struct {
	mu        sync.Mutex
	sessionID string
	list      protocol.List
	// subs are the open subscriptions, in the order they were made: a
	// slice, since every event and part goes to each of them (a map's
	// iteration costs more than the push to a single subscriber).
	subs []*Subscription

	replay replayBuffer // the most recent events
	closed bool
}

func newBus(sessionID string, snap protocol.Snapshot) *bus {
	b := &bus{sessionID: sessionID}
	b.list.Reset(snap)
	return b
}

// publishLocked assigns ev the next seq, applies it to the list and queues
// it to every subscriber. Called with b.mu held.
func (b *bus) publishLocked(ev protocol.Event) (protocol.Event, error) {
	if h := b.nextHeader(ev.Head().ParentToolID); ev.Head() != h {
		ev = protocol.WithHeader(ev, h)
	}
	ev, err := b.list.Publish(ev)
	if err != nil {
		// The agent built an event that does not fit its own list: a bug.
		return nil, err
	}
	b.remember(ev)
	for _, s := range b.subs {
		s.push(Item{Event: ev})
	}
	return ev, nil
}

// nextHeader is the header of the next event published, of the child
// session that runs in call parentTool ("" for the session's own).
// Called with b.mu held.
func (b *bus) nextHeader(parentTool string) protocol.Header {
	return protocol.Header{SessionID: b.sessionID, Seq: b.list.Seq() + 1, ParentToolID: parentTool}
}

func (b *bus) publishPartLocked(p model.Part, parentTool string) {
	for _, s := range b.subs {
		if s.opts.ModelParts {
			s.push(Item{Part: &p, ParentToolID: parentTool})
		}
	}
}

func (b *bus) remember(ev protocol.Event) { b.replay.add(ev) }

// eventOverhead is what eventSize counts for an event besides its text.
const eventOverhead = 64

// eventSize approximates an event's memory by its variable-length text.
func eventSize(ev protocol.Event) int {
	const overhead = eventOverhead
	switch e := ev.(type) {
	case protocol.AssistantContentUpdated:
		return overhead + len(e.Chunk)
	case protocol.AssistantReasoningUpdated:
		return overhead + len(e.Chunk)
	case protocol.ToolBlockUpdated:
		n := overhead + len(e.ParametersChunk) + len(e.Parameters) + len(e.ResultChunk) + len(e.ShortResult) + len(e.CompactParams) + len(e.OldText)
		if e.Result != nil {
			n += len(*e.Result)
		}
		if f := e.File; f != nil {
			n += len(f.Text) + len(f.Original)
			for _, h := range f.Patch {
				for _, l := range h.Lines {
					n += len(l)
				}
			}
		}
		return n
	case protocol.UserMessageAdded:
		return overhead + messageSize(e.Message)
	case protocol.CompactBlockAdded:
		return overhead + messageSize(e.Message)
	}
	return overhead
}

func messageSize(m protocol.Message) int {
	n := 0
	for _, b := range m.Blocks {
		n += len(b.Content) + len(b.Parameters) + len(b.Result)
	}
	return n
}

func (b *bus) subscribeLocked(opts SubscribeOptions) *Subscription {
	s := &Subscription{bus: b, opts: opts, notify: make(chan struct{}, 1)}
	if opts.MaxPendingBytes > 0 {
		s.room = make(chan struct{}, 1)
	}
	if b.closed {
		s.closed = true
		return s
	}
	b.subs = append(b.subs, s)
	return s
}

// closeAll closes every subscription; queued events stay readable.
func (b *bus) closeAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for _, s := range b.subs {
		s.closeLocked()
	}
}

// Subscribe returns a subscription to the events published from now on.
func (s *Session) Subscribe(opts SubscribeOptions) *Subscription {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	return s.bus.subscribeLocked(opts)
}

// SnapshotAndSubscribe returns the current state and a subscription that
// starts exactly after it: no event is both in the snapshot and delivered,
// and none is missed.
func (s *Session) SnapshotAndSubscribe(opts SubscribeOptions) (protocol.Snapshot, *Subscription) {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	return s.bus.list.Snapshot(), s.bus.subscribeLocked(opts)
}

// SubscribeFrom returns a subscription whose first events are those after
// seq still in the replay buffer, followed by every later event. It fails
// with ErrTooFarBehind when some of them are gone (or seq is in the
// future): pull a snapshot with SnapshotAndSubscribe instead.
func (s *Session) SubscribeFrom(seq int64, opts SubscribeOptions) (*Subscription, error) {
	return s.bus.subscribeFrom(seq, opts)
}

func (b *bus) subscribeFrom(seq int64, opts SubscribeOptions) (*Subscription, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.list.Seq()
	if seq > cur || seq < 0 {
		return nil, ErrTooFarBehind
	}
	var missed []protocol.Event
	if seq < cur {
		// A Mirror's buffer may hold merged events (covering several
		// seqs): one must start right after seq.
		var ok bool
		if missed, ok = b.replay.after(seq); !ok {
			return nil, ErrTooFarBehind
		}
	}
	sub := b.subscribeLocked(opts)
	for _, ev := range missed {
		sub.push(Item{Event: ev})
	}
	return sub, nil
}

// Messages returns a deep copy of the session's view state (messages, run
// state, pending permission requests) and the seq it reflects.
func (s *Session) Messages() protocol.Snapshot {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	return s.bus.list.Snapshot()
}

// Seq returns the seq of the last event published.
func (s *Session) Seq() int64 {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	return s.bus.list.Seq()
}
