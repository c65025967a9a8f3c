package tui

import (
	"context"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/protocol"
)

// backend is what the UI asks of a session. *agent.Session provides it
// (agentBackend); the frame tests use a fake that records the calls, and
// drive the UI with scripted events instead of a subscription.
//
// Run, Bang, Compact, Rewind and Clear block until the work ends: the UI
// calls them from Bubble Tea commands, never from Update. The other
// methods return at once.
type backend interface {
	ID() string
	WorkDir() string
	Model() string
	SetModel(name string)
	PermissionMode() protocol.PermissionMode
	// Memory lists the memory files joined to the system prompt (/memory).
	Memory() []agent.MemoryFile
	// Ask answers a side question without entering the session (/btw).
	Ask(ctx context.Context, question string, onText func(chunk string, reset bool)) (string, error)
	Run(ctx context.Context, text string) (agent.Result, error)
	Bang(ctx context.Context, command string) (agent.Result, error)
	Compact(ctx context.Context) error
	Rewind(ctx context.Context, messageID string) error
	Clear(ctx context.Context) error
	Abort(reason string)
	AnswerPermission(requestID string, decision protocol.Decision) error
	Close() error
	// subscribe returns the session's view state (messages, run state,
	// pending permission requests) and its events from there on, with
	// neither a gap nor an overlap.
	subscribe() (protocol.Snapshot, events)
}

// events is a session's ordered event stream (*agent.Subscription).
type events interface {
	Next(ctx context.Context) (protocol.Event, error)
	Pending() int
	Close()
}

type agentBackend struct{ *agent.Session }

func (b agentBackend) subscribe() (protocol.Snapshot, events) {
	snap, sub := b.SnapshotAndSubscribe(agent.SubscribeOptions{})
	return snap, sub
}
