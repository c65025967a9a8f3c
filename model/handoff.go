package model

import (
	"context"
	"sync"
)

// handoffMax is how many parts the provider's goroutine may queue for the
// attempt, besides the batch the attempt is handling.
const handoffMax = 16

// handoff carries an attempt's parts from the provider's goroutine to the
// attempt's. The attempt takes every part queued when it wakes: a fast
// stream costs a wake-up per batch of parts rather than a channel
// operation (and often a goroutine switch) per part, and a slow one is
// handed over as each part arrives — a part never waits for another.
type handoff struct {
	mu     sync.Mutex
	queue  []item
	closed bool
	ready  chan struct{} // capacity 1: "queue is not empty, or closed"
	room   chan struct{} // capacity 1: "queue has room again"
	done   chan struct{} // closed when the provider's goroutine returns
}

func newHandoff() *handoff {
	return &handoff{ready: make(chan struct{}, 1), room: make(chan struct{}, 1), done: make(chan struct{})}
}

// put queues it, waiting while handoffMax parts are queued. It reports
// false when ctx ended first.
func (h *handoff) put(ctx context.Context, it item) bool {
	for {
		h.mu.Lock()
		if n := len(h.queue); n < handoffMax {
			h.queue = append(h.queue, it)
			h.mu.Unlock()
			if n == 0 {
				// The queue was empty: the attempt has taken everything
				// before and may be waiting. A part added to a queue that
				// holds some is taken with them.
				notify(h.ready)
			}
			return true
		}
		h.mu.Unlock()
		select {
		case <-h.room:
		case <-ctx.Done():
			return false
		}
	}
}

// close says no part follows. Called by the provider's goroutine, once.
func (h *handoff) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	notify(h.ready)
}

// take returns the parts queued, in order, and whether the provider's
// goroutine has closed the handoff: then they are the last. spare is the
// batch take returned before, done with: its array becomes the queue's.
func (h *handoff) take(spare []item) ([]item, bool) {
	clear(spare) // the queue's array must not keep handled parts alive
	h.mu.Lock()
	batch := h.queue
	h.queue = spare[:0]
	closed := h.closed
	h.mu.Unlock()
	notify(h.room)
	return batch, closed
}

// notify sends on a channel of capacity 1 without waiting.
func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
