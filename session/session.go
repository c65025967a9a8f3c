package session

import (
	"context"
	"time"

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
	// Subagents lists the kinds of subagents the session's Agent tool
	// offers, general-purpose first (none when it has no Agent tool).
	Subagents() []Subagent
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
	// SubmitMessage queues a user message like Submit (without aborting),
	// with images attached (agent.ErrBadImage for one no model takes), and
	// returns its id and its Job, answered when the message's work ended:
	// with MessageID "" when an abort dropped it unsent, and with
	// SteeredInto set when it joined a run already going (steering).
	SubmitMessage(ctx context.Context, text string, images ...agent.Image) (messageID string, job Job, err error)
	Abort(ctx context.Context, reason string) error
	// Interrupt stops the work in progress as Abort does, but the queued
	// work survives: it runs next (agent.Session.Interrupt).
	Interrupt(ctx context.Context, reason string) error
	// Rewind and Clear return the session's seq once their event is
	// published.
	Rewind(ctx context.Context, messageID string) (seq int64, err error)
	Clear(ctx context.Context) (seq int64, err error)
	// SubmitCompact and SubmitBang queue the work; its Job is answered
	// when it ends.
	SubmitCompact(ctx context.Context) (Job, error)
	SubmitBang(ctx context.Context, command string) (Job, error)
	SetModel(ctx context.Context, name string) error
	// SetThinkingBudget sets the extended thinking budget of the next
	// model requests (0: off).
	SetThinkingBudget(ctx context.Context, tokens int) error
	SetPermissionMode(ctx context.Context, mode protocol.PermissionMode) error
	AnswerPermission(ctx context.Context, requestID string, decision protocol.Decision) error
	// Ask answers a side question from the session's context (see
	// agent.Session.Ask); nothing of it is published.
	Ask(ctx context.Context, question string) (string, error)
	// Close stops the session's work in this process.
	Close() error
}

// Subagent is a kind of subagent a session offers, as a face lists it
// (agent.Subagent without what only the agent needs: its prompt and tools).
type Subagent struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Model is "" (or "inherit") for the parent's model, an alias or a
	// model name.
	Model string `json:"model,omitempty"`
}

// Subscription delivers a session's events in seq order, each once, from
// its start until it or the session is closed (*agent.Subscription is
// one).
type Subscription interface {
	// Next blocks until the next event, ctx is done, or the subscription
	// or session is closed; events queued before a close come first.
	Next(ctx context.Context) (protocol.Event, error)
	// Pending reports how many events are queued: that many calls of Next
	// return without waiting (a face batches them into one frame).
	Pending() int
	// Close ends the subscription and unblocks Next.
	Close()
}

// Job is queued work.
type Job interface {
	// Done is closed when the work has ended; Wait then returns at once.
	// For a session of this process it is closed before any event of the
	// work queued after it is published. For a session another node runs,
	// the answer travels apart from the events: Done may close before or
	// after the work's last events arrive.
	Done() <-chan struct{}
	// Wait returns when the work ended: a message's or bang's id ("" for a
	// compaction) and the session's seq after the work's events. When the
	// work failed, the error comes with what the result says of how far it
	// got. For a session of this process, ctx ending first aborts the work
	// (agent.Handle.Wait).
	Wait(ctx context.Context) (JobResult, error)
}

// JobResult is what a Job ended with.
type JobResult struct {
	MessageID string `json:"messageId,omitempty"`
	Seq       int64  `json:"seq"`
	// SteeredInto is, for a message that joined a run going when it was
	// sent, the id of the message that run answered.
	SteeredInto string `json:"steeredInto,omitempty"`
	// Text is a message's final answer (agent.Result.Text).
	Text string `json:"text,omitempty"`
	// StopReason is the last model response's stop reason.
	StopReason string `json:"stopReason,omitempty"`
	// Dropped is set on a message's Job that an abort dropped while it
	// waited in the queue: it never ran, and no event of it was published.
	Dropped bool `json:"dropped,omitempty"`
	// CostUSD estimates the cost of a message's run (agent.Result.CostUSD).
	CostUSD float64 `json:"costUsd,omitempty"`

	// The statistics of a message's run, as agent.Result has them (a
	// result line reports them).
	Turns       int            `json:"turns,omitempty"`
	Usage       protocol.Usage `json:"usage,omitzero"`
	APIDuration time.Duration  `json:"apiDurationNs,omitempty"`
	Denials     []agent.Denial `json:"denials,omitempty"`
	// FallbackModel is the model the run switched to when its own was
	// unavailable; Continued the stop reason of the first response cut
	// and continued automatically.
	FallbackModel string        `json:"fallbackModel,omitempty"`
	Continued     string        `json:"continued,omitempty"`
	Subagents     []SubagentRun `json:"subagents,omitempty"`
}

// SubagentRun is a child session a run's Agent call ran: what a result
// line counts of agent.SubagentRun, its error reduced to whether it
// failed.
type SubagentRun struct {
	Type    string         `json:"type"`
	Model   string         `json:"model,omitempty"`
	Usage   protocol.Usage `json:"usage,omitzero"`
	CostUSD float64        `json:"costUsd,omitempty"`
	Failed  bool           `json:"failed,omitempty"`
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
