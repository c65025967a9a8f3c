package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/session"
	"github.com/sluicehq/sluice/wire"
)

// Command methods forwarded to a session's owner.
const (
	cmdSubmit            = "submit"
	cmdSubmitJob         = "submitJob"
	cmdAbort             = "abort"
	cmdInterrupt         = "interrupt"
	cmdRewind            = "rewind"
	cmdClear             = "clear"
	cmdCompact           = "compact"
	cmdBang              = "bang"
	cmdWait              = "wait"
	cmdSetModel          = "setModel"
	cmdSetThinking       = "setThinkingBudget"
	cmdSetPermissionMode = "setPermissionMode"
	cmdAnswer            = "answerPermission"
	cmdAsk               = "ask"
)

// command is a forwarded command: one request of NATS request/reply.
type command struct {
	// ID is the request id: a retried command is answered from the
	// owner's memory of its first answer.
	ID        string            `json:"id"`
	Method    string            `json:"method"`
	Text      string            `json:"text,omitempty"`
	Force     bool              `json:"force,omitempty"`
	Job       string            `json:"job,omitempty"`
	RequestID string            `json:"requestId,omitempty"`
	Decision  protocol.Decision `json:"decision,omitempty"`
	Images    []agent.Image     `json:"images,omitempty"`
	Tokens    int               `json:"tokens,omitempty"`
}

type commandReply struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *wire.Error     `json:"error,omitempty"`
	// Moved: the node was leaving the session when the command came, and
	// did not run it; the asker tries again (another node may take it).
	Moved bool `json:"moved,omitempty"`
}

// movedReply answers a command that came while its node was leaving.
var movedReply = []byte(`{"moved":true}`)

// repliesKept bounds the owner's memory of answered request ids.
const repliesKept = 1024

// owned is a session this node runs: its agent, its lease, its log writer
// and the goroutines that publish and answer commands (the node renews
// the leases of all its sessions at once: renew.go).
type owned struct {
	h    *handle
	sess *agent.Session
	w    *Writer
	sub  *agent.Subscription
	cmds *nats.Subscription
	// leaving is set when the node stops answering the session's commands.
	leaving atomic.Bool

	ctx       context.Context // ends publishing
	cancel    context.CancelFunc
	published chan struct{} // closed when publish returns
	stopOnce  sync.Once
	// trimmable is the stream position of the last checkpoint: the log
	// before it goes at the next one. Only keep touches it.
	trimmable uint64

	// The publisher's requests to keep: the latest wins.
	keepMu   sync.Mutex
	keepMeta bool          // the run state changed: record it
	keepCP   *checkpointOf // a state to checkpoint
	keepKick chan struct{} // capacity 1: a request is waiting

	mu    sync.Mutex
	lease Lease
	// validUntil is when the lease may have expired, by this node's
	// clock: the time its last acquisition or renewal was asked for plus
	// the TTL, less a margin. Past it nothing more is written.
	validUntil time.Time
	replies    map[string][]byte // request id → answer
	order      []string
	jobs       map[string]session.Job
}

func (o *owned) currentLease() Lease {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lease
}

// ErrLeaseExpired: the node could not renew a session's lease before it
// may have expired; it stopped running the session.
var ErrLeaseExpired = errors.New("cluster: the session's lease could not be renewed in time")

// until is when the lease may have expired.
func (o *owned) until() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.validUntil
}

// valid reports whether the lease is surely still this node's.
func (o *owned) valid() bool { return time.Now().Before(o.until()) }

// validUntil is when a lease asked for at asked may have expired: the
// database starts its TTL after it was asked, so asked plus the TTL is
// never late; the margin is for the two clocks' rates.
func (n *Node) validUntil(asked time.Time) time.Time { return asked.Add(n.validFor()) }

// validFor is how long a lease is surely a node's after it asked for it.
func (n *Node) validFor() time.Duration { return n.cfg.LeaseTTL - n.cfg.LeaseTTL/10 }

// publish appends the agent's events to the log, in order, and applies
// each to the mirror once stored. It has a checkpoint taken every
// CheckpointEvery events and when a run ends, and the run state recorded
// when it changes, by keep: off the path every event takes to the
// clients, which would otherwise wait for those round trips too.
func (o *owned) publish() {
	defer close(o.published)
	kept := make(chan struct{})
	go o.keep(kept)
	defer func() {
		close(o.keepKick)
		<-kept
	}()
	h := o.h
	since := 0
	for {
		ev, err := o.sub.Next(o.ctx)
		if err != nil {
			h.n.log.Debug("publisher ends", "session", h.id, "seq", o.w.Position().Seq, "err", err)
			// The agent closed (its last events are published) or the
			// node stopped running the session.
			if o.ctx.Err() == nil && since > 0 {
				o.request(false, true)
			}
			return
		}
		if !o.valid() {
			go h.lost(o, ErrLeaseExpired)
			return
		}
		if err := o.append(ev); err != nil {
			go h.lost(o, err)
			return
		}
		if err := h.apply(ev); err != nil {
			h.n.log.Error("the mirror refused an event its agent published", "session", h.id, "err", err)
		}
		since++
		meta := false
		if rs, ok := ev.(protocol.RunStateChanged); ok {
			m := h.getMeta()
			m.Running = rs.State == protocol.RunRunning
			h.setMeta(m)
			meta = true
		}
		checkpoint := since >= h.n.cfg.CheckpointEvery || (isIdle(ev) && o.sub.Pending() == 0)
		if checkpoint {
			since = 0
		}
		if meta || checkpoint {
			o.request(meta, checkpoint)
		}
	}
}

// checkpointOf is a state of the mirror and where the log held it.
type checkpointOf struct {
	snap protocol.Snapshot
	at   Position
}

// request asks keep to record the run state, or checkpoint the state the
// log holds now, or both. The state is copied here, where it is the log's
// up to the writer's position; encoding and saving it is keep's.
func (o *owned) request(meta, checkpoint bool) {
	var cp *checkpointOf
	if checkpoint {
		cp = &checkpointOf{snap: o.h.mirror.Messages(), at: o.w.Position()}
	}
	o.keepMu.Lock()
	o.keepMeta = o.keepMeta || meta
	if cp != nil {
		o.keepCP = cp
	}
	o.keepMu.Unlock()
	select {
	case o.keepKick <- struct{}{}:
	default:
	}
}

// keep does what the publisher requests, in order, until the publisher
// closes keepKick (then it does what is left and closes kept). A lost
// lease ends the session here.
func (o *owned) keep(kept chan<- struct{}) {
	defer close(kept)
	h := o.h
	for range o.keepKick {
		for {
			o.keepMu.Lock()
			meta, cp := o.keepMeta, o.keepCP
			o.keepMeta, o.keepCP = false, nil
			o.keepMu.Unlock()
			if !meta && cp == nil {
				break
			}
			var err error
			if meta && o.valid() {
				if err = h.n.putMeta(o.ctx, h.id, h.getMeta(), o.currentLease().Epoch); err != nil {
					h.n.log.Warn("cannot record a session's run state", "session", h.id, "err", err)
				}
			}
			if cp != nil && !errors.Is(err, ErrFenced) {
				err = o.checkpoint(cp)
			}
			if errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrFenced) {
				go h.lost(o, err)
				for range o.keepKick { // the publisher stops soon
				}
				return
			}
		}
	}
}

func isIdle(ev protocol.Event) bool {
	rs, ok := ev.(protocol.RunStateChanged)
	return ok && rs.State == protocol.RunIdle
}

// append stores ev in the log, retrying what may be a passing failure of
// the connection (NATS restarting) for as long as the lease is surely this
// node's: the run then goes on where it was once the log is back.
func (o *owned) append(ev protocol.Event) error {
	for {
		if !o.valid() {
			return ErrLeaseExpired
		}
		ctx, cancel := context.WithDeadline(o.ctx, o.until())
		err := o.w.Append(ctx, ev)
		cancel()
		if err == nil || errors.Is(err, ErrFenced) || o.ctx.Err() != nil {
			return err
		}
		o.h.n.log.Warn("publishing an event failed; retrying", "session", o.h.id, "seq", ev.Head().Seq, "err", err)
		// A retry's pace, not a correctness bound: a stream that answers
		// at once that it cannot take the event (no responders while
		// JetStream restarts) is not asked again in a tight loop.
		select {
		case <-o.ctx.Done():
			return o.ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// checkpoint saves a state of the mirror and trims the log before the
// previous checkpoint.
func (o *owned) checkpoint(cp *checkpointOf) error {
	h := o.h
	snap := cp.snap
	raw, err := json.Marshal(snap)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(o.ctx), 10*time.Second)
	defer cancel()
	if err := h.n.cfg.Leases.SaveCheckpoint(ctx, o.currentLease(), raw, snap.Seq); err != nil {
		if !errors.Is(err, ErrLeaseLost) {
			h.n.log.Warn("cannot checkpoint a session", "session", h.id, "err", err)
		}
		return err
	}
	// The log keeps the events since the checkpoint before this one: a
	// follower a little behind still finds the events after its seq.
	if o.trimmable > 0 {
		if err := h.n.elog.Trim(ctx, h.id, o.trimmable, o.currentLease().Epoch); err != nil {
			h.n.log.Warn("cannot trim a session's log", "session", h.id, "err", err)
		}
	}
	if snap.Seq == cp.at.Seq {
		o.trimmable = cp.at.Stream
	}
	return nil
}

// serve answers a forwarded command. NATS calls it for one message at a
// time, in arrival order, so commands keep their order; waiting for a job
// is answered from a goroutine of its own.
func (o *owned) serve(msg *nats.Msg) {
	if o.leaving.Load() {
		o.respond(msg, "", movedReply)
		return
	}
	var c command
	if err := json.Unmarshal(msg.Data, &c); err != nil {
		o.respond(msg, "", reply(nil, wire.Errorf(wire.CodeInvalidParams, "invalid command: %v", err)))
		return
	}
	if c.Method == cmdWait || c.Method == cmdAsk {
		// Long: answered from a goroutine, later commands go on.
		go o.respond(msg, "", o.exec(c))
		return
	}
	o.mu.Lock()
	answer, ok := o.replies[c.ID]
	o.mu.Unlock()
	if !ok {
		answer = o.exec(c)
	}
	o.respond(msg, c.ID, answer)
}

func (o *owned) respond(msg *nats.Msg, id string, answer []byte) {
	if id != "" {
		o.mu.Lock()
		if _, ok := o.replies[id]; !ok {
			o.replies[id] = answer
			o.order = append(o.order, id)
			if len(o.order) > repliesKept {
				delete(o.replies, o.order[0])
				o.order = o.order[1:]
			}
		}
		o.mu.Unlock()
	}
	if err := msg.Respond(answer); err != nil {
		o.h.n.log.Warn("cannot answer a forwarded command", "session", o.h.id, "err", err)
	}
}

func reply(result any, err error) []byte {
	var r commandReply
	if err != nil {
		var werr *wire.Error
		switch {
		case errors.As(err, &werr):
		case errors.Is(err, agent.ErrClosed):
			werr = wire.Errorf(wire.CodeSessionClosed, "the session is closed")
		default:
			werr = wire.Errorf(wire.CodeRequestFailed, "%v", err)
		}
		r.Error = werr
	}
	if result != nil {
		r.Result, _ = json.Marshal(result)
	}
	b, _ := json.Marshal(r)
	return b
}

// exec runs c on the local agent and returns its encoded answer.
func (o *owned) exec(c command) []byte {
	s := o.sess
	ctx := o.ctx
	switch c.Method {
	case cmdSubmit:
		if c.Force {
			s.Abort("superseded by a new message")
		}
		hd, err := s.Submit(ctx, c.Text)
		if err != nil {
			return reply(nil, err)
		}
		return reply(map[string]string{"messageId": hd.ID()}, nil)
	case cmdAbort:
		s.Abort(c.Text)
		return reply(nil, nil)
	case cmdInterrupt:
		s.Interrupt(c.Text)
		return reply(nil, nil)
	case cmdRewind:
		err := s.Rewind(ctx, c.Text)
		return reply(session.JobResult{Seq: s.Seq()}, err)
	case cmdClear:
		err := s.Clear(ctx)
		return reply(session.JobResult{Seq: s.Seq()}, err)
	case cmdCompact, cmdBang, cmdSubmitJob:
		var (
			job session.Job
			mid string
			err error
		)
		switch c.Method {
		case cmdCompact:
			job, err = session.Local(s).SubmitCompact(ctx)
		case cmdBang:
			job, err = session.Local(s).SubmitBang(ctx, c.Text)
		default:
			mid, job, err = session.Local(s).SubmitMessage(ctx, c.Text, c.Images...)
		}
		if err != nil {
			return reply(nil, err)
		}
		id := uuid.NewString()
		o.mu.Lock()
		o.jobs[id] = job
		o.mu.Unlock()
		return reply(map[string]string{"job": id, "messageId": mid}, nil)
	case cmdWait:
		return o.wait(c)
	case cmdSetModel:
		s.SetModel(c.Text)
		o.recordMeta()
		return reply(nil, nil)
	case cmdSetThinking:
		s.SetThinkingBudget(c.Tokens)
		return reply(nil, nil)
	case cmdSetPermissionMode:
		if err := s.SetPermissionMode(protocol.PermissionMode(c.Text)); err != nil {
			return reply(nil, wire.Errorf(wire.CodeInvalidParams, "invalid params: %v", err))
		}
		o.recordMeta()
		return reply(nil, nil)
	case cmdAnswer:
		return reply(nil, s.AnswerPermission(c.RequestID, c.Decision))
	case cmdAsk:
		answer, err := s.Ask(ctx, c.Text, nil)
		return reply(map[string]string{"answer": answer}, err)
	}
	return reply(nil, wire.Errorf(wire.CodeMethodNotFound, "unknown command %q", c.Method))
}

// wait answers when job c.Job ends, or "pending" after half a lease TTL so
// that the asker, hearing nothing, can tell a dead owner.
func (o *owned) wait(c command) []byte {
	o.mu.Lock()
	job := o.jobs[c.Job]
	o.mu.Unlock()
	if job == nil {
		return reply(nil, wire.Errorf(wire.CodeRequestFailed, "the node that ran this work stopped before it ended"))
	}
	// The asker waits in rounds shorter than the lease. A round's end must
	// not reach the work: a local job's Wait aborts it when its ctx ends.
	t := time.NewTimer(o.h.n.cfg.LeaseTTL / 2)
	defer t.Stop()
	select {
	case <-job.Done():
	case <-t.C:
		return reply(map[string]bool{"pending": true}, nil)
	case <-o.ctx.Done():
	}
	res, err := job.Wait(o.ctx)
	if err != nil && o.ctx.Err() != nil {
		return reply(nil, err)
	}
	o.mu.Lock()
	delete(o.jobs, c.Job)
	o.mu.Unlock()
	// A failed job's result goes with its error: it says how far the work
	// got, and whether it ran at all.
	return reply(res, err)
}

// recordMeta stores the session's description after a change.
func (o *owned) recordMeta() {
	m := o.h.getMeta()
	m.Model, m.PermissionMode = o.sess.Model(), o.sess.PermissionMode()
	o.h.setMeta(m)
	if err := o.h.n.putMeta(o.ctx, o.h.id, m, o.currentLease().Epoch); errors.Is(err, ErrFenced) {
		go o.h.lost(o, err)
	} else if err != nil {
		o.h.n.log.Warn("cannot record a session's description", "session", o.h.id, "err", err)
	}
}

// leave stops answering the session's commands. A command already
// delivered to this node is answered "moved", not dropped: Unsubscribe
// would throw it away unanswered, and its asker would wait out a whole
// request timeout (longer than a lease) before it asked another node.
func (o *owned) leave() {
	o.leaving.Store(true)
	if err := o.cmds.Drain(); err != nil {
		o.cmds.Unsubscribe()
	}
}

// stop ends the session here at once (its lease is someone else's): no
// more is published.
func (o *owned) stop() {
	o.stopOnce.Do(func() {
		o.leave()
		o.cancel()
		o.sess.Close()
		<-o.published
		o.sub.Close()
		o.w.Close()
	})
}

// close ends the session here in order: the agent's run is aborted and
// its last events published, a checkpoint taken, the lease released so
// that another node can take the session at once.
func (o *owned) close() error {
	var err error
	o.stopOnce.Do(func() {
		o.leave()
		err = o.sess.Close()
		<-o.published // drains the agent's last events, then checkpoints
		o.cancel()
		o.sub.Close()
		o.w.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		m := o.h.getMeta()
		m.Running, m.Node = false, ""
		if perr := o.h.n.putMeta(ctx, o.h.id, m, o.currentLease().Epoch); perr != nil {
			o.h.n.log.Warn("cannot record a session's run state", "session", o.h.id, "err", perr)
		}
		if rerr := o.h.n.cfg.Leases.ReleaseLease(ctx, o.currentLease()); rerr != nil && !errors.Is(rerr, ErrLeaseLost) {
			err = errors.Join(err, rerr)
		}
	})
	return err
}
