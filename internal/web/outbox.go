package web

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sluicehq/sluice/protocol"
)

// outbox is one connection's window-concat coalescer: the queue between the
// JSON-RPC server, which writes messages into it, and the goroutine that
// sends them on the WebSocket (run).
//
// Guarantees:
//   - Every message is sent, once, in the order it was written. Adjacent
//     deltas of one block are merged with a protocol.Merger: their chunks are
//     concatenated in arrival order, never replaced, and the merged event
//     carries firstSeq (DESIGN.md §2 rule 5).
//   - A delta waits at most one window (e.g. 16 ms) after the first
//     message of an idle queue, so that a browser gets one frame per window
//     instead of one per token. Anything that is not a mergeable delta (a
//     response, a structural event) is sent at once, with everything queued
//     before it.
//   - A slow reader holds memory in proportion to the content, not to the
//     number of events: deltas merge while they wait, and past maxBytes
//     queued Write blocks, which backs the server up into the session's
//     subscription queue, which merges too.
//
// Write is called by the server from one goroutine at a time; run from
// another. Both return when the outbox is closed.
type outbox struct {
	window   time.Duration
	maxBytes int
	newTimer func(time.Duration) (<-chan time.Time, func() bool)

	mu      sync.Mutex
	queue   []frame
	merger  protocol.Merger // grows the queue's last frame
	bytes   int             // approximate size of queue
	urgent  bool            // the queue holds a message that must not wait
	closed  bool
	wakeRun chan struct{} // capacity 1: "the queue changed" for run
	wakeW   chan struct{} // capacity 1: "the queue drained" for Write
	done    chan struct{} // closed by close
}

// frame is one queued message: its bytes as written, or a delta event
// decoded so that later deltas can merge into it (raw stays set until a
// merge makes it stale).
type frame struct {
	raw []byte
	ev  protocol.Event
}

func newOutbox(window time.Duration, maxBytes int) *outbox {
	return &outbox{
		window:   window,
		maxBytes: maxBytes,
		newTimer: func(d time.Duration) (<-chan time.Time, func() bool) {
			t := time.NewTimer(d)
			return t.C, t.Stop
		},
		wakeRun: make(chan struct{}, 1),
		wakeW:   make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
}

var errOutboxClosed = errors.New("web: connection closed")

// Write queues msg, merging it into the last queued delta when it can. It
// blocks while the queue is over its byte limit.
func (o *outbox) Write(ctx context.Context, msg []byte) error {
	return o.write(ctx, msg, mergeable(msg))
}

// WriteEvent is Write of msg, the notification of ev, without decoding it
// again.
func (o *outbox) WriteEvent(ctx context.Context, msg []byte, ev protocol.Event) error {
	return o.write(ctx, msg, mergeableEvent(ev))
}

// write queues msg; ev is its event when it is a mergeable delta, else nil.
func (o *outbox) write(ctx context.Context, msg []byte, ev protocol.Event) error {
	for {
		o.mu.Lock()
		if o.closed {
			o.mu.Unlock()
			return errOutboxClosed
		}
		if o.bytes < o.maxBytes || len(o.queue) == 0 {
			break
		}
		o.mu.Unlock()
		select {
		case <-o.wakeW:
		case <-o.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer o.mu.Unlock()
	if ev != nil && len(o.queue) > 0 {
		last := &o.queue[len(o.queue)-1]
		if last.ev != nil {
			if m, ok := o.merger.Merge(last.ev, ev); ok {
				last.ev, last.raw = m, nil
				o.bytes += len(msg)
				return nil
			}
		}
	}
	o.merger.Reset()
	o.queue = append(o.queue, frame{raw: msg, ev: ev})
	o.bytes += len(msg)
	if ev == nil {
		o.urgent = true
	}
	signal(o.wakeRun)
	return nil
}

// mergeableEvent is ev when protocol.Merge can merge it, else nil.
func mergeableEvent(ev protocol.Event) protocol.Event {
	switch ev.(type) {
	case protocol.AssistantContentUpdated, protocol.AssistantReasoningUpdated, protocol.ToolBlockUpdated:
		return ev
	}
	return nil
}

// notePrefix and paramsSep frame a notification as protocol.Encode writes
// it: {"jsonrpc":"2.0","method":"NAME","params":PARAMS}.
var (
	notePrefix = []byte(`{"jsonrpc":"2.0","method":"`)
	paramsSep  = []byte(`","params":`)
)

// mergeable decodes msg when it is a notification that protocol.Merge can
// merge (a text, reasoning or tool delta), and returns nil otherwise. It
// reads the envelope by its bytes instead of decoding it: this runs for
// every delta of every connection. A message in another shape is never
// merged, only sent as it is.
func mergeable(msg []byte) protocol.Event {
	rest, ok := bytes.CutPrefix(msg, notePrefix)
	if !ok {
		return nil
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return nil
	}
	method := string(rest[:end])
	switch method {
	case protocol.MethodAssistantContentUpdated, protocol.MethodAssistantReasoningUpdated, protocol.MethodToolBlockUpdated:
	default:
		return nil
	}
	params, ok := bytes.CutPrefix(rest[end:], paramsSep)
	if !ok || len(params) < 2 || params[len(params)-1] != '}' {
		return nil
	}
	ev, err := protocol.Decode(method, params[:len(params)-1])
	if err != nil {
		return nil
	}
	return ev
}

// take waits until there is something to send and the window allows it,
// then returns the whole queue. The window opens when take first finds
// deltas waiting. It returns false once the outbox is closed or ctx is done.
func (o *outbox) take(ctx context.Context) ([]frame, bool) {
	var timer <-chan time.Time
	var stop func() bool
	expired := false
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	for {
		o.mu.Lock()
		if o.closed {
			o.mu.Unlock()
			return nil, false
		}
		if len(o.queue) > 0 && (o.urgent || o.window <= 0 || expired) {
			q := o.queue
			o.queue, o.bytes, o.urgent = nil, 0, false
			o.merger.Reset()
			o.mu.Unlock()
			signal(o.wakeW)
			return q, true
		}
		open := len(o.queue) > 0 && timer == nil
		o.mu.Unlock()
		if open {
			timer, stop = o.newTimer(o.window)
		}
		select {
		case <-o.wakeRun:
		case <-timer:
			expired = true
		case <-o.done:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// run sends the queued messages with send until the outbox is closed, ctx
// is done or send fails.
func (o *outbox) run(ctx context.Context, send func(context.Context, []byte) error) error {
	for {
		q, ok := o.take(ctx)
		if !ok {
			return errOutboxClosed
		}
		for _, f := range q {
			msg := f.raw
			if msg == nil {
				var err error
				if msg, err = protocol.Encode(f.ev); err != nil {
					return err
				}
			}
			if err := send(ctx, msg); err != nil {
				return err
			}
		}
	}
}

// close drops what is queued and unblocks Write and run.
func (o *outbox) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed {
		o.closed = true
		o.queue = nil
		close(o.done)
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
