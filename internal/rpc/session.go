package rpc

import (
	"context"
	"errors"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/protocol"
	"github.com/sluicehq/sluice/wire"
)

// Session is a session as connections drive it: a view state to subscribe
// to and pull snapshots from, and the commands of the protocol. A session
// running in this process is one (an *agent.Session, wrapped); a cluster
// node's Host gives others, whose agent may run on another node. Methods
// are safe for concurrent use. Errors may be *wire.Error, answered as they
// are.
type Session interface {
	ID() string
	WorkDir() string
	Model() string
	PermissionMode() protocol.PermissionMode
	Tools() []string
	// Owner names the cluster node running the session; "" outside a
	// cluster.
	Owner() string

	Messages() protocol.Snapshot
	Seq() int64
	Running() bool
	// SnapshotAndSubscribe and SubscribeFrom are agent.Session's.
	SnapshotAndSubscribe() (protocol.Snapshot, Subscription)
	SubscribeFrom(seq int64) (Subscription, error)

	// Submit queues a user message (after aborting the work in progress
	// when force is set) and returns its id.
	Submit(ctx context.Context, text string, force bool) (messageID string, err error)
	Abort(ctx context.Context, reason string) error
	// Rewind and Clear return the session's seq once their event is
	// published.
	Rewind(ctx context.Context, messageID string) (seq int64, err error)
	Clear(ctx context.Context) (seq int64, err error)
	// SubmitCompact and SubmitBang queue the work; its Job is answered
	// when it ends.
	SubmitCompact(ctx context.Context) (Job, error)
	SubmitBang(ctx context.Context, command string) (Job, error)
	SetModel(ctx context.Context, name string) error
	SetPermissionMode(ctx context.Context, mode protocol.PermissionMode) error
	AnswerPermission(ctx context.Context, requestID string, decision protocol.Decision) error
	// Ask answers a side question from the session's context (see
	// agent.Session.Ask); nothing of it is published.
	Ask(ctx context.Context, question string) (string, error)
	// Close stops the session's work in this process.
	Close() error
}

// Subscription delivers a session's events in seq order (see
// agent.Subscription, which is one).
type Subscription interface {
	Next(ctx context.Context) (protocol.Event, error)
	Close()
}

// Job is queued work.
type Job interface {
	// Wait returns when the work ended: a bang's message id ("" for a
	// compaction) and the session's seq after the work's events.
	Wait(ctx context.Context) (JobResult, error)
}

// JobResult is what a Job ended with.
type JobResult struct {
	MessageID string `json:"messageId,omitempty"`
	Seq       int64  `json:"seq"`
}

// Host runs the sessions of a cluster node: a server with one serves
// sessions whose agent may run on any node. Its methods are safe for
// concurrent use.
type Host interface {
	// New starts a session on this node with opts.
	New(ctx context.Context, opts agent.Options) (Session, error)
	// Open returns stored session id, wherever it runs. options gives the
	// agent options for the session's working directory, should this node
	// have to run it. It fails with an error wrapping store.ErrNotFound
	// when no node knows the session.
	Open(ctx context.Context, id string, options func(workDir string) (agent.Options, error)) (Session, error)
	// Owner names the node running session id, "" when none does.
	Owner(ctx context.Context, id string) string
}

// Local wraps a session running in this process.
func Local(s *agent.Session) Session { return localSession{Session: s} }

// localSession is a session of this process. Its subscriptions hold the
// session's model stream back past maxPending queued bytes
// (Options.MaxQueuedBytes; 0: never).
type localSession struct {
	*agent.Session
	maxPending int
}

func (s *Server) local(as *agent.Session) Session {
	return localSession{Session: as, maxPending: s.opts.MaxQueuedBytes}
}

func (l localSession) Owner() string { return "" }

func (l localSession) SnapshotAndSubscribe() (protocol.Snapshot, Subscription) {
	snap, sub := l.Session.SnapshotAndSubscribe(agent.SubscribeOptions{MaxPendingBytes: l.maxPending})
	return snap, sub
}

func (l localSession) SubscribeFrom(seq int64) (Subscription, error) {
	sub, err := l.Session.SubscribeFrom(seq, agent.SubscribeOptions{MaxPendingBytes: l.maxPending})
	if err != nil {
		return nil, err
	}
	return sub, nil
}

func (l localSession) Submit(ctx context.Context, text string, force bool) (string, error) {
	if force {
		l.Session.Abort("superseded by a new message")
	}
	h, err := l.Session.Submit(ctx, text)
	if err != nil {
		return "", err
	}
	return h.ID(), nil
}

func (l localSession) Abort(_ context.Context, reason string) error {
	l.Session.Abort(reason)
	return nil
}

func (l localSession) Rewind(ctx context.Context, messageID string) (int64, error) {
	err := l.Session.Rewind(ctx, messageID)
	return l.Session.Seq(), err
}

func (l localSession) Clear(ctx context.Context) (int64, error) {
	err := l.Session.Clear(ctx)
	return l.Session.Seq(), err
}

func (l localSession) SubmitCompact(ctx context.Context) (Job, error) {
	h, err := l.Session.SubmitCompact(ctx)
	if err != nil {
		return nil, err
	}
	return localJob{l.Session, h}, nil
}

func (l localSession) SubmitBang(ctx context.Context, command string) (Job, error) {
	h, err := l.Session.SubmitBang(ctx, command)
	if err != nil {
		return nil, err
	}
	return localJob{l.Session, h}, nil
}

func (l localSession) SetModel(_ context.Context, name string) error {
	l.Session.SetModel(name)
	return nil
}

func (l localSession) SetPermissionMode(_ context.Context, mode protocol.PermissionMode) error {
	return l.Session.SetPermissionMode(mode)
}

func (l localSession) AnswerPermission(_ context.Context, requestID string, decision protocol.Decision) error {
	return l.Session.AnswerPermission(requestID, decision)
}

func (l localSession) Ask(ctx context.Context, question string) (string, error) {
	return l.Session.Ask(ctx, question, nil)
}

type localJob struct {
	s *agent.Session
	h *agent.Handle
}

func (j localJob) Wait(ctx context.Context) (JobResult, error) {
	res, err := j.h.Wait(ctx)
	if err != nil {
		return JobResult{}, err
	}
	return JobResult{MessageID: res.MessageID, Seq: j.s.Seq()}, nil
}

// isClosed reports whether err says the session is closed.
func isClosed(err error) bool {
	var werr *wire.Error
	if errors.As(err, &werr) {
		return werr.Code == wire.CodeSessionClosed
	}
	return errors.Is(err, agent.ErrClosed)
}
