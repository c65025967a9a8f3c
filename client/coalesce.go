package client

import (
	"sync"
	"time"

	"github.com/sluicehq/sluice/protocol"
)

// Coalescer batches a session's updates in time windows, for a host that
// forwards them to a UI that should not render per chunk (a webview at
// 16 ms, a chat at 500 ms). It is window-concat, never last-value-wins
// (seed 000, scenario 9):
//
//   - the first delta after a quiet period is emitted at once and opens a
//     window; the deltas that arrive within it are queued in arrival order,
//     adjacent deltas of one block concatenated (protocol.Merge), and
//     emitted as one batch when the window closes; while deltas keep
//     coming, a batch goes out once per window;
//   - any other event (a message added, a block or tool ending, a turn
//     ending, a rewind, ...) first flushes the queued deltas, in the same
//     batch, ahead of it, and closes the window;
//   - a snapshot drops the queued deltas (the snapshot holds them) and is
//     emitted at once (scenario 10: no delta is applied twice on top of a
//     snapshot).
//
// Deltas of different blocks that interleave (two tools running in
// parallel) stay separate events of the batch, in order, so that every
// event of a batch still covers a contiguous range of seq.
//
// Emit is called with the Coalescer's lock held, one batch at a time in
// order; it must not call the Coalescer. Push, Flush and Stop are safe for
// concurrent use.
type Coalescer struct {
	window    time.Duration
	emit      func([]Update)
	afterFunc func(time.Duration, func()) func() bool

	mu      sync.Mutex
	pending []Update
	merger  protocol.Merger // grows the last pending delta
	open    bool            // a window is open
	stop    func() bool     // stops the window's timer
	gen     int             // the current window; a timer of an older one is ignored
	stopped bool
}

// NewCoalescer returns a coalescer that emits batches through emit, with
// windows of the given length.
func NewCoalescer(window time.Duration, emit func([]Update)) *Coalescer {
	return newCoalescer(window, emit, func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop })
}

// newCoalescer takes the timer so that tests can fire windows themselves.
func newCoalescer(window time.Duration, emit func([]Update), afterFunc func(time.Duration, func()) func() bool) *Coalescer {
	return &Coalescer{window: window, emit: emit, afterFunc: afterFunc}
}

// isDelta reports whether ev is a delta that a window may hold back.
func isDelta(ev protocol.Event) bool {
	switch e := ev.(type) {
	case protocol.AssistantContentUpdated:
		return e.Stage == protocol.StageStreaming
	case protocol.AssistantReasoningUpdated:
		return e.Stage == protocol.StageStreaming
	case protocol.ToolBlockUpdated:
		return e.Stage == protocol.StageStreaming || e.Stage == protocol.StageRunning
	}
	return false
}

// Push adds an update.
func (c *Coalescer) Push(u Update) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	switch {
	case u.Snapshot != nil:
		clear(c.pending)
		c.pending = c.pending[:0]
		c.merger.Reset()
		c.closeLocked()
		c.emit([]Update{u})
	case isDelta(u.Event):
		if !c.open {
			c.open = true
			c.armLocked()
			c.emit([]Update{u})
			return
		}
		if n := len(c.pending); n > 0 {
			if m, ok := c.merger.Merge(c.pending[n-1].Event, u.Event); ok {
				c.pending[n-1].Event = m
				return
			}
		}
		c.merger.Reset()
		c.pending = append(c.pending, u)
	default:
		batch := append(c.takeLocked(), u)
		c.closeLocked()
		c.emit(batch)
	}
}

// Flush emits the queued deltas now.
func (c *Coalescer) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if batch := c.takeLocked(); len(batch) > 0 {
		c.emit(batch)
	}
}

// Stop flushes the queued deltas and stops the timer; later pushes are
// ignored.
func (c *Coalescer) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if batch := c.takeLocked(); len(batch) > 0 {
		c.emit(batch)
	}
	c.closeLocked()
	c.stopped = true
}

func (c *Coalescer) takeLocked() []Update {
	if len(c.pending) == 0 {
		return nil
	}
	batch := c.pending
	c.pending = nil
	c.merger.Reset()
	return batch
}

func (c *Coalescer) armLocked() {
	c.gen++
	gen := c.gen
	c.stop = c.afterFunc(c.window, func() { c.fire(gen) })
}

func (c *Coalescer) closeLocked() {
	if c.open && c.stop != nil {
		c.stop()
	}
	c.open, c.stop = false, nil
	c.gen++
}

// fire ends window gen: the queued deltas go out and, if there were any,
// the next window starts, so that a steady stream is emitted once per
// window.
func (c *Coalescer) fire(gen int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen || c.stopped {
		return
	}
	batch := c.takeLocked()
	if len(batch) == 0 {
		c.open, c.stop = false, nil
		return
	}
	c.emit(batch)
	c.armLocked()
}
