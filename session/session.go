package session

import (
	"context"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/protocol"
)

// Session is a session as a face drives it (see the package documentation
// for its delivery contract).
type Session interface {
	ID() string
	WorkDir() string
	Model() string
	PermissionMode() protocol.PermissionMode
	Tools() []string
	// Owner names the cluster node running the session; "" outside a
	// cluster.
	Owner() string

	// Messages is the view state after every event up to its Seq.
	Messages() protocol.Snapshot
	// Seq is the seq of the last event published.
	Seq() int64
	Running() bool
	// SnapshotAndSubscribe returns the state at some seq N and a
	// subscription delivering the events from N+1 on.
	SnapshotAndSubscribe() (protocol.Snapshot, Subscription)
	// SubscribeFrom returns a subscription delivering the events after seq,
	// or fails when some of them are no longer buffered.
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

// Subscription delivers a session's events in seq order, each once, from
// its start until it or the session is closed (*agent.Subscription is
// one).
type Subscription interface {
	// Next blocks until the next event, ctx is done, or the subscription
	// or session is closed; events queued before a close come first.
	Next(ctx context.Context) (protocol.Event, error)
	// Close ends the subscription and unblocks Next.
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
