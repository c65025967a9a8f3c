package rpc

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/session"
	"github.com/sluicehq/sluice/wire"
)

// connection is one peer: a reader (the goroutine of ServeConn), one
// writer goroutine, and one pump goroutine per attached session.
type connection struct {
	s    *Server
	conn wire.Conn
	// ctx is ServeConn's: it bounds reads and writes. readCtx ends the
	// reading (and the pumps) when the peer is done; writes still drain.
	ctx        context.Context
	readCtx    context.Context
	stopRead   context.CancelFunc
	out        chan outgoing // to the writer; unbuffered, so a blocked peer holds events in their queues
	stop       chan struct{} // closed when the connection ends: senders give up
	stopOnce   sync.Once
	writerDone chan struct{}
	writeErr   error // set by the writer before it closes writerDone

	mu       sync.Mutex // guards attached and closing
	attached map[string]*attachment
	closing  bool // serve is tearing down: attach no more
}

func newConnection(ctx context.Context, s *Server, conn wire.Conn) *connection {
	readCtx, stopRead := context.WithCancel(ctx)
	return &connection{
		s: s, conn: conn, ctx: ctx, readCtx: readCtx, stopRead: stopRead,
		out: make(chan outgoing), stop: make(chan struct{}), writerDone: make(chan struct{}),
		attached: map[string]*attachment{},
	}
}

func (c *connection) serve() error {
	go c.writer()
	readDone := make(chan error, 1)
	go func() { readDone <- c.readLoop() }()
	var err error
	select {
	case err = <-readDone:
	case <-c.ctx.Done():
		// A read blocked in the underlying reader (a terminal's or a
		// pipe's stdin) may not observe ctx: close the connection, which
		// unblocks it where it can, and do not wait for it.
		c.conn.Close()
		err = c.ctx.Err()
	}
	c.stopRead()
	c.mu.Lock()
	c.closing = true
	atts := make([]*attachment, 0, len(c.attached))
	for _, a := range c.attached {
		atts = append(atts, a)
	}
	c.attached = map[string]*attachment{}
	c.mu.Unlock()
	for _, a := range atts {
		a.detach()
	}
	c.end()
	select {
	case <-c.writerDone:
	case <-c.ctx.Done(): // the writer may be blocked on a peer that reads nothing
	}
	c.conn.Close()
	if err == nil {
		err = c.writeErr
	}
	return err
}

// end makes every sender give up and the writer stop once it has written
// what it holds.
func (c *connection) end() { c.stopOnce.Do(func() { close(c.stop) }) }

func (c *connection) readLoop() error {
	for {
		msg, err := c.conn.Read(c.readCtx)
		if c.readCtx.Err() != nil {
			return c.readCtx.Err()
		}
		switch {
		case err == nil:
			c.handle(msg)
		case errors.Is(err, wire.ErrMessageTooLarge):
			c.s.log.Warn("skipped an oversized message", "err", err)
			resp, _ := encodeResponse(nullID, nil, &wire.Error{Code: wire.CodeInvalidRequest, Message: "invalid request: " + err.Error()})
			c.send(resp)
		case errors.Is(err, io.EOF):
			return nil
		default:
			select {
			case <-c.stop: // the writer failed and closed the connection
				return c.writeErrWait()
			default:
			}
			if c.readCtx.Err() != nil {
				return c.readCtx.Err()
			}
			return err
		}
	}
}

func (c *connection) writeErrWait() error {
	<-c.writerDone
	return c.writeErr
}

// writer is the connection's one writer. When a write fails it ends the
// connection and closes it, which unblocks the reader.
func (c *connection) writer() {
	defer close(c.writerDone)
	for {
		select {
		case o := <-c.out:
			if err := c.write(o); err != nil {
				c.s.log.Warn("write to the host failed; closing the connection", "err", err)
				c.writeErr = err
				c.end()
				c.conn.Close()
				return
			}
		case <-c.stop:
			return
		}
	}
}

// outgoing is a message for the writer: an event's notification carries
// the event it encodes.
type outgoing struct {
	msg []byte
	ev  protocol.Event
}

// EventWriter is a wire.Conn that also takes an event's notification with
// the event itself, so that a face merging deltas before it sends them
// (the web face's outbox) does not decode what the server has just
// encoded, for every delta of every connection. msg is the connection's to
// keep: the server does not reuse it.
type EventWriter interface {
	WriteEvent(ctx context.Context, msg []byte, ev protocol.Event) error
}

func (c *connection) write(o outgoing) error {
	if ew, ok := c.conn.(EventWriter); ok && o.ev != nil {
		return ew.WriteEvent(c.ctx, o.msg, o.ev)
	}
	return c.conn.Write(c.ctx, o.msg)
}

// send hands msg to the writer. It reports false when the connection has
// ended (msg is dropped). A nil msg is a notification's non-answer.
func (c *connection) send(msg []byte) bool {
	if msg == nil {
		return true
	}
	select {
	case c.out <- outgoing{msg: msg}:
		return true
	case <-c.stop:
		return false
	}
}

// reply answers req (nothing for a notification).
func (c *connection) reply(req *Request, result any, rerr *wire.Error) {
	c.send(c.encodeReply(req, result, rerr))
}

func (c *connection) handle(msg []byte) {
	req, id, rerr := ParseRequest(msg)
	switch {
	case rerr != nil:
		resp, _ := encodeResponse(id, nil, rerr)
		c.send(resp)
		return
	case req == nil:
		c.s.log.Debug("ignored a response from the host")
		return
	}
	h, ok := handlers[req.Method]
	if !ok {
		c.reply(req, nil, wire.Errorf(wire.CodeMethodNotFound, "method not found: %q", req.Method))
		return
	}
	h(c, req)
}

// attachment resolves a request's sessionId to this connection's
// attachment; an empty id means the only one.
func (c *connection) attachment(id string) (*attachment, *wire.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id == "" {
		if len(c.attached) == 1 {
			for _, a := range c.attached {
				return a, nil
			}
		}
		if len(c.attached) == 0 {
			return nil, wire.Errorf(wire.CodeSessionNotFound, "no session is attached to this connection: call initialize first")
		}
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: sessionId is required when several sessions are attached")
	}
	a, ok := c.attached[id]
	if !ok {
		return nil, wire.Errorf(wire.CodeSessionNotFound, "session %q is not attached to this connection: call initialize with its sessionId", id)
	}
	return a, nil
}

// attach subscribes the connection to e's session and answers req, before
// any of the session's events, with the session's description and either a
// snapshot or the confirmation that the events after lastSeq follow. An
// earlier attachment to the same session is replaced.
func (c *connection) attach(req *Request, e *entry, lastSeq *int64, epoch string) {
	id := e.sess.ID()
	c.mu.Lock()
	old := c.attached[id]
	delete(c.attached, id)
	c.mu.Unlock()
	if old != nil {
		old.detach()
	}

	res := c.s.describe(e)
	var sub session.Subscription
	if lastSeq != nil && (epoch == "" || epoch == e.epoch) {
		if s, err := e.sess.SubscribeFrom(*lastSeq); err == nil {
			sub, res.Seq, res.Resumed = s, *lastSeq, true
		}
	}
	if sub == nil {
		snap, s := e.sess.SnapshotAndSubscribe()
		sub, res.Snapshot, res.Seq = s, &snap, snap.Seq
		// Busy and the pending requests are the snapshot's own, so they
		// describe the same moment as its messages (older hosts read them
		// here rather than in the snapshot).
		res.Busy, res.PendingPermissions = snap.Running, snap.PendingPermissions
	} else {
		// Resumed: the events after lastSeq carry every change since.
		res.Busy = e.sess.Running()
	}

	ctx, cancel := context.WithCancel(c.readCtx)
	a := &attachment{c: c, sess: e.sess, epoch: e.epoch, ctx: ctx, cancel: cancel, done: make(chan struct{}), sub: sub, sent: res.Seq}
	// The answer goes out before the pump starts: the events follow it.
	c.reply(req, res, nil)
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		cancel()
		sub.Close()
		return
	}
	c.attached[id] = a
	c.mu.Unlock()
	go a.pump()
}

// detach removes the attachment to session id, if any.
func (c *connection) detach(id string) bool {
	c.mu.Lock()
	a := c.attached[id]
	delete(c.attached, id)
	c.mu.Unlock()
	if a == nil {
		return false
	}
	a.detach()
	return true
}

// attachment is one connection's subscription to one session, and the
// goroutine (pump) that writes its events.
type attachment struct {
	c      *connection
	sess   session.Session
	epoch  string
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the pump has returned

	// mu is held while a message of this attachment is handed to the
	// writer, so that responses ordered against its events (snapshots,
	// barriers) cannot interleave with them.
	mu      sync.Mutex
	sub     session.Subscription
	sent    int64     // seq of the last event (or snapshot) handed to the writer
	waiting []barrier // answers to send once sent >= their seq
	ended   bool      // the pump has returned
}

// barrier is an answer held until the events up to seq are written; run
// sends it (with a.mu held).
type barrier struct {
	seq int64
	run func()
}

// pump writes the subscription's events in order. It ends when the
// attachment is detached, the connection ends, or the session closes
// (after its last events).
func (a *attachment) pump() {
	defer close(a.done)
	for {
		a.mu.Lock()
		sub := a.sub
		a.mu.Unlock()
		ev, err := sub.Next(a.ctx)
		a.mu.Lock()
		if sub != a.sub {
			// Replaced by a snapshot while waiting: what the old
			// subscription gave is in the snapshot or in the new one.
			a.mu.Unlock()
			continue
		}
		if err != nil {
			a.endLocked()
			a.mu.Unlock()
			return
		}
		msg, err := protocol.Encode(ev)
		if err != nil {
			// wire.Events are plain values: this is a bug, and skipping the
			// event would corrupt the host's list; end the attachment.
			a.c.s.log.Error("cannot encode an event; detaching", "session", a.sess.ID(), "err", err)
			a.endLocked()
			a.mu.Unlock()
			return
		}
		if !a.sendLocked(msg, ev) {
			a.endLocked()
			a.mu.Unlock()
			return
		}
		a.sent = ev.Head().Seq
		a.releaseLocked()
		a.mu.Unlock()
	}
}

// sendLocked hands msg, the notification of ev, to the writer unless the
// attachment or connection has ended.
func (a *attachment) sendLocked(msg []byte, ev protocol.Event) bool {
	if msg == nil {
		return true
	}
	if a.ctx.Err() != nil {
		return false
	}
	select {
	case a.c.out <- outgoing{msg: msg, ev: ev}:
		return true
	case <-a.c.stop:
		return false
	case <-a.ctx.Done():
		return false
	}
}

// releaseLocked sends the held answers whose events have been written.
func (a *attachment) releaseLocked() {
	if len(a.waiting) == 0 {
		return
	}
	var due []barrier
	kept := a.waiting[:0]
	for _, b := range a.waiting {
		if b.seq <= a.sent {
			due = append(due, b)
		} else {
			kept = append(kept, b)
		}
	}
	clear(a.waiting[len(kept):])
	a.waiting = kept
	for _, b := range due {
		b.run()
	}
}

// endLocked marks the pump gone and sends the held answers: no more events
// will come before them.
func (a *attachment) endLocked() {
	a.ended = true
	waiting := a.waiting
	a.waiting = nil
	for _, b := range waiting {
		b.run()
	}
}

// respondAfter sends msg once the events up to seq have been written.
func (a *attachment) respondAfter(seq int64, msg []byte) {
	if msg == nil {
		return
	}
	a.after(seq, func() { a.c.send(msg) })
}

// after runs f (with a.mu held) once the events up to seq have been
// written, or the pump has ended.
func (a *attachment) after(seq int64, f func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended || a.sent >= seq {
		f()
		return
	}
	a.waiting = append(a.waiting, barrier{seq: seq, run: f})
}

// resync answers with a snapshot that the following events continue
// exactly: the subscription is replaced by one that starts at the
// snapshot, and nothing of the old one is written after the answer.
func (a *attachment) resync(answer func(snap protocol.Snapshot) []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.resyncLocked(answer)
}

// resyncAfter is resync once the events up to seq (those of the operation
// the snapshot answers) have been written, so that the host sees them
// before the answer whatever the timing.
func (a *attachment) resyncAfter(seq int64, answer func(snap protocol.Snapshot) []byte) {
	a.after(seq, func() { a.resyncLocked(answer) })
}

func (a *attachment) resyncLocked(answer func(snap protocol.Snapshot) []byte) {
	if a.ended {
		a.c.send(answer(a.sess.Messages()))
		return
	}
	snap, sub := a.sess.SnapshotAndSubscribe()
	old := a.sub
	a.sub = sub
	old.Close() // wakes the pump if it waits on it
	a.c.send(answer(snap))
	a.sent = snap.Seq
	a.releaseLocked()
}

// detach stops the pump and closes the subscription.
func (a *attachment) detach() {
	a.cancel()
	<-a.done
	a.mu.Lock()
	a.sub.Close()
	a.mu.Unlock()
}

// isEnded reports whether the pump has returned (the session closed).
func (a *attachment) isEnded() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ended
}
