package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/session"
	"github.com/sluicehq/sluice/wire"
)

// handle is one session on one node, as the node's clients see it: its
// view state is a mirror of the session's event log, fed by this node's
// publisher when the node runs the session (events reach the mirror only
// once the stream stored them, so no client ever sees an event that a
// failover could lose), and by a follower of the log otherwise. Commands
// run on the local agent when the node owns the session and are
// forwarded to the owner by NATS request/reply otherwise.
type handle struct {
	n       *Node
	id      string
	mirror  *agent.Mirror
	options func(ctx context.Context, workDir string) (agent.Options, error)

	takeMu sync.Mutex // serialises taking the session over

	mu     sync.Mutex
	meta   sessionMeta
	owned  *owned    // set while this node runs the session
	follow *follower // set while this node mirrors the log
	closed bool
}

func (n *Node) newHandle(id string, snap protocol.Snapshot) *handle {
	h := &handle{n: n, id: id, mirror: agent.NewMirror(id, snap)}
	if n.cfg.Options != nil {
		h.options = n.cfg.Options
	}
	return h
}

func (h *handle) setMeta(m sessionMeta) {
	h.mu.Lock()
	h.meta = m
	h.mu.Unlock()
}

func (h *handle) getMeta() sessionMeta {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.meta
}

func (h *handle) owner() *owned {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.owned
}

// catchUp applies the log up to its end now.
func (h *handle) catchUp(ctx context.Context) error {
	for {
		pos, err := h.n.elog.Last(ctx, h.id)
		if err != nil {
			return err
		}
		if h.mirror.Seq() >= pos.Seq {
			return nil
		}
		reached := errors.New("reached")
		err = h.n.elog.Follow(ctx, h.id, h.mirror.Seq(), func(ev protocol.Event) error {
			if err := h.apply(ev); err != nil {
				return err
			}
			if ev.Head().Seq >= pos.Seq {
				return reached
			}
			return nil
		})
		switch {
		case errors.Is(err, reached):
			return nil
		case errors.Is(err, ErrGap) || errors.Is(err, protocol.ErrGap) || errors.Is(err, protocol.ErrInconsistent):
			if err := h.reload(ctx); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// backfill gives a mirror that starts from a checkpoint the events the log
// still holds before it, so that a client resuming from an older seq gets
// the events it missed rather than a snapshot.
func (h *handle) backfill(ctx context.Context) error {
	base := h.mirror.Seq()
	if base == 0 {
		return nil
	}
	if pos, err := h.n.elog.Last(ctx, h.id); err != nil || pos.Seq < base {
		return err // a log behind its checkpoint holds nothing before it
	}
	var evs []protocol.Event
	reached := errors.New("reached")
	err := h.n.elog.Follow(ctx, h.id, -1, func(ev protocol.Event) error {
		if ev.Head().Seq > base {
			return reached
		}
		evs = append(evs, ev)
		if ev.Head().Seq == base {
			return reached
		}
		return nil
	})
	if !errors.Is(err, reached) {
		return err
	}
	if len(evs) > 0 && evs[len(evs)-1].Head().Seq == base {
		return h.mirror.Backfill(evs)
	}
	return nil
}

// apply feeds the mirror one event of the log.
func (h *handle) apply(ev protocol.Event) error {
	if err := h.mirror.Apply(ev); err != nil && !errors.Is(err, protocol.ErrStale) {
		return err
	}
	return nil
}

// reload resets the mirror from the latest checkpoint, after a gap.
func (h *handle) reload(ctx context.Context) error {
	snap, err := h.n.checkpoint(ctx, h.id)
	if err != nil {
		return err
	}
	if snap.Seq <= h.mirror.Seq() {
		return fmt.Errorf("cluster: the log of %s has a gap after %d that no checkpoint covers", h.id, h.mirror.Seq())
	}
	h.n.log.Warn("mirror reset from a checkpoint", "session", h.id, "from", h.mirror.Seq(), "to", snap.Seq)
	h.mirror.Reset(snap)
	return nil
}

// takeOrFollow runs the session here if it can, mirrors it otherwise.
func (h *handle) takeOrFollow(ctx context.Context) error {
	if took, err := h.tryTakeErr(ctx); took || err != nil {
		return err
	}
	h.startFollow()
	return nil
}

// tryTake takes the session over if its lease is free or expired and this
// node can run it; it reports whether this node runs it now.
func (h *handle) tryTake(ctx context.Context) bool {
	took, err := h.tryTakeErr(ctx)
	if err != nil {
		h.n.log.Warn("cannot take a session over", "session", h.id, "err", err)
	}
	return took
}

func (h *handle) tryTakeErr(ctx context.Context) (bool, error) {
	h.takeMu.Lock()
	defer h.takeMu.Unlock()
	if h.owner() != nil {
		return true, nil
	}
	m := h.getMeta()
	if h.options == nil || !visible(m.WorkDir) {
		return false, nil
	}
	asked := time.Now()
	lease, err := h.n.cfg.Leases.AcquireLease(ctx, h.id, h.n.cfg.NodeID, h.n.cfg.LeaseTTL)
	if errors.Is(err, ErrLeaseHeld) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := h.take(ctx, lease, asked, m); err != nil {
		h.n.cfg.Leases.ReleaseLease(context.WithoutCancel(ctx), lease)
		h.startFollow()
		return false, err
	}
	return true, nil
}

// take runs the session here under lease (asked for at asked): the log is
// fenced, so that the last owner cannot append after what this node reads,
// then applied to its end; the agent continues from that state (ending the
// interrupted run, if the last owner stopped in one), with its records
// fenced by the lease too, and this node publishes from there on.
func (h *handle) take(ctx context.Context, lease Lease, asked time.Time, m sessionMeta) error {
	h.stopFollow()
	// Not even a fence once the lease may have expired: this node may
	// have been paused since it took it.
	if !time.Now().Before(h.n.validUntil(asked)) {
		return ErrLeaseExpired
	}
	if _, err := h.n.elog.Fence(ctx, h.id, lease.Epoch); err != nil {
		return err
	}
	if err := h.catchUp(ctx); err != nil {
		return err
	}
	opts, err := h.options(ctx, m.WorkDir)
	if err != nil {
		return err
	}
	opts.WorkDir = m.WorkDir
	if opts.Model == "" {
		opts.Model = m.Model
	}
	if m.PermissionMode != "" {
		opts.PermissionMode = m.PermissionMode
	}
	if opts.Store != nil {
		opts.Store = h.n.cfg.Leases.Fence(opts.Store, lease)
	}
	sess, err := agent.Continue(opts, h.id, h.mirror.Messages(), takeoverCause(m.Node))
	if err != nil {
		return err
	}
	if err := h.own(ctx, lease, asked, sess); err != nil {
		sess.Close()
		return err
	}
	h.n.log.Info("session taken over", "session", h.id, "epoch", lease.Epoch, "seq", h.mirror.Seq())
	return nil
}

// takeoverCause says why a run this node takes over was cut: its node
// stopped holding the lease. Which of the reasons it was only that node
// knew, and it may not write once the lease may be another's.
func takeoverCause(node string) string {
	if node == "" {
		node = "that ran it"
	}
	return fmt.Sprintf("the session's lease was lost: node %s stopped holding it (it stopped, was paused past the lease TTL, or could not reach the session store)", node)
}

// own starts publishing sess's events (from the mirror's seq on) and
// answering the session's commands, under lease, asked for at asked.
func (h *handle) own(ctx context.Context, lease Lease, asked time.Time, sess *agent.Session) error {
	w, err := h.n.elog.Writer(ctx, h.id, lease.Epoch)
	if err != nil {
		return err
	}
	if w.Position().Seq != h.mirror.Seq() {
		w.Close()
		return fmt.Errorf("%w: %s: log at %d, state at %d", ErrFenced, h.id, w.Position().Seq, h.mirror.Seq())
	}
	sub, err := sess.SubscribeFrom(h.mirror.Seq(), agent.SubscribeOptions{})
	if err != nil {
		w.Close()
		return err
	}
	octx, cancel := context.WithCancel(h.n.ctx)
	o := &owned{h: h, sess: sess, lease: lease, validUntil: h.n.validUntil(asked), w: w, sub: sub, ctx: octx, cancel: cancel,
		published: make(chan struct{}), keepKick: make(chan struct{}, 1), replies: map[string][]byte{}, jobs: map[string]session.Job{}}
	o.cmds, err = h.n.cfg.NATS.Subscribe(commandSubject(h.id), o.serve)
	if err != nil {
		cancel()
		sub.Close()
		w.Close()
		return err
	}
	m := sessionMeta{WorkDir: sess.WorkDir(), Model: sess.Model(), PermissionMode: sess.PermissionMode(),
		Tools: sess.Tools(), Subagents: session.Local(sess).Subagents(), Node: h.n.cfg.NodeID, Running: h.mirror.Running()}
	h.setMeta(m)
	if err := h.n.putMeta(ctx, h.id, m, lease.Epoch); err != nil {
		o.leave()
		cancel()
		sub.Close()
		w.Close()
		return err
	}
	h.mu.Lock()
	if h.closed {
		// Closed while it was being taken over: give it back.
		h.mu.Unlock()
		o.leave()
		cancel()
		sub.Close()
		w.Close()
		return errors.New("cluster: the session was closed")
	}
	h.owned = o
	h.mu.Unlock()
	go o.publish()
	return nil
}

func commandSubject(id string) string { return "sluice.cmd." + id }

// follower mirrors the log while another node runs the session.
type follower struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (h *handle) startFollow() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.follow != nil || h.closed {
		return
	}
	ctx, cancel := context.WithCancel(h.n.ctx)
	f := &follower{cancel: cancel, done: make(chan struct{})}
	h.follow = f
	go func() {
		defer close(f.done)
		for ctx.Err() == nil {
			h.n.log.Debug("following a session's log", "session", h.id, "after", h.mirror.Seq())
			err := h.n.elog.Follow(ctx, h.id, h.mirror.Seq(), h.apply)
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, ErrGap) || errors.Is(err, protocol.ErrGap) || errors.Is(err, protocol.ErrInconsistent) {
				err = h.reload(ctx)
			}
			if err != nil {
				h.n.log.Warn("following a session's log", "session", h.id, "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(500 * time.Millisecond): // a retry's pace, not a correctness bound
				}
			}
		}
	}()
}

func (h *handle) stopFollow() {
	h.mu.Lock()
	f := h.follow
	h.follow = nil
	h.mu.Unlock()
	if f != nil {
		f.cancel()
		<-f.done
	}
}

// lost makes the node stop running the session (its lease or its log was
// taken over, or it could not renew the lease in time) and mirror it
// instead. A run it stopped is ended by whichever node takes the session
// over next (this one included: see Node.sweep).
func (h *handle) lost(o *owned, err error) {
	h.mu.Lock()
	if h.owned != o {
		h.mu.Unlock()
		return
	}
	h.owned = nil
	closed := h.closed
	h.mu.Unlock()
	h.n.log.Warn("stopped running a session: its lease may be another node's", "session", h.id, "err", err)
	o.stop()
	h.n.log.Info("no longer writes the session", "session", h.id)
	if !closed {
		h.startFollow()
	}
}

// Close stops the session's work on this node: the agent's run is aborted
// (and published), the lease released.
func (h *handle) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	o := h.owned
	h.owned = nil
	h.mu.Unlock()
	h.stopFollow()
	var err error
	if o != nil {
		err = o.close()
	}
	h.mirror.Close()
	h.n.mu.Lock()
	if h.n.handles[h.id] == h {
		delete(h.n.handles, h.id)
	}
	h.n.mu.Unlock()
	return err
}

// session.Session.

func (h *handle) ID() string { return h.id }

func (h *handle) WorkDir() string { return h.getMeta().WorkDir }

func (h *handle) Model() string {
	if o := h.owner(); o != nil {
		return o.sess.Model()
	}
	return h.getMeta().Model
}

func (h *handle) PermissionMode() protocol.PermissionMode {
	if o := h.owner(); o != nil {
		return o.sess.PermissionMode()
	}
	return h.getMeta().PermissionMode
}

func (h *handle) Tools() []string { return h.getMeta().Tools }

func (h *handle) Subagents() []session.Subagent { return h.getMeta().Subagents }

func (h *handle) Owner() string {
	if h.owner() != nil {
		return h.n.cfg.NodeID
	}
	return h.n.Owner(h.n.ctx, h.id)
}

func (h *handle) Messages() protocol.Snapshot { return h.mirror.Messages() }
func (h *handle) Seq() int64                  { return h.mirror.Seq() }
func (h *handle) Running() bool               { return h.mirror.Running() }

func (h *handle) SnapshotAndSubscribe() (protocol.Snapshot, session.Subscription) {
	snap, sub := h.mirror.SnapshotAndSubscribe(agent.SubscribeOptions{})
	return snap, sub
}

func (h *handle) SubscribeFrom(seq int64) (session.Subscription, error) {
	sub, err := h.mirror.SubscribeFrom(seq, agent.SubscribeOptions{})
	if err != nil {
		return nil, err
	}
	return sub, nil
}

func (h *handle) Submit(ctx context.Context, text string, force bool) (string, error) {
	var res struct {
		MessageID string `json:"messageId"`
	}
	err := h.call(ctx, command{Method: cmdSubmit, Text: text, Force: force}, &res)
	return res.MessageID, err
}

func (h *handle) SubmitMessage(ctx context.Context, text string, images ...agent.Image) (string, session.Job, error) {
	var res struct {
		Job       string `json:"job"`
		MessageID string `json:"messageId"`
	}
	if err := h.call(ctx, command{Method: cmdSubmitJob, Text: text, Images: images}, &res); err != nil {
		return "", nil, err
	}
	return res.MessageID, newRemoteJob(h, res.Job), nil
}

func (h *handle) Abort(ctx context.Context, reason string) error {
	return h.call(ctx, command{Method: cmdAbort, Text: reason}, nil)
}

func (h *handle) Interrupt(ctx context.Context, reason string) error {
	return h.call(ctx, command{Method: cmdInterrupt, Text: reason}, nil)
}

func (h *handle) Rewind(ctx context.Context, messageID string) (int64, error) {
	var res session.JobResult
	err := h.call(ctx, command{Method: cmdRewind, Text: messageID}, &res)
	return res.Seq, err
}

func (h *handle) Clear(ctx context.Context) (int64, error) {
	var res session.JobResult
	err := h.call(ctx, command{Method: cmdClear}, &res)
	return res.Seq, err
}

func (h *handle) SubmitCompact(ctx context.Context) (session.Job, error) {
	return h.submitJob(ctx, command{Method: cmdCompact})
}

func (h *handle) SubmitBang(ctx context.Context, cmd string) (session.Job, error) {
	return h.submitJob(ctx, command{Method: cmdBang, Text: cmd})
}

func (h *handle) submitJob(ctx context.Context, c command) (session.Job, error) {
	var res struct {
		Job string `json:"job"`
	}
	if err := h.call(ctx, c, &res); err != nil {
		return nil, err
	}
	return newRemoteJob(h, res.Job), nil
}

func (h *handle) SetModel(ctx context.Context, name string) error {
	return h.call(ctx, command{Method: cmdSetModel, Text: name}, nil)
}

func (h *handle) SetThinkingBudget(ctx context.Context, tokens int) error {
	return h.call(ctx, command{Method: cmdSetThinking, Tokens: tokens}, nil)
}

func (h *handle) SetPermissionMode(ctx context.Context, mode protocol.PermissionMode) error {
	return h.call(ctx, command{Method: cmdSetPermissionMode, Text: string(mode)}, nil)
}

func (h *handle) AnswerPermission(ctx context.Context, requestID string, decision protocol.Decision) error {
	return h.call(ctx, command{Method: cmdAnswer, RequestID: requestID, Decision: decision}, nil)
}

func (h *handle) Ask(ctx context.Context, question string) (string, error) {
	var res struct {
		Answer string `json:"answer"`
	}
	err := h.call(ctx, command{Method: cmdAsk, Text: question}, &res)
	return res.Answer, err
}

// remoteJob waits for work queued on whichever node ran it. Its first
// Wait or Done starts one wait that both share: the owner forgets the
// work once it answered its end.
type remoteJob struct {
	h    *handle
	id   string
	once sync.Once
	done chan struct{}
	res  session.JobResult
	err  error
}

func newRemoteJob(h *handle, id string) *remoteJob {
	return &remoteJob{h: h, id: id, done: make(chan struct{})}
}

// start waits for the work's end until the handle's node stops.
func (j *remoteJob) start() {
	j.once.Do(func() {
		go func() {
			j.res, j.err = j.wait(j.h.n.ctx)
			close(j.done)
		}()
	})
}

func (j *remoteJob) Done() <-chan struct{} {
	j.start()
	return j.done
}

func (j *remoteJob) Wait(ctx context.Context) (session.JobResult, error) {
	j.start()
	select {
	case <-j.done:
		return j.res, j.err
	case <-ctx.Done():
		return session.JobResult{}, ctx.Err()
	}
}

func (j *remoteJob) wait(ctx context.Context) (session.JobResult, error) {
	for {
		var res struct {
			session.JobResult
			Pending bool `json:"pending"`
		}
		if err := j.h.call(ctx, command{Method: cmdWait, Job: j.id}, &res); err != nil {
			return res.JobResult, err
		}
		if !res.Pending {
			return res.JobResult, nil
		}
	}
}

// call runs c on the node that runs the session: here, or by NATS
// request/reply. Its request id makes a retry (after a lost reply) answered
// once. With no owner alive it takes the session over when it can, and
// otherwise waits for the lease of a dead owner to expire and a node to
// take it, up to the lease TTL and some.
func (h *handle) call(ctx context.Context, c command, out any) error {
	c.ID = uuid.NewString()
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(h.n.cfg.LeaseTTL + 5*time.Second)
	for {
		var raw []byte
		if o := h.owner(); o != nil {
			raw = o.exec(c)
		} else {
			rctx, cancel := context.WithTimeout(ctx, requestTimeout(c, h.n.cfg.LeaseTTL))
			msg, err := h.n.cfg.NATS.RequestWithContext(rctx, commandSubject(h.id), data)
			cancel()
			switch {
			case err == nil:
				raw = msg.Data
			case ctx.Err() != nil:
				return ctx.Err()
			case time.Now().After(deadline):
				return wire.Errorf(wire.CodeRequestFailed, "no node runs session %s: %v", h.id, err)
			case errors.Is(err, nats.ErrNoResponders):
				if h.tryTake(ctx) {
					continue
				}
				select { // a dead owner's lease has not expired yet
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(200 * time.Millisecond):
				}
				continue
			case c.Method == cmdAsk:
				// Not worth asking the model twice: the owner may be
				// answering still.
				return wire.Errorf(wire.CodeRequestFailed, "no answer from the node running session %s: %v", h.id, err)
			default:
				continue // timed out: the same request id again
			}
		}
		var r commandReply
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("cluster: a command's reply: %w", err)
		}
		if r.Moved { // its node was leaving: as if nobody had answered
			if time.Now().After(deadline) {
				return wire.Errorf(wire.CodeRequestFailed, "no node runs session %s: its node left it", h.id)
			}
			if !h.tryTake(ctx) {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(200 * time.Millisecond):
				}
			}
			continue
		}
		if out != nil && len(r.Result) > 0 {
			// With an error too: a failed job's result says how far it got.
			if err := json.Unmarshal(r.Result, out); err != nil && r.Error == nil {
				return err
			}
		}
		if r.Error != nil {
			return r.Error
		}
		return nil
	}
}

// requestTimeout bounds one try of a forwarded command. A wait is answered
// "pending" by the owner after half a lease TTL, so that the death of the
// owner during the work is noticed.
func requestTimeout(c command, ttl time.Duration) time.Duration {
	switch c.Method {
	case cmdWait:
		return ttl
	case cmdAsk:
		return 5 * time.Minute
	}
	return 30 * time.Second
}
