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
// Rewind and Clear block until the work ends: the UI calls them from
// Bubble Tea commands, never from Update. The other methods return at
// once; Submit, SubmitBang and SubmitCompact queue the work in the order
// they are called (a message sent while a run is going joins it at its
// next model request) and return a handle to wait on.
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
	Submit(ctx context.Context, text string) (work, error)
	SubmitBang(ctx context.Context, command string) (work, error)
	SubmitCompact(ctx context.Context) (work, error)
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

// work is a piece of work sent to the session (*agent.Handle).
type work interface {
	// Done is closed when the work has ended.
	Done() <-chan struct{}
	// Wait waits for the end and returns the result; at once after Done.
	Wait(ctx context.Context) (agent.Result, error)
}

// events is a session's ordered event stream (*agent.Subscription).
type events interface {
	Next(ctx context.Context) (protocol.Event, error)
	Pending() int
	Close()
}

type agentBackend struct{ *agent.Session }

func (b agentBackend) Submit(ctx context.Context, text string) (work, error) {
	return handle(b.Session.Submit(ctx, text))
}

func (b agentBackend) SubmitBang(ctx context.Context, command string) (work, error) {
	return handle(b.Session.SubmitBang(ctx, command))
}

func (b agentBackend) SubmitCompact(ctx context.Context) (work, error) {
	return handle(b.Session.SubmitCompact(ctx))
}

// handle keeps a nil *agent.Handle from becoming a non-nil work.
func handle(h *agent.Handle, err error) (work, error) {
	if err != nil {
		return nil, err
	}
	return h, nil
}

func (b agentBackend) subscribe() (protocol.Snapshot, events) {
	snap, sub := b.SnapshotAndSubscribe(agent.SubscribeOptions{})
	return snap, sub
}
